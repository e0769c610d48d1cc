"""`tooluse bench toolsearch`: how well tool search finds BFCL's functions, how fast, at what cost.

The toolbox is every distinct function of BFCL (all single-turn categories and
the multi-turn APIs, deduplicated by the name tools show). Each ``simple_*``
and ``multiple`` entry's question is a query and its ground-truth function the
target. For each toolbox size the queries are searched (top 10) and the rank
of the target is written, with the search's latency; sizes above the catalogue
are padded with generated tools. Token rows compare what the model is sent with
every schema against what it is sent with search: the search tool, the prompt
line that says more tools exist, and the definitions one search returns (the
mean over the queries).
"""

from __future__ import annotations

import functools
import json
import random
import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .._exceptions import ToolDefinitionError
from .._tokens import count_tokens
from ..conventions import JsonConvention, get_convention
from ..run._searching import more_tools_note, render_for, schema_tokens, search_tool_name
from ..search import ToolIndex, ToolSearch
from ..tools import Tool, Toolbox
from ._task import BenchDataError, Call, OracleTurn, Setup
from .bfcl._single_turn import (
    SINGLE_TURN_CATEGORIES,
    BfclTask,
    bfcl_tool,
    data_dir,
    load_tasks,
    read_jsonl,
    shown_name,
)

__all__ = [
    "QUERY_CATEGORIES",
    "SEARCH_NAMES",
    "Query",
    "ToolSearchReport",
    "bfcl_catalogue",
    "bfcl_queries",
    "generated_tools",
    "pad_setup",
    "run_toolsearch_bench",
    "searching_oracle",
]

QUERY_CATEGORIES = ("simple_python", "simple_java", "simple_javascript", "multiple")
TOKEN_SIZES = (100, 1_000)
_RANK_DEPTH = 10


@dataclass(frozen=True, slots=True)
class Query:
    query_id: str
    text: str
    target: str


def _question(task: BfclTask) -> str:
    messages = task.entry.question[0] if task.entry.question else []
    users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
    return users[-1] if users else ""


def bfcl_catalogue(directory: Path | None = None) -> list[Tool]:
    """Every distinct BFCL function as a tool, first description kept, in file order."""
    where = directory or data_dir()
    tools: dict[str, Tool] = {}
    for category in SINGLE_TURN_CATEGORIES:
        for task in load_tasks(category, where):
            if not isinstance(task, BfclTask):
                continue
            for function in task.entry.functions:
                name = shown_name(str(function.get("name", "")))
                if name and name not in tools:
                    tools[name] = bfcl_tool(function, task.language)
    docs = where / "multi_turn_func_doc"
    for path in sorted(docs.glob("*.json")) if docs.is_dir() else ():
        for _, item in read_jsonl(path):
            if isinstance(item, BenchDataError) or "name" not in item:
                continue
            name = shown_name(str(item["name"]))
            if name not in tools:
                tools[name] = bfcl_tool(item, "python")
    if not tools:
        raise BenchDataError(f"no BFCL functions found under {where}")
    return list(tools.values())


def bfcl_queries(directory: Path | None = None) -> list[Query]:
    """Each simple_* and multiple entry: its question, and its ground-truth function."""
    where = directory or data_dir()
    queries: list[Query] = []
    for category in QUERY_CATEGORIES:
        for task in load_tasks(category, where):
            if not isinstance(task, BfclTask) or not task.entry.answer:
                continue
            target = shown_name(next(iter(task.entry.answer[0])))
            text = _question(task)
            if text:
                queries.append(Query(task.id, text, target))
    return queries


_VERBS = [
    "get",
    "list",
    "find",
    "create",
    "update",
    "delete",
    "compute",
    "calculate",
    "fetch",
    "search",
    "send",
    "check",
    "book",
]
_NOUNS = [
    "account",
    "order",
    "invoice",
    "user",
    "file",
    "folder",
    "ticket",
    "flight",
    "hotel",
    "weather",
    "stock",
    "price",
    "record",
    "report",
    "event",
    "message",
    "playlist",
    "recipe",
    "vehicle",
    "route",
    "score",
    "team",
    "player",
    "city",
    "country",
    "movie",
    "song",
    "review",
    "payment",
    "balance",
    "address",
    "contact",
    "device",
    "sensor",
    "image",
    "document",
    "task",
    "project",
    "meeting",
    "calendar",
    "reminder",
    "note",
    "product",
    "inventory",
]
_QUALIFIERS = [
    "daily",
    "monthly",
    "current",
    "recent",
    "total",
    "average",
    "remote",
    "local",
    "shared",
    "public",
]


def generated_tools(count: int, seed: int = 0, *, taken: Iterable[str] = ()) -> list[Tool]:
    """`count` plausible tools (verb, nouns, a description and parameters), for padding."""
    rng = random.Random(seed)
    used = set(taken)
    out: list[Tool] = []
    n = 0
    while len(out) < count:
        n += 1
        verb, a, b = rng.choice(_VERBS), rng.choice(_NOUNS), rng.choice(_NOUNS)
        name = f"{verb}_{a}_{b}_{n}"
        if name in used:
            continue
        used.add(name)
        qualifier = rng.choice(_QUALIFIERS)
        params = {
            f"{a}_id": {"type": "string", "description": f"identifier of the {a}"},
            "kind": {
                "type": "string",
                "description": f"which {b} to use",
                "enum": rng.sample(_QUALIFIERS, 3),
            },
        }
        out.append(
            Tool.from_schema(
                name,
                f"{verb.capitalize()} the {qualifier} {b} of a {a}.",
                {"type": "object", "properties": params, "required": [f"{a}_id"]},
                _echo,
            )
        )
    return out


async def _echo(**arguments: Any) -> dict[str, Any]:
    return arguments


def _toolbox(catalogue: Sequence[Tool], size: int, targets: set[str], seed: int) -> list[Tool]:
    """`size` tools: the targets first, the rest of the catalogue sampled, padding beyond it."""
    if size >= len(catalogue):
        padding = generated_tools(size - len(catalogue), seed, taken=(t.name for t in catalogue))
        return [*catalogue, *padding]
    rng = random.Random(seed)
    first = [t for t in catalogue if t.name in targets]
    rest = [t for t in catalogue if t.name not in targets]
    rng.shuffle(rest)
    rng.shuffle(first)
    return [*first, *rest][:size]


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass(frozen=True, slots=True)
class SizeFigures:
    toolbox_size: int
    queries: int
    recall_1: float
    recall_3: float
    recall_5: float
    mrr: float
    p50_ms: float
    p95_ms: float


@dataclass(frozen=True, slots=True)
class TokenFigures:
    toolbox_size: int
    all_schemas: int
    with_search: int

    @property
    def share(self) -> float:
        return self.with_search / self.all_schemas if self.all_schemas else float("nan")


@dataclass(slots=True)
class ToolSearchReport:
    catalogue: int
    sizes: list[SizeFigures]
    tokens: list[TokenFigures]

    def to_dict(self) -> dict[str, Any]:
        return {
            "catalogue": self.catalogue,
            "sizes": [asdict(s) for s in self.sizes],
            "tokens": [{**asdict(t), "share": round(t.share, 4)} for t in self.tokens],
        }


def _figures(size: int, rows: Sequence[dict[str, Any]]) -> SizeFigures:
    ranks = [r["rank"] for r in rows]
    n = len(ranks) or 1

    def recall(k: int) -> float:
        return sum(1 for r in ranks if r is not None and r <= k) / n

    latencies = [r["latency_ms"] for r in rows]
    return SizeFigures(
        size,
        len(rows),
        recall(1),
        recall(3),
        recall(5),
        sum(1 / r for r in ranks if r is not None) / n,
        _percentile(latencies, 0.5),
        _percentile(latencies, 0.95),
    )


def _token_figures(tools: Sequence[Tool], queries: Sequence[Query]) -> TokenFigures:
    box = Toolbox(tools)
    convention = JsonConvention()
    run = ToolSearch().open(
        box, render=render_for(convention), name=search_tool_name(convention, box)
    )
    fixed = schema_tokens(Toolbox([run.tool]))
    fixed += count_tokens(more_tools_note(convention, run))
    sample = [q for q in queries if q.target in box][:100] or list(queries[:100])
    results = [count_tokens(run.search(q.text, 5)) for q in sample]
    mean_result = round(statistics.fmean(results)) if results else 0
    return TokenFigures(len(box), schema_tokens(box), fixed + mean_result)


def run_toolsearch_bench(
    out: Path,
    *,
    sizes: Sequence[int | None] = (None, 10_000),
    seed: int = 0,
    directory: Path | None = None,
) -> ToolSearchReport:
    """Measure search over BFCL; write ``results.jsonl`` and ``summary.md`` into `out`.

    `sizes` are the toolbox sizes queries run at (None: the whole catalogue).
    """
    catalogue = bfcl_catalogue(directory)
    queries = bfcl_queries(directory)
    targets = {q.target for q in queries}
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    figures: list[SizeFigures] = []
    for wanted in sizes:
        size = len(catalogue) if wanted is None else wanted
        tools = _toolbox(catalogue, size, targets, seed)
        index = ToolIndex(tools)
        names = {t.name for t in tools}
        mine: list[dict[str, Any]] = []
        for q in queries:
            if q.target not in names:
                continue
            start = time.perf_counter()
            hits = index.search(q.text, _RANK_DEPTH)
            latency = (time.perf_counter() - start) * 1000
            found = [h.name for h in hits]
            rank = found.index(q.target) + 1 if q.target in found else None
            mine.append(
                {
                    "kind": "query",
                    "query_id": q.query_id,
                    "target": q.target,
                    "rank": rank,
                    "latency_ms": round(latency, 4),
                    "toolbox_size": len(tools),
                }
            )
        index.close()
        rows.extend(mine)
        figures.append(_figures(len(tools), mine))
    token_rows: list[TokenFigures] = []
    for size in sorted({*TOKEN_SIZES, len(catalogue)}):
        tools = _toolbox(catalogue, size, targets, seed)
        figure = _token_figures(tools, queries)
        token_rows.append(figure)
        rows.append(
            {
                "kind": "tokens",
                "toolbox_size": figure.toolbox_size,
                "all_schemas": figure.all_schemas,
                "with_search": figure.with_search,
            }
        )
    with (out / "results.jsonl").open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    report = ToolSearchReport(len(catalogue), figures, token_rows)
    (out / "summary.md").write_text(summary_markdown(report), encoding="utf-8")
    return report


def summary_markdown(report: ToolSearchReport) -> str:
    lines = [
        "# Tool search over BFCL",
        "",
        f"Catalogue: {report.catalogue:,} distinct BFCL functions. Queries: the questions of "
        f"{', '.join(QUERY_CATEGORIES)}; target: the ground-truth function. BM25 over SQLite "
        "FTS5 (names, descriptions, parameter names and descriptions, enum values); latency "
        "is one search of the top 10, in process.",
        "",
        "| toolbox | queries | Recall@1 | Recall@3 | Recall@5 | MRR | p50 ms | p95 ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in report.sizes:
        lines.append(
            f"| {s.toolbox_size:,} | {s.queries:,} | {s.recall_1:.3f} | {s.recall_3:.3f} | "
            f"{s.recall_5:.3f} | {s.mrr:.3f} | {s.p50_ms:.2f} | {s.p95_ms:.2f} |"
        )
    lines += [
        "",
        "Prompt tokens (o200k): every JSON schema, against the search tool, the prompt line "
        "saying more tools exist and one search's results (top 5, mean over the queries).",
        "",
        "| toolbox | all schemas | with search | share |",
        "|---:|---:|---:|---:|",
    ]
    for t in report.tokens:
        lines.append(
            f"| {t.toolbox_size:,} | {t.all_schemas:,} | {t.with_search:,} | {t.share:.1%} |"
        )
    return "\n".join(lines) + "\n"


# --- padded BFCL runs (`tooluse bench bfcl --tool-search … --toolbox-size N`) ----------

#: Names a search tool may take; never given to a distractor, never scored as a call.
SEARCH_NAMES = frozenset({"tool_search", "search", "toolbox_search"})


@functools.cache
def _cached_catalogue(directory: str | None) -> tuple[Tool, ...]:
    return tuple(bfcl_catalogue(Path(directory) if directory else None))


def pad_setup(setup: Setup, size: int, *, key: str, directory: Path | None = None) -> None:
    """Pad each turn's tools to `size` with BFCL functions the turn lacks, shuffled in.

    The distractors are drawn with `key` (the entry's id) as the seed, so every
    convention and model sees the same toolbox for an entry.
    """
    catalogue = _cached_catalogue(str(directory) if directory else None)
    for turn in setup.turns:
        own = list(turn.tools)
        if len(own) >= size:
            continue
        rng = random.Random(f"pad:{key}")
        pool = [
            t
            for t in catalogue
            if t.name not in turn.tools
            and t.name not in SEARCH_NAMES
            # The sandbox serves no private name (``__get_all_user_list``) to scripts.
            and not t.name.startswith("_")
        ]
        rng.shuffle(pool)
        box = Toolbox(own)
        for candidate in pool:
            if len(box) >= size:
                break
            try:
                box.add(candidate)
            except ToolDefinitionError:
                continue  # its Python name clashes with one of the entry's tools
        ordered = list(box)
        rng.shuffle(ordered)
        turn.tools = Toolbox(ordered)


def searching_oracle(
    turns: Sequence[OracleTurn], convention: str, tools: Toolbox
) -> list[OracleTurn]:
    """The oracle's turns with a search first: one query per tool the truth calls, by name.

    JSON and text send the searches as a step of their own before the calls; a
    script prints ``tools.search(...)`` for each before calling.
    """
    name = search_tool_name(get_convention(convention), tools)
    out: list[OracleTurn] = []
    for turn in turns:
        needed = list(dict.fromkeys(c.tool for step in turn.steps for c in step))
        if not needed:
            out.append(turn)
            continue
        searches = [Call(name, {"query": tool}) for tool in needed]
        script = turn.script
        if script is not None:
            head, _, rest = script.partition("\n")
            lines = "".join(f"print(tools.{name}(query={tool!r}))\n" for tool in needed)
            script = f"{head}\n{lines}{rest}"
        out.append(OracleTurn(steps=[searches, *turn.steps], script=script, answer=turn.answer))
    return out
