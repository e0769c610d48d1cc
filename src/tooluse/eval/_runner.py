"""Running a suite: every task in every convention, one results row each, resumable.

Rows are appended to ``results.jsonl`` as they finish, so an interrupted run
loses nothing; a rerun reads the file and skips the (suite, entry, convention,
model) rows it already has. Whatever goes wrong with one entry (its data, the
model, the scorer) is written into that entry's row and the run goes on.

With more than one worker the tasks run in a local process pool; each worker
rebuilds the suite from the same options and keeps its own sandbox. With
``executor="ray"`` they run on a Ray cluster instead (see `_ray`); the rows are
the same and are written here, by the driver, either way.

Besides the score, a row counts what the model emitted: `calls` (executed:
they passed schema validation), `rejected` (refused by the dispatcher: unknown
tool, invalid arguments, or past the per-turn call limit) and `unparsed`
(replies the convention could not read at all and sent back, which make no
call). `schema_valid_share` is ``calls / (calls + rejected + unparsed)``, None
when the model emitted nothing; counting unreadable replies keeps it honest for
the text convention, where a malformed reply yields no call to reject.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import multiprocessing
import re
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import RunResult, UsageError
from ..conventions import get_convention
from ..models import Model, resolve_model
from ..run._searching import search_on
from ..sandbox import Sandbox
from ._driver import CallPolicy, Transcript, run_setup
from ._oracle import OracleModel, oracle_for
from ._row import Row, read_results, schema_valid_share
from ._suites import SuiteOptions, build_tasks
from ._task import BenchDataError, Setup, Task
from ._toolsearch import pad_setup, searching_oracle

__all__ = [
    "CONVENTIONS",
    "DEFAULT_CONVENTIONS",
    "ORACLE",
    "Bench",
    "BenchConfig",
    "RayOptions",
    "Row",
    "evaluate",
    "read_rows",
    "schema_valid_share",
]

ORACLE = "oracle"
RESULTS = "results.jsonl"
#: Where `BenchConfig.traces` puts each entry's run trace, under the output directory.
TRACES = "traces"
CONVENTIONS = ("json", "code", "text", "plan", "auto")
# What runs unless asked otherwise: the two the cost model compares.
DEFAULT_CONVENTIONS = ("json", "code")
# The cost model's equations compare JSON calling with programmatic calling.
_COSTMODEL_CONVENTIONS = ("json", "code", "plan")

EXECUTORS = ("local", "ray")

_STATUS_ORDER = ("cancelled", "error", "max_rounds", "cycle", "truncated", "completed")


def read_rows(path: Path) -> list[Row]:
    """The rows of a results file, the last one winning for each key.

    Rows written by earlier versions load (see `Row.from_json`); lines that are
    not rows at all, such as one cut short by a killed run, are skipped.
    """
    return read_results(path, Row.from_json)


@dataclass(frozen=True, slots=True)
class RayOptions:
    """How a sweep runs on Ray (``executor="ray"``).

    `address` is ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``; None starts a
    local Ray for the sweep and stops it afterwards. `cpus` is what each entry
    declares (a fraction lets several share a CPU); `actors` runs entries in
    actors that keep a warmed-up model (None: for local GGUF models only).
    `rate_limit` caps a hosted provider's requests per minute across the whole
    cluster, with bursts of up to `rate_burst`.
    """

    address: str | None = None
    cpus: float = 1.0
    actors: bool | None = None
    rate_limit: float | None = None
    rate_burst: int = 1

    def __post_init__(self) -> None:
        if self.cpus <= 0:
            raise UsageError("--ray-cpus must be positive")
        if self.rate_limit is not None and self.rate_limit <= 0:
            raise UsageError("--rate-limit must be positive (model requests per minute)")
        if self.rate_burst < 1:
            raise UsageError("the rate limit's burst must be at least 1")


@dataclass(frozen=True, slots=True)
class BenchConfig:
    """One bench invocation.

    `model` is a spec (``oracle``, ``openai:…``, ``scripted:…``) or, in-process
    only, a `Model`; rows are labelled with the spec or the model's name.
    `conventions` are any of ``json``, ``code`` and ``text`` (the cost model
    takes only the first two).
    """

    suite: str
    out: Path
    model: str | Model = ORACLE
    conventions: tuple[str, ...] = DEFAULT_CONVENTIONS
    options: SuiteOptions = field(default_factory=SuiteOptions)
    workers: int = 1
    base_url: str | None = None
    retry_errors: bool = False
    #: How the json convention asks for calls (tool choice, parallel calls).
    calls: CallPolicy = field(default_factory=CallPolicy)
    #: ``local`` (this process, or a process pool of `workers`) or ``ray``; with
    #: Ray, `workers` 0 means as many entries at once as the cluster has CPUs.
    executor: str = "local"
    ray: RayOptions = field(default_factory=RayOptions)
    #: Write each entry's run trace (every request, reply and call) to
    #: ``out/traces/CONVENTION/ENTRY.jsonl``; `tooluse view out` shows them.
    traces: bool = False

    def __post_init__(self) -> None:
        unknown = [c for c in self.conventions if c not in CONVENTIONS]
        if unknown or not self.conventions:
            raise UsageError(
                f"unknown conventions {', '.join(unknown) or '(none)'}; "
                f"use some of {', '.join(CONVENTIONS)}, comma-separated"
            )
        if self.suite == "costmodel" and not set(self.conventions) <= set(_COSTMODEL_CONVENTIONS):
            raise UsageError(
                "the cost model fits JSON against code (Patel et al. 2026) and takes "
                "--conventions json, code or json,code; to measure text on the same tasks, run "
                "`tooluse bench fanout --conventions json,code,text` (its summary fits text too)"
            )
        if self.executor not in EXECUTORS:
            raise UsageError(f"unknown executor {self.executor!r}; use local or ray")
        if self.executor == "ray":
            if self.workers < 0:
                raise UsageError("--workers must be at least 1 (or 0 with Ray: every CPU)")
            return
        if self.ray != RayOptions():
            raise UsageError("--ray-address, --ray-cpus and --rate-limit need --executor ray")
        if self.workers < 1:
            raise UsageError("--workers must be at least 1")
        if self.workers > 1 and not isinstance(self.model, str):
            raise UsageError("worker processes need a model spec, not a model object")

    @property
    def label(self) -> str:
        return model_label(self.model, self.calls)

    @property
    def trace_dir(self) -> Path | None:
        return self.out / TRACES if self.traces else None


def model_label(model: str | Model, calls: CallPolicy | None = None) -> str:
    """How rows name a model: its spec or name, and any call policy other than the default."""
    name = model if isinstance(model, str) else model.name
    suffix = calls.label if calls is not None else ""
    return f"{name} {suffix}" if suffix else name


# --- one entry ------------------------------------------------------------------------


class _Context:
    """What a process needs to run entries: the model (or the oracle) and a sandbox.

    A model given as an instance is used for every entry; a spec is resolved
    here, so that a bad one fails before any entry runs. A sandbox passed in
    belongs to the caller and is not closed here.
    """

    def __init__(
        self,
        model: str | Model = ORACLE,
        *,
        base_url: str | None = None,
        sandbox: Sandbox | None = None,
        calls: CallPolicy | None = None,
        traces: Path | None = None,
    ) -> None:
        self.calls = calls or CallPolicy()
        self.traces = traces
        self.label = model_label(model, self.calls)
        self._oracle = model == ORACLE
        if isinstance(model, str) and not self._oracle:
            model = resolve_model(model, base_url=base_url)
        self._model = None if isinstance(model, str) else model
        self._sandbox = sandbox
        self._owns_sandbox = sandbox is None

    def model_for(self, task: Task, setup: Setup, convention: str) -> Model:
        if self._model is None:
            if convention == "auto":
                # The oracle answers in what auto will choose for the task as it is posed.
                last = setup.turns[-1].text if setup.turns else ""
                chosen = get_convention("auto").for_run(last, setup.expect, model=ORACLE)
                convention = chosen.name
            mode = self.calls.tool_search
            tools = setup.turns[0].tools if setup.turns else None
            if task.searchable and mode is not None and tools and search_on(mode, tools):
                # Deferred tools must be found before they are called: the oracle searches.
                turns = searching_oracle(task.oracle(setup, convention), convention, tools)
                return OracleModel(turns, convention)
            return oracle_for(task, convention, setup)
        return self._model

    def trace_for(self, task: Task, convention: str) -> Path | None:
        """The file an entry's runs append their trace to, if traces are kept."""
        if self.traces is None:
            return None
        folder = self.traces / _file_name(convention)
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{_file_name(task.id)}.jsonl"

    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = Sandbox()
        return self._sandbox

    def close(self) -> None:
        if self._sandbox is not None and self._owns_sandbox:
            self._sandbox.close()
            self._sandbox = None


def _file_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip(".") or "_"


def _base_row(task: Task, convention: str, model: str) -> Row:
    return Row(
        suite=task.suite,
        entry_id=task.id,
        category=task.category,
        width=task.width,
        convention=convention,
        model=model,
    )


def _worst_status(runs: Sequence[RunResult]) -> str:
    statuses = {run.status for run in runs}
    return next((s for s in _STATUS_ORDER if s in statuses), "error")


def _usage(row: Row, runs: Sequence[RunResult]) -> None:
    rounds = [u for run in runs for u in run.usage.rounds]
    row.input_tokens = sum(u.input_tokens for u in rounds)
    row.output_tokens = sum(u.output_tokens for u in rounds)
    row.peak_input_tokens = max((u.input_tokens for u in rounds), default=0)
    sources = sorted({u.source for u in rounds})
    row.token_source = sources[0] if len(sources) == 1 else ("+".join(sources) or "none")


def _counts(row: Row, transcript: Transcript) -> None:
    runs = transcript.runs
    row.calls = sum(len(r.calls) for r in runs)
    row.rejected = sum(len(r.rejected) for r in runs)
    row.unparsed = transcript.unparsed
    row.schema_valid_share = schema_valid_share(row.calls, row.rejected, row.unparsed)


def _clip(text: str | None, limit: int = 300) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + "…"


async def evaluate(
    task: Task,
    convention: str,
    *,
    model: str | Model = ORACLE,
    sandbox: Sandbox | None = None,
) -> Row:
    """Run one task in one convention and score it: the results row.

    `model` is ``oracle``, a model spec, or a `Model`; the code convention needs
    a sandbox (started and stopped here when none is given).
    """
    context = _Context(model, sandbox=sandbox)
    try:
        return await _run_entry(task, convention, context)
    finally:
        context.close()


async def _run_entry(task: Task, convention: str, context: _Context) -> Row:
    """Run one task in one convention and score it; every failure ends up in the row."""
    row = _base_row(task, convention, context.label)
    start = time.perf_counter()
    setup: Setup | None = None
    try:
        setup = task.setup()
        if context.calls.toolbox_size is not None and task.searchable:
            pad_setup(setup, context.calls.toolbox_size, key=task.id)
        model = context.model_for(task, setup, convention)
        sandbox = context.sandbox() if convention in ("code", "auto") else None
        trace = context.trace_for(task, convention)
        transcript = await run_setup(
            task, setup, model, convention, sandbox, calls=context.calls, trace=trace
        )
    except BenchDataError as exc:
        row.error = f"data: {exc}"
        row.wall_s = time.perf_counter() - start
        return row
    except Exception as exc:
        row.error = f"harness: {type(exc).__name__}: {exc}"
        row.traceback = _clip(traceback.format_exc(limit=4), 1000)
        row.wall_s = time.perf_counter() - start
        if setup is not None:
            task.teardown(setup)
        return row
    row.wall_s = time.perf_counter() - start
    runs = transcript.runs
    row.status = _worst_status(runs)
    row.error = _clip(next((r.error for r in runs if r.error), None), 500)
    _counts(row, transcript)
    row.rounds = sum(r.rounds for r in runs)
    row.turns = len(runs)
    row.answer = _clip(runs[-1].answer if runs else None)
    _usage(row, runs)
    try:
        score = task.score(setup, runs)
    except Exception as exc:
        row.error = f"scorer: {type(exc).__name__}: {exc}"
        row.traceback = _clip(traceback.format_exc(limit=4), 1000)
        return row
    finally:
        task.teardown(setup)
    row.correct = score.correct
    row.detail = score.detail
    row.precision = score.precision
    row.recall = score.recall
    row.argument_accuracy = score.argument_accuracy
    row.expected_calls = score.expected_calls
    return row


# --- worker processes -------------------------------------------------------------

# What a worker process holds between jobs: its context and the suite's tasks by id.
_WORKER: dict[str, Any] = {}


def _worker_start(config: BenchConfig) -> None:
    context = _Context(
        config.model, base_url=config.base_url, calls=config.calls, traces=config.trace_dir
    )
    _WORKER["context"] = context
    _WORKER["tasks"] = {task.id: task for task in build_tasks(config.suite, config.options)}
    # One loop for every entry: a hosted model's HTTP client keeps its
    # connections bound to the loop that opened them.
    _WORKER["loop"] = asyncio.new_event_loop()
    atexit.register(context.close)


def _worker_run(entry_id: str, convention: str) -> Row:
    context: _Context = _WORKER["context"]
    tasks: dict[str, Task] = _WORKER["tasks"]
    loop: asyncio.AbstractEventLoop = _WORKER["loop"]
    return loop.run_until_complete(_run_entry(tasks[entry_id], convention, context))


def _ends_unfinished(path: Path) -> bool:
    with path.open("rb") as file:
        if file.seek(0, 2) == 0:
            return False
        file.seek(-1, 2)
        return file.read(1) != b"\n"


# --- the bench --------------------------------------------------------------------


class Bench:
    """Runs `config`'s suite and appends a row per task and convention to ``results.jsonl``."""

    def __init__(self, config: BenchConfig, tasks: Sequence[Task] | None = None) -> None:
        if tasks is not None and config.workers > 1 and config.executor == "local":
            raise UsageError("tasks given as objects run in this process: use one worker")
        self.config = config
        self.results = config.out / RESULTS
        self._tasks = list(tasks) if tasks is not None else None
        self._on_wait: Callable[[str], None] | None = None
        #: With a rate limit on Ray: when the shared bucket let each model request
        #: go, on the monotonic clock of the node the bucket ran on, in order.
        self.rate_slots: list[float] = []
        # Resolving the model now turns a bad spec into an error before anything runs.
        self._context = _Context(
            config.model, base_url=config.base_url, calls=config.calls, traces=config.trace_dir
        )

    def tasks(self) -> list[Task]:
        """The tasks given, or the configured suite's."""
        if self._tasks is not None:
            return self._tasks
        return build_tasks(self.config.suite, self.config.options)

    def pending(self, tasks: Sequence[Task]) -> list[tuple[Task, str]]:
        """Task and convention pairs that have no row yet (or only a failed one, when retrying)."""
        done = {
            row.key
            for row in read_rows(self.results)
            if not (self.config.retry_errors and row.status == "error")
        }
        return [
            (task, convention)
            for task in tasks
            for convention in self.config.conventions
            if (task.suite, task.id, convention, self.config.label) not in done
        ]

    def run(
        self,
        on_start: Callable[[int, int], None] | None = None,
        on_row: Callable[[Row], None] | None = None,
        on_wait: Callable[[str], None] | None = None,
    ) -> list[Row]:
        """Run what is pending; `on_start(pending, total)` then `on_row(row)` as rows finish.

        `on_wait(message)` hears why no row has come for a while (on Ray: no free CPU).
        """
        self._on_wait = on_wait
        tasks = self.tasks()
        jobs = self.pending(tasks)
        try:
            self.config.out.mkdir(parents=True, exist_ok=True)
            sink = self.results.open("a", encoding="utf-8")
            # A run killed mid-line left half a row: start ours on a line of its own.
            if _ends_unfinished(self.results):
                sink.write("\n")
        except OSError as exc:
            raise UsageError(f"cannot write {self.results}: {exc.strerror or exc}") from exc
        if self.config.trace_dir is not None:
            try:
                self.config.trace_dir.mkdir(exist_ok=True)
            except OSError as exc:
                sink.close()
                raise UsageError(
                    f"cannot write traces to {self.config.trace_dir}: {exc.strerror or exc}"
                ) from exc
        if on_start is not None:
            on_start(len(jobs), len(tasks) * len(self.config.conventions))
        rows: list[Row] = []
        with sink:
            for row in self._rows(jobs):
                sink.write(json.dumps(row.to_json(), ensure_ascii=False, default=str) + "\n")
                sink.flush()
                rows.append(row)
                if on_row is not None:
                    on_row(row)
        return rows

    def _rows(self, jobs: Sequence[tuple[Task, str]]) -> Iterator[Row]:
        if not jobs:
            return
        if self.config.executor == "ray":
            from ._ray import ray_rows

            yield from ray_rows(
                self.config, jobs, self._tasks, self._on_wait, on_slots=self.rate_slots.extend
            )
        elif self.config.workers == 1:
            yield from self._in_process(jobs)
        else:
            yield from self._in_pool(jobs)

    def _in_process(self, jobs: Iterable[tuple[Task, str]]) -> Iterator[Row]:
        context = self._context
        loop = asyncio.new_event_loop()
        try:
            for task, convention in jobs:
                yield loop.run_until_complete(_run_entry(task, convention, context))
        finally:
            context.close()
            loop.close()

    def _in_pool(self, jobs: Sequence[tuple[Task, str]]) -> Iterator[Row]:
        # Spawned, not forked: the parent may hold threads and a sandbox.
        with ProcessPoolExecutor(
            max_workers=self.config.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_start,
            initargs=(self.config,),
        ) as pool:
            futures = {
                pool.submit(_worker_run, task.id, convention): (task, convention)
                for task, convention in jobs
            }
            for future in as_completed(futures):
                task, convention = futures[future]
                try:
                    yield future.result()
                except Exception as exc:
                    row = _base_row(task, convention, self.config.label)
                    row.error = f"worker: {type(exc).__name__}: {exc}"
                    yield row
