"""``tooluse bench …``: run evaluation suites and write results, a summary and plots."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from .. import UsageError
from ._extras import need

if TYPE_CHECKING:
    from ..eval import CallPolicy, Row

__all__ = ["bench_app", "options_of", "run_options", "with_options"]

bench_app = typer.Typer(
    help="Measure a model on evaluation suites, JSON, code and text conventions side by side.",
    no_args_is_help=True,
)

err = Console(stderr=True)

ModelOption = Annotated[
    str,
    typer.Option(
        "--model",
        help="oracle (answers with the ground truth), local, local-unconstrained, "
        "local:FILE.gguf, scripted:FILE.jsonl, openai:MODEL or anthropic:MODEL.",
    ),
]
ConventionsOption = Annotated[
    str,
    typer.Option("--conventions", help="Comma-separated: json, code, text, plan, auto."),
]
CostConventionsOption = Annotated[
    str,
    typer.Option(
        "--conventions",
        help="Comma-separated: json, code (the two the cost model compares), and plan. "
        "With all three, the fitted lines are stored as the model's profile for "
        "--conventions auto.",
    ),
]
OutOption = Annotated[
    Path, typer.Option("--out", help="Directory for results.jsonl, summary.md and plots.")
]
CategoriesOption = Annotated[
    str | None, typer.Option("--categories", help="Comma-separated categories (default: all).")
]
LimitOption = Annotated[
    int | None, typer.Option("--limit", min=1, help="Run only the first N entries per category.")
]
WorkersOption = Annotated[
    int | None,
    typer.Option(
        "--workers",
        min=1,
        help="Entries running at once: local processes, or Ray workers "
        "(default 1 locally, every CPU of the cluster on Ray).",
    ),
]


class ExecutorOption(StrEnum):
    local = "local"
    ray = "ray"


Executor = Annotated[
    ExecutorOption,
    typer.Option(
        "--executor",
        help="Where entries run: local (this machine), or ray (a Ray cluster; pip install "
        "'tooluse[ray]').",
    ),
]
RayAddressOption = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="With --executor ray: auto, HOST:PORT or ray://HOST:PORT of a running cluster "
        "(default: start a local Ray for the sweep and stop it after).",
    ),
]
RayCpusOption = Annotated[
    float,
    typer.Option("--ray-cpus", min=0.01, help="With --executor ray: CPUs each entry declares."),
]
RateLimitOption = Annotated[
    float | None,
    typer.Option(
        "--rate-limit",
        min=0.001,
        help="With --executor ray: model requests per minute to an openai: or anthropic: "
        "provider, across the whole cluster.",
    ),
]
WidthsOption = Annotated[
    str | None, typer.Option("--widths", help="Comma-separated widths N (default: the suite's).")
]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed for generated data and subsets.")]
BaseUrlOption = Annotated[
    str | None, typer.Option("--base-url", help="Base URL of an OpenAI-compatible server.")
]
RetryOption = Annotated[
    bool, typer.Option("--retry-errors", help="Run again the entries whose row is an error.")
]
CheckAnswersOption = Annotated[
    bool | None,
    typer.Option(
        "--check-answers/--no-check-answers",
        help="Check each final answer against the run's results (Agent(check_answers=...)): "
        "an answer whose comparison its own numbers refute, or that asks the task back as a "
        "question, gets one note and one more round "
        "(default: the model's own, on for the local 1.5B). Rows name it beside the model.",
    ),
]
TracesOption = Annotated[
    bool,
    typer.Option(
        "--traces",
        help="Also write each entry's run trace (requests, replies, calls, results) to "
        "OUT/traces/CONVENTION/ENTRY.jsonl; `tooluse view OUT` shows them beside the results.",
    ),
]


def _shared_options(  # noqa: PLR0917 - the options every suite command takes, declared once
    out: OutOption,
    model: ModelOption = "oracle",
    workers: WorkersOption = None,
    seed: SeedOption = 0,
    base_url: BaseUrlOption = None,
    retry_errors: RetryOption = False,
    traces: TracesOption = False,
    check_answers: CheckAnswersOption = None,
    executor: Executor = ExecutorOption.local,
    ray_address: RayAddressOption = None,
    ray_cpus: RayCpusOption = 1.0,
    rate_limit: RateLimitOption = None,
) -> None:
    """Only its signature counts: `_suite_command` adds it to each suite's own options."""


def options_of(function: Callable[..., Any]) -> list[inspect.Parameter]:
    """The options a function declares (its parameters), as typer reads them."""
    return list(inspect.signature(function, eval_str=True).parameters.values())


def run_options() -> list[inspect.Parameter]:
    """The shared options that come after a command's own: ``--workers`` on."""
    return options_of(_shared_options)[2:]


def with_options(
    command: Callable[..., Any], options: list[inspect.Parameter], run: Callable[..., None]
) -> Callable[..., None]:
    """`run`, named and documented as `command`, taking `options` on the command line."""
    parameters = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in options]
    functools.wraps(command)(run)
    run.__signature__ = inspect.Signature(parameters, return_annotation=None)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    return run


def _suite_command(
    name: str,
) -> Callable[[Callable[..., dict[str, Any] | None]], Callable[..., None]]:
    """Register a suite's command: `_shared_options` and the options the function declares.

    The options `_bench` takes go to it as they are; the function is given its own
    options and returns any further `_bench` keywords it makes of them (bfcl's call
    policy), or None. Help lists ``--out`` and ``--model`` first, then the suite's
    own options, then the other shared ones.
    """
    first = options_of(_shared_options)[:2]
    takes = inspect.signature(_bench).parameters

    def register(command: Callable[..., dict[str, Any] | None]) -> Callable[..., None]:
        own = options_of(command)

        def run(**options: Any) -> None:
            extra = command(**{p.name: options[p.name] for p in own}) or {}
            _bench(name, **{k: v for k, v in options.items() if k in takes}, **extra)

        return bench_app.command(name)(with_options(command, [*first, *own, *run_options()], run))

    return register


class ToolChoiceOption(StrEnum):
    auto = "auto"
    required = "required"


class ToolSearchOption(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


def _split(text: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (text or "").split(",") if part.strip())


def _widths(text: str | None) -> tuple[int, ...]:
    try:
        widths = tuple(int(part) for part in _split(text))
    except ValueError:
        raise UsageError(f"--widths takes comma-separated integers, got {text!r}") from None
    if any(w < 1 for w in widths):
        raise UsageError("--widths must be positive")
    return widths


def _bench(
    suite: str,
    *,
    model: str,
    conventions: str,
    out: Path,
    categories: str | None = None,
    limit: int | None = None,
    workers: int | None,
    widths: str | None = None,
    seed: int,
    base_url: str | None,
    retry_errors: bool,
    traces: bool = False,
    check_answers: bool | None = None,
    calls: CallPolicy | None = None,
    executor: ExecutorOption = ExecutorOption.local,
    ray_address: str | None = None,
    ray_cpus: float = 1.0,
    rate_limit: float | None = None,
    task_file: Path | None = None,
    tools: str | None = None,
    deps: str | None = None,
    command: str = "tooluse bench",
) -> None:
    need("eval", command)  # for the plots and the fitted lines, checked before the run
    from ..eval import (
        Bench,
        BenchConfig,
        CallPolicy,
        RayOptions,
        SuiteOptions,
        read_rows,
        write_plots,
        write_summary,
    )
    from ..eval._report import aggregate, cost_table

    policy = calls or CallPolicy()
    if check_answers is not None:
        policy = replace(policy, check_answers=check_answers)

    config = BenchConfig(
        suite=suite,
        out=out,
        model=model,
        conventions=_split(conventions),
        options=SuiteOptions(
            categories=_split(categories),
            limit=limit,
            widths=_widths(widths),
            seed=seed,
            task_file=str(task_file) if task_file is not None else None,
            tools=tools,
            deps=deps,
        ),
        workers=workers if workers is not None else (0 if executor == "ray" else 1),
        base_url=base_url,
        retry_errors=retry_errors,
        traces=traces,
        calls=policy,
        executor=executor.value,
        ray=RayOptions(address=ray_address, cpus=ray_cpus, rate_limit=rate_limit),
    )
    bench = Bench(config)
    row_suite = suite
    if task_file is not None or suite in ("tasks", "multimodal"):
        # A task file is read before the run starts, so that a mistake in it is
        # one line naming the file, the task and the field, and nothing has run;
        # its rows are labelled with the file's name.
        row_suite = next((task.suite for task in bench.tasks()), suite)
    passed = 0
    bar = _Bar(row_suite, "{task.fields[passed]} passed", bench.results, passed=0)

    def finished(row: Row) -> None:
        nonlocal passed
        passed += row.correct
        bar.advance(passed=passed)

    def waiting(message: str) -> None:
        bar.progress.console.print(f"[yellow]{message}[/]", highlight=False)

    with bar:
        bench.run(on_start=bar.started, on_row=finished, on_wait=waiting)

    rows = read_rows(bench.results)
    # Rows name the model by its label, which adds any call policy to the spec.
    this_model = [r for r in rows if r.model == config.label]
    # Plots show this model; the summary covers every model in the directory.
    try:
        plots = write_plots(out, this_model)
        summary = write_summary(out, rows, plots)
    except OSError as exc:
        raise UsageError(f"cannot write the report into {out}: {exc.strerror or exc}") from exc
    # The cost model runs fan-out entries; their rows belong to that suite.
    if suite == "costmodel":
        row_suite = "fanout"
    mine = [r for r in this_model if r.suite == row_suite]
    for convention in config.conventions:
        group = [r for r in mine if r.convention == convention]
        if group:
            figures = aggregate(group)
            valid, emitted = figures.schema_valid
            share = f"{100 * valid:.1f}% of {emitted}" if valid is not None else "nothing"
            err.print(
                f"{convention}: {figures.correct}/{figures.entries} passed, "
                f"schema-valid {share} emitted; per entry {figures.rounds:.1f} rounds, "
                f"{figures.calls:.1f} calls, {figures.wall_s:.2f} s"
            )
    if suite == "costmodel":
        for line in cost_table(this_model):
            err.print(line, highlight=False)
        from ..eval._profile import fit_profile, save_profile

        profile = fit_profile(this_model, config.label)
        if profile is not None and set(profile.conventions()) == {"json", "code", "plan"}:
            for path in save_profile(profile, out):
                err.print(f"wrote the profile for --conventions auto: {path}")
    if suite == "multimodal":
        _ocr_report(out, [task.id for task in bench.tasks()])
    err.print(f"wrote {bench.results}, {summary}" + (f" and {len(plots)} plots" if plots else ""))


class _Bar:
    """A bench's progress bar: rows done of those pending, and the counts in `counts`.

    It starts once the run has its output open (`started`), so that a bad --out is
    an error line alone, and stops when the ``with`` block ends.
    """

    def __init__(self, description: str, counts: str, results: Path, **fields: Any) -> None:
        # Imported here: every command's start would pay for it, and only a run shows it.
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(counts),
            TimeRemainingColumn(),
            console=err,
            transient=False,
        )
        self._task = self.progress.add_task(description, total=None, **fields)
        self._results = results

    def started(self, pending: int, total: int) -> None:
        if pending < total:
            err.print(f"[dim]{total - pending} of {total} already in {self._results}; skipped[/]")
        self.progress.update(self._task, total=pending)
        self.progress.start()

    def advance(self, **fields: Any) -> None:
        self.progress.update(self._task, advance=1, **fields)

    def __enter__(self) -> _Bar:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.progress.live.is_started:
            self.progress.stop()


def _ocr_report(out: Path, tasks: list[str]) -> None:
    """OCR's share of the errors, apart from the model's: printed and written to ocr.md."""
    from ..eval._multimodal import ocr_accuracy, ocr_table

    lines = ocr_table(ocr_accuracy(tasks))
    for line in lines:
        err.print(line, highlight=False, markup=False)
    try:
        (out / "ocr.md").write_text("# OCR accuracy\n\n" + "\n".join(lines) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write the report into {out}: {exc.strerror or exc}") from exc


@_suite_command("bfcl")
def bfcl(
    *,
    conventions: ConventionsOption = "json,code",
    categories: Annotated[
        str | None,
        typer.Option(
            "--categories",
            help="BFCL categories, or all, single_turn, multi_turn, paper (the 309-entry "
            "proportional subset of Patel et al. 2026, drawn with --seed).",
        ),
    ] = None,
    limit: LimitOption = None,
    tool_choice: Annotated[
        ToolChoiceOption,
        typer.Option(
            "--tool-choice",
            help="The json convention's tool choice until a call has run; rows of a "
            "choice other than auto name it beside the model.",
        ),
    ] = ToolChoiceOption.auto,
    parallel_calls: Annotated[
        bool | None,
        typer.Option(
            "--parallel-calls/--single-call",
            help="Allow several calls per reply, or ask for one (json convention); "
            "by default the backend decides. Rows name the choice beside the model.",
        ),
    ] = None,
    max_rounds: Annotated[
        int | None,
        typer.Option(
            "--max-rounds",
            min=1,
            help="Model requests per turn instead of each task's own limit; 1 scores the "
            "first reply only, as BFCL does. Rows name it beside the model.",
        ),
    ] = None,
    tool_search: Annotated[
        ToolSearchOption,
        typer.Option(
            "--tool-search",
            help="Defer single-turn entries' tools behind tool search (the oracle searches "
            "first). Rows name it beside the model.",
        ),
    ] = None,  # type: ignore[assignment]
    toolbox_size: Annotated[
        int | None,
        typer.Option(
            "--toolbox-size",
            min=1,
            help="Pad each single-turn entry's functions with distractor BFCL functions "
            "up to N tools. Rows name it beside the model.",
        ),
    ] = None,
) -> dict[str, Any]:
    """BFCL: single-turn categories scored by AST, multi-turn against BFCL's backends."""
    from ..eval import CallPolicy

    policy = CallPolicy(
        tool_choice.value,
        parallel_calls,
        max_rounds,
        tool_search=tool_search.value if tool_search is not None else None,
        toolbox_size=toolbox_size,
    )
    return {"calls": policy}


@_suite_command("fanout")
def fanout(
    conventions: ConventionsOption = "json,code",
    categories: CategoriesOption = None,
    widths: WidthsOption = None,
    limit: LimitOption = None,
) -> None:
    """Fan-out enumeration: N independent calls (variants: discovered, listed)."""


@_suite_command("chain")
def chain(
    conventions: ConventionsOption = "json,code",
    widths: Annotated[
        str | None, typer.Option("--widths", help="Comma-separated chain lengths.")
    ] = None,
    limit: LimitOption = None,
) -> None:
    """Chains: each call's argument comes from the previous call's result."""


@_suite_command("rot")
def rot(
    conventions: ConventionsOption = "json,code",
    categories: Annotated[
        str | None, typer.Option("--categories", help="Levels: clean, noisy, flooded.")
    ] = None,
    widths: Annotated[
        str | None,
        typer.Option("--widths", help="Fan-out widths and chain lengths of the wrapped tasks."),
    ] = None,
    limit: LimitOption = None,
) -> None:
    """Context rot: fan-out and chain tasks amid irrelevant material and decoy tools."""


@_suite_command("costmodel")
def costmodel(
    conventions: CostConventionsOption = "json,code",
    categories: CategoriesOption = None,
    widths: WidthsOption = None,
) -> None:
    """Token cost model: fit tokens against N per convention, N* beside Patel et al. 2026."""


@_suite_command("tasks")
def tasks(
    conventions: ConventionsOption = "json,code",
    categories: Annotated[
        str | None,
        typer.Option(
            "--categories",
            help="currency, weather, units, inventory, calendar, time zones, calculator, "
            "lookups, mixed (default: all).",
        ),
    ] = None,
    limit: LimitOption = None,
    tool_examples: Annotated[
        bool,
        typer.Option(
            "--tool-examples",
            help="Show the model example calls of each tool (@tool(examples=...)), with "
            "values from no task; without it the tools have none.",
        ),
    ] = False,
) -> dict[str, Any] | None:
    """Whole runs over twelve everyday tools: 39 tasks of 1 to 4 steps, checked exactly."""
    if tool_examples:
        return {"tools": "tooluse.eval._everyday:toolbox_with_examples"}
    return None


@_suite_command("multimodal")
def multimodal(
    conventions: ConventionsOption = "json,code,plan",
    categories: Annotated[
        str | None,
        typer.Option("--categories", help="receipts, price tables, signs (default: all)."),
    ] = None,
    limit: LimitOption = None,
) -> None:
    """Photos read through vision tools (MM-ReAct): 16 tasks of OCR with a lookup or arithmetic.

    Prints how often OCR itself read what each task needs, and writes it to ocr.md.
    """
    need("vision", "tooluse bench multimodal")


@bench_app.command("agentdojo")
def agentdojo(  # noqa: PLR0917
    out: Annotated[Path, typer.Option("--out", help="Directory for results.jsonl and summary.md.")],
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help="oracle (the user task's ground truth), obedient (the ground truth, and "
            "every instruction found in a tool result obeyed), or any model spec: local, "
            "local:NAME, openai:MODEL, anthropic:MODEL, scripted:FILE.jsonl.",
        ),
    ] = "oracle",
    defense: Annotated[
        str,
        typer.Option(
            "--defense",
            help="none, provenance (the built-in approval policy), scope (the model names "
            "the tools with side effects the task needs before reading anything), or "
            "provenance+scope.",
        ),
    ] = "none",
    conventions: Annotated[
        str, typer.Option("--conventions", help="Comma-separated: json, code.")
    ] = "json,code",
    suites: Annotated[
        str,
        typer.Option("--suites", help="Comma-separated: banking, slack, travel, workspace."),
    ] = "banking,slack,travel,workspace",
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, help="Run only the first N user tasks per suite."),
    ] = None,
    attack: Annotated[
        str, typer.Option("--attack", help="AgentDojo's attack; 'none' runs no attacked pairs.")
    ] = "important_instructions",
    benchmark_version: Annotated[
        str, typer.Option("--benchmark-version", help="AgentDojo's benchmark version.")
    ] = "v1.2.2",
    max_rounds: Annotated[
        int, typer.Option("--max-rounds", min=1, help="Model requests per run.")
    ] = 40,
    min_chars: Annotated[
        int | None,
        typer.Option(
            "--min-chars",
            help="With --defense provenance: the shortest value the policy tests as a "
            "substring (default 6; shorter strings only as words); rows name it beside "
            "the defense.",
        ),
    ] = None,
    base_url: BaseUrlOption = None,
    traces: Annotated[
        bool,
        typer.Option(
            "--traces",
            help="Also write each run's trace (requests, replies, calls, results) to "
            "OUT/traces/CONVENTION/SUITE/USER_TASK[--INJECTION_TASK].jsonl; "
            "`tooluse view OUT` shows them beside the results.",
        ),
    ] = False,
) -> None:
    """AgentDojo: utility and targeted attack success, scored by AgentDojo's own checks."""
    from ..eval.agentdojo import (
        ATTACK,
        AgentDojoBench,
        AgentDojoConfig,
        AgentDojoRow,
        figures,
        read_agentdojo_rows,
        write_agentdojo_summary,
    )

    config = AgentDojoConfig(
        out=out,
        model=model,
        defense=defense,
        conventions=_split(conventions),
        suites=_split(suites),
        limit=limit,
        attack=attack if attack != "none" else ATTACK,
        attacks=attack != "none",
        version=benchmark_version,
        base_url=base_url,
        max_rounds=max_rounds,
        min_chars=min_chars,
        traces=traces,
    )
    bench = AgentDojoBench(config)
    counts = {"solved": 0, "attacked": 0}
    bar = _Bar(
        "agentdojo",
        "{task.fields[solved]} solved, {task.fields[attacked]} attacked",
        bench.results,
        **counts,
    )

    def finished(row: AgentDojoRow) -> None:
        counts["solved"] += row.utility
        counts["attacked"] += row.attacked
        bar.advance(**counts)

    with bar:
        bench.run(on_start=bar.started, on_row=finished)
    rows = read_agentdojo_rows(bench.results)
    try:
        summary = write_agentdojo_summary(out, rows)
    except OSError as exc:
        raise UsageError(f"cannot write the report into {out}: {exc.strerror or exc}") from exc
    mine = [r for r in rows if (r.model, r.defense) == (model, config.defense_label)]
    for convention in config.conventions:
        f = figures(r for r in mine if r.convention == convention)
        err.print(
            f"{convention}: utility {f.share(f.utility, f.runs)}, "
            f"under attack {f.share(f.utility_attacked, f.attacked_runs)}, "
            f"attack success {f.share(f.attacks, f.attacked_runs)}",
            highlight=False,
        )
    err.print(f"wrote {bench.results} and {summary}")


@bench_app.command("toolsearch")
def toolsearch(
    out: Annotated[Path, typer.Option("--out", help="Directory for results.jsonl and summary.md.")],
    tools: Annotated[
        str,
        typer.Option(
            "--tools",
            help="Comma-separated toolbox sizes to search at: 'all' (every distinct BFCL "
            "function) or N (sampled below the catalogue, padded with generated tools above).",
        ),
    ] = "all,10000",
    seed: SeedOption = 0,
) -> None:
    """Tool search over every distinct BFCL function: recall, MRR, latency and prompt tokens."""
    import json

    from ..eval._toolsearch import run_toolsearch_bench, summary_markdown

    sizes: list[int | None] = []
    for part in _split(tools):
        if part == "all":
            sizes.append(None)
            continue
        try:
            size = int(part)
        except ValueError:
            raise UsageError(
                f"--tools takes 'all' or sizes, comma-separated; got {part!r}"
            ) from None
        if size < 1:
            raise UsageError("--tools sizes must be positive")
        sizes.append(size)
    if not sizes:
        raise UsageError("--tools names no size")
    try:
        report = run_toolsearch_bench(out, sizes=sizes, seed=seed)
    except OSError as exc:
        raise UsageError(f"cannot write the report into {out}: {exc.strerror or exc}") from exc
    print(summary_markdown(report))
    print(json.dumps(report.to_dict()))
    err.print(f"wrote {out / 'results.jsonl'} and {out / 'summary.md'}")
