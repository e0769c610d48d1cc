"""BFCL single-turn suites: every offline category, through the agent loop, scored by `check_ast`.

Function descriptions become raw-schema tools whose callables echo their
arguments back (BFCL's own stubs do the same), so what is measured is whether
the right calls with the right arguments reach the runtime. The calls the run
executed are decoded into BFCL's ``[{name: {param: value}}]`` form and judged
against the ground truth; the irrelevance categories pass when no call is made,
live_relevance when at least one is.

The data is read from the installed ``bfcl-eval`` wheel (``pip install --no-deps
bfcl-eval``), or from a directory with the same layout.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import Message, RunResult, Tool, Toolbox
from ..._written import json_lines
from .._metrics import call_metrics
from .._oracle import statements_script
from .._task import BenchDataError, Call, OracleTurn, Score, Setup, Task, Turn
from ._ast_check import check_ast, normalize_string
from ._values import java_source, js_source

__all__ = [
    "AST_CATEGORIES",
    "PAPER_CATEGORIES",
    "SINGLE_TURN_CATEGORIES",
    "BfclTask",
    "BrokenTask",
    "bfcl_parameters",
    "bfcl_tasks",
    "data_dir",
    "paper_subset",
    "proportional_counts",
    "read_jsonl",
    "read_lines",
]

AST_CATEGORIES = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
NO_CALL_CATEGORIES = ("irrelevance", "live_irrelevance")
SINGLE_TURN_CATEGORIES = (*AST_CATEGORIES, *NO_CALL_CATEGORIES, "live_relevance")

PAPER_CATEGORIES = tuple(c for c in AST_CATEGORIES if c not in {"simple_java", "simple_javascript"})
"""The eight Python AST categories the 309-entry subset is drawn from."""
PAPER_SUBSET_SIZE = 309

_VERSION = "BFCL_v4"
# The names the search tool takes (see `tooluse.run._searching.search_tool_name`).
_SEARCH_NAMES = frozenset({"tool_search", "search", "toolbox_search"})
_NO_CALL_ANSWER = "None of the available functions fits this request, so I made no call."


def data_dir() -> Path:
    """The data directory of the installed bfcl-eval wheel."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise BenchDataError(
            "bfcl-eval is not installed: pip install --no-deps bfcl-eval==2026.3.23"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def read_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value or the reason the line is not JSON) for each non-empty line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BenchDataError(f"cannot read {path}: {exc.strerror or exc}") from exc
    for number, item in json_lines(text):
        if isinstance(item, json.JSONDecodeError):
            yield number, BenchDataError(f"{path.name}:{number}: not JSON ({item.msg})")
        else:
            yield number, item


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any] | BenchDataError]]:
    """(line number, object or the reason the line is unusable) for each non-empty line.

    BFCL names its JSON Lines files ``.json``.
    """
    for number, item in read_lines(path):
        if isinstance(item, BenchDataError):
            yield number, item
            continue
        if not isinstance(item, dict) or "id" not in item:
            yield number, BenchDataError(f"{path.name}:{number}: not an entry with an id")
            continue
        yield number, item


# --- function descriptions to JSON Schema --------------------------------------------

_PYTHON_TYPES = {
    "string": "string",
    "integer": "integer",
    "float": "number",
    "number": "number",
    "double": "number",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "tuple": "array",
    "dict": "object",
    "object": "object",
}
_KEPT = ("description", "enum", "default", "minimum", "maximum", "minItems", "maxItems")


def language_of(category: str) -> str:
    if "javascript" in category:
        return "javascript"
    if "java" in category:
        return "java"
    return "python"


def _python_property(spec: Mapping[str, Any]) -> dict[str, Any]:
    # BFCL reads an undeclared or unknown type (and "any") as a string.
    kind = _PYTHON_TYPES.get(str(spec.get("type", "")), "string")
    out: dict[str, Any] = {"type": kind}
    out.update({k: spec[k] for k in _KEPT if k in spec})
    items = spec.get("items")
    if kind == "array" and isinstance(items, Mapping):
        out["items"] = _python_property(items)
        if "enum" in out and "enum" not in out["items"]:
            # BFCL puts an array's allowed item values on the array itself.
            out["items"]["enum"] = out.pop("enum")
    properties = spec.get("properties")
    if kind == "object" and isinstance(properties, Mapping):
        out["properties"] = {k: _python_property(v) for k, v in properties.items()}
        required = [r for r in spec.get("required", []) if r in properties]
        if required:
            out["required"] = required
        # BFCL's nested properties are often examples ("replace with actual
        # parameter names"); its checker judges nested keys only by the answer.
        out["additionalProperties"] = True
    return out


def _source_text_property(spec: Mapping[str, Any], language: str) -> dict[str, Any]:
    kind = str(spec.get("type") or "any")
    label = "Java" if language == "java" else "JavaScript"
    note = f"A {label} value of type {kind}, written as {label} source text."
    items = spec.get("items")
    if isinstance(items, Mapping) and items.get("type"):
        note += f" Its elements are of type {items['type']}."
    properties = spec.get("properties")
    if isinstance(properties, Mapping) and properties:
        note += f" Its entries: {json.dumps(properties, ensure_ascii=False)}."
    description = str(spec.get("description", "")).strip()
    out: dict[str, Any] = {"type": "string", "description": f"{description} {note}".strip()}
    if "enum" in spec:
        out["enum"] = spec["enum"]
    return out


def bfcl_parameters(parameters: Mapping[str, Any], language: str = "python") -> dict[str, Any]:
    """A BFCL ``parameters`` block as a JSON Schema object.

    Python types map to their JSON Schema names (``dict`` → object, ``float`` →
    number, ``tuple`` → array, ``any`` → string, as BFCL shows them to models);
    Java and JavaScript parameters are strings holding source text.
    """
    properties: Mapping[str, Any] = parameters.get("properties", {}) or {}
    if language == "python":
        converted = {k: _python_property(v) for k, v in properties.items()}
    else:
        converted = {k: _source_text_property(v, language) for k, v in properties.items()}
    schema: dict[str, Any] = {"type": "object", "properties": converted}
    required = [r for r in parameters.get("required", []) if r in properties]
    if required:
        schema["required"] = required
    return schema


async def _echo(**arguments: Any) -> dict[str, Any]:
    # Async so that a run needs no worker thread: the echo does no work.
    return arguments


def shown_name(name: str) -> str:
    """A function's name as tools show it: ``.`` becomes ``_``.

    Provider APIs refuse dots in tool names (BFCL renames them the same way
    for such models), and the code convention's stubs could not hold them.
    """
    return name.replace(".", "_")


def bfcl_tool(function: Mapping[str, Any], language: str) -> Tool:
    description = str(function.get("description", ""))
    if language != "python":
        label = "Java 8" if language == "java" else "JavaScript"
        description += f" (A {label} function: every argument is {label} source text.)"
    return Tool.from_schema(
        shown_name(str(function["name"])),
        description,
        bfcl_parameters(function.get("parameters", {}), language),
        _echo,
    )


# --- ground truth as calls -------------------------------------------------------


def _first_option(
    options: Sequence[Any], spec: Mapping[str, Any] | None = None
) -> tuple[bool, Any]:
    """The first option that may not be left out; one the declared enum allows if any does.

    An option that differs from an allowed value only in what BFCL's string
    comparison ignores is written as the allowed value.
    """
    candidates = [option for option in options if option != ""]
    if not candidates:
        return False, None
    allowed = spec.get("enum") if spec else None
    if isinstance(allowed, list) and allowed:
        for option in candidates:
            if option in allowed:
                return True, option
        for option in candidates:
            if isinstance(option, str):
                for value in allowed:
                    if isinstance(value, str) and normalize_string(value) == normalize_string(
                        option
                    ):
                        return True, value
    return True, candidates[0]


def _chosen_dict(option: Mapping[str, Any]) -> dict[str, Any]:
    chosen: dict[str, Any] = {}
    for key, choices in option.items():
        if not isinstance(choices, list):
            chosen[key] = choices
            continue
        if "" in choices:
            continue
        found, value = _first_option(choices)
        if found:
            chosen[key] = value
    return chosen


def _chosen_value(option: Any, spec: Mapping[str, Any]) -> Any:
    item_spec = spec.get("items", {}) if isinstance(spec.get("items"), Mapping) else {}
    if isinstance(option, dict) and spec.get("type") in ("dict", "HashMap"):
        return _chosen_dict(option)
    if (
        isinstance(option, list)
        and item_spec.get("type") == "dict"
        and all(isinstance(item, dict) for item in option)
    ):
        return [_chosen_dict(item) for item in option]
    return option


def truth_calls(
    functions: Sequence[Mapping[str, Any]], answer: Sequence[Mapping[str, Any]], language: str
) -> list[Call]:
    """The ground truth's first acceptable option for every parameter, as calls.

    Optional parameters that may be left out are left out; Java and JavaScript
    values are written as the source text that reads back as the answer.
    """
    by_name = {f["name"]: f for f in functions}
    calls: list[Call] = []
    for expected in answer:
        ((name, options_by_param),) = expected.items()
        description = by_name.get(name)
        if description is None:
            raise BenchDataError(f"the ground truth calls {name!r}, which is not described")
        parameters = description.get("parameters", {})
        properties: Mapping[str, Any] = parameters.get("properties", {})
        required = set(parameters.get("required", []))
        arguments: dict[str, Any] = {}
        for param, options in options_by_param.items():
            if "" in options and param not in required:
                continue
            spec = properties.get(param, {})
            found, option = _first_option(options, spec)
            if not found:
                continue
            value = _chosen_value(option, spec)
            item_type = spec.get("items", {}).get("type") if isinstance(spec, Mapping) else None
            if language == "java":
                value = java_source(value, str(spec.get("type", "any")), item_type)
            elif language == "javascript":
                value = js_source(value, str(spec.get("type", "any")), item_type)
            arguments[param] = value
        calls.append(Call(shown_name(name), arguments))
    return calls


def _placeholder(spec: Mapping[str, Any]) -> Any:
    if spec.get("enum"):
        return spec["enum"][0]
    if "default" in spec:
        return spec["default"]
    return {
        "integer": 1,
        "number": 1.0,
        "boolean": True,
        "array": [],
        "object": {},
    }.get(str(spec.get("type")), "example")


# --- the tasks -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    id: str
    category: str
    functions: list[dict[str, Any]]
    question: list[list[dict[str, Any]]]
    answer: list[dict[str, Any]] | None


class BfclTask(Task):
    """One BFCL single-turn entry."""

    suite = "bfcl"
    max_rounds = 5
    searchable = True

    def __init__(self, entry: _Entry) -> None:
        self.entry = entry
        self.id = entry.id
        self.category = entry.category
        self.language = language_of(entry.category)

    def setup(self) -> Setup:
        tools = Toolbox([bfcl_tool(f, self.language) for f in self.entry.functions])
        messages = self.entry.question[0] if self.entry.question else []
        system = [str(m.get("content", "")) for m in messages if m.get("role") == "system"]
        rest = [m for m in messages if m.get("role") != "system"]
        if not rest or rest[-1].get("role") != "user":
            raise BenchDataError(f"{self.id}: the question does not end with a user message")
        history = [
            Message("assistant" if m.get("role") == "assistant" else "user", str(m["content"]))
            for m in rest[:-1]
        ]
        return Setup(
            turns=[Turn(str(rest[-1]["content"]), tools)],
            system_prompt="\n\n".join(system) or None,
            history=history,
        )

    def _truth(self, setup: Setup) -> list[Call]:
        if self.category in NO_CALL_CATEGORIES:
            return []
        if self.category == "live_relevance":
            # No ground truth exists: any call is right, so call the first function
            # with schema-valid values.
            tool = next(iter(setup.turns[0].tools))
            required = tool.parameters.get("required", [])
            properties = tool.parameters.get("properties", {})
            return [Call(tool.name, {k: _placeholder(properties[k]) for k in required})]
        if self.entry.answer is None:
            raise BenchDataError(f"{self.id}: no ground truth")
        return truth_calls(self.entry.functions, self.entry.answer, self.language)

    def oracle(self, setup: Setup, convention: str) -> list[OracleTurn]:
        calls = self._truth(setup)
        if not calls:
            return [OracleTurn(steps=[], script=None, answer=_NO_CALL_ANSWER)]
        script = statements_script(calls, setup.turns[0].tools, group_parallel=True)
        return [OracleTurn(steps=[calls], script=script, answer="Done.")]

    def score(self, setup: Setup, runs: Sequence[RunResult]) -> Score:
        own = {shown_name(str(f.get("name", ""))) for f in self.entry.functions}
        made = [
            Call(c.name, c.arguments)
            for run in runs
            for c in run.calls
            # A search of a deferred toolbox (`--tool-search`) is not a call BFCL scores.
            if c.name in own or c.name not in _SEARCH_NAMES
        ]
        attempted = len(made) + sum(len(run.rejected) for run in runs)
        if self.category in NO_CALL_CATEGORIES:
            metrics = call_metrics([], made)
            return Score(
                correct=attempted == 0,
                detail=None if attempted == 0 else f"{attempted} call(s) made where none fits",
                precision=metrics.precision,
            )
        if self.category == "live_relevance":
            # No ground truth exists, so there is nothing to measure precision against.
            return Score(correct=bool(made), detail=None if made else "no call was made")
        if self.entry.answer is None:
            raise BenchDataError(f"{self.id}: no ground truth")
        decoded = [{c.tool: dict(c.arguments)} for c in made]
        verdict = check_ast(
            self.entry.functions,
            decoded,
            self.entry.answer,
            self.category,
            dots_as_underscores=True,
        )
        expected = [
            Call(shown_name(name), options)
            for item in self.entry.answer
            for name, options in item.items()
        ]
        metrics = call_metrics(expected, made, self._field_score)
        detail = None
        if not verdict.passed:
            detail = f"{verdict.error_type}: {' '.join(verdict.errors)}"[:500]
        return metrics.score(correct=verdict.passed, detail=detail)

    def _field_score(self, expected: Call, made: Call) -> tuple[int, int]:
        """Fields right and compared, each judged by `check_ast` on that field alone."""
        function = next(
            (f for f in self.entry.functions if shown_name(f["name"]) == expected.tool), None
        )
        properties: Mapping[str, Any] = (function or {}).get("parameters", {}).get("properties", {})
        right = total = 0
        for param, options in expected.arguments.items():
            if param not in made.arguments:
                if "" not in options:
                    total += 1
                continue
            total += 1
            if param in properties and self._field_passes(
                expected.tool, param, properties[param], made.arguments[param], options
            ):
                right += 1
        total += sum(1 for param in made.arguments if param not in expected.arguments)
        return right, total

    def _field_passes(
        self, name: str, param: str, spec: Mapping[str, Any], value: Any, options: Any
    ) -> bool:
        single = {"name": name, "parameters": {"type": "dict", "properties": {param: spec}}}
        try:
            verdict = check_ast(
                [single], [{name: {param: value}}], [{name: {param: options}}], self.category
            )
        except (ValueError, TypeError):
            return False
        return verdict.passed


class BrokenTask(Task):
    """An entry (or a whole category) whose data could not be read."""

    suite = "bfcl"

    def __init__(self, suite: str, id_: str, category: str, error: BenchDataError) -> None:
        self.suite = suite
        self.id = id_
        self.category = category
        self.error = error

    def setup(self) -> Setup:
        raise self.error

    def oracle(self, setup: Setup, convention: str) -> list[OracleTurn]:
        raise self.error

    def score(self, setup: Setup, runs: Sequence[RunResult]) -> Score:
        raise self.error


def load_tasks(category: str, directory: Path) -> Iterator[Task]:
    """A task for each entry of a category in file order; unreadable data becomes a `BrokenTask`."""
    prompts_path = directory / f"{_VERSION}_{category}.json"
    answers: dict[str, Any] = {}
    has_answers = category not in (*NO_CALL_CATEGORIES, "live_relevance")
    try:
        if has_answers:
            for number, item in read_jsonl(directory / "possible_answer" / prompts_path.name):
                if isinstance(item, BenchDataError):
                    yield BrokenTask("bfcl", f"{category}:answer-line-{number}", category, item)
                    continue
                answers[str(item["id"])] = item.get("ground_truth")
        rows = list(read_jsonl(prompts_path))
    except BenchDataError as exc:
        yield BrokenTask("bfcl", f"{category}:file", category, exc)
        return
    for number, item in rows:
        if isinstance(item, BenchDataError):
            yield BrokenTask("bfcl", f"{category}:line-{number}", category, item)
            continue
        entry_id = str(item["id"])
        answer = answers.get(entry_id) if has_answers else None
        functions = item.get("function")
        question = item.get("question")
        if has_answers and not isinstance(answer, list):
            error = BenchDataError(f"{entry_id}: no ground truth")
        elif not isinstance(functions, list) or not isinstance(question, list):
            error = BenchDataError(f"{entry_id}: no functions or question")
        else:
            yield BfclTask(_Entry(entry_id, category, functions, question, answer))
            continue
        yield BrokenTask("bfcl", entry_id, category, error)


def bfcl_tasks(
    categories: Sequence[str], *, directory: Path | None = None, limit: int | None = None
) -> list[Task]:
    """Tasks for the given single-turn categories (``limit``: the first N of each)."""
    where = directory or data_dir()
    tasks: list[Task] = []
    for category in categories:
        tasks.extend(itertools.islice(load_tasks(category, where), limit))
    return tasks


def proportional_counts(sizes: Mapping[str, int], total: int) -> dict[str, int]:
    """Split `total` across categories in proportion to their sizes (largest remainder)."""
    whole = sum(sizes.values())
    if whole == 0:
        return dict.fromkeys(sizes, 0)
    exact = {k: total * v / whole for k, v in sizes.items()}
    counts = {k: int(v) for k, v in exact.items()}
    short = total - sum(counts.values())
    for key in sorted(exact, key=lambda k: (counts[k] - exact[k], k))[:short]:
        counts[key] += 1
    return counts


def paper_subset(
    *,
    seed: int = 0,
    size: int = PAPER_SUBSET_SIZE,
    categories: Sequence[str] = PAPER_CATEGORIES,
    directory: Path | None = None,
) -> list[Task]:
    """A seeded sample of `size` entries drawn across `categories` in proportion to their sizes.

    The same seed gives the same entries; within a category they keep file order.
    """
    by_category = {c: bfcl_tasks([c], directory=directory) for c in categories}
    counts = proportional_counts({c: len(t) for c, t in by_category.items()}, size)
    rng = random.Random(seed)
    chosen: list[Task] = []
    for category in categories:
        tasks = by_category[category]
        picked = sorted(rng.sample(range(len(tasks)), counts[category]))
        chosen.extend(tasks[i] for i in picked)
    return chosen
