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
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from .. import UsageError
from ..models import Model
from ..sandbox import Sandbox
from ._config import (
    CONVENTIONS,
    DEFAULT_CONVENTIONS,
    ORACLE,
    BenchConfig,
    RayOptions,
    model_label,
)
from ._entry import EntryContext, base_row, run_entry
from ._row import Row, read_results, schema_valid_share
from ._suites import build_tasks
from ._task import Task

__all__ = [
    "CONVENTIONS",
    "DEFAULT_CONVENTIONS",
    "ORACLE",
    "Bench",
    "BenchConfig",
    "RayOptions",
    "Row",
    "evaluate",
    "model_label",
    "read_rows",
    "schema_valid_share",
]

RESULTS = "results.jsonl"


def read_rows(path: Path) -> list[Row]:
    """The rows of a results file, the last one winning for each key.

    Rows written by earlier versions load (see `Row.from_json`); lines that are
    not rows at all, such as one cut short by a killed run, are skipped.
    """
    return read_results(path, Row.from_json)


# --- one entry ------------------------------------------------------------------------


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
    context = EntryContext(model, sandbox=sandbox)
    try:
        return await run_entry(task, convention, context)
    finally:
        context.close()


# --- worker processes -------------------------------------------------------------

# What a worker process holds between jobs: its context and the suite's tasks by id.
_WORKER: dict[str, Any] = {}


def _worker_start(config: BenchConfig) -> None:
    context = EntryContext(
        config.model, base_url=config.base_url, calls=config.calls, traces=config.trace_dir
    )
    _WORKER["context"] = context
    _WORKER["tasks"] = {task.id: task for task in build_tasks(config.suite, config.options)}
    # One loop for every entry: a hosted model's HTTP client keeps its
    # connections bound to the loop that opened them.
    _WORKER["loop"] = asyncio.new_event_loop()
    atexit.register(context.close)


def _worker_run(entry_id: str, convention: str) -> Row:
    context: EntryContext = _WORKER["context"]
    tasks: dict[str, Task] = _WORKER["tasks"]
    loop: asyncio.AbstractEventLoop = _WORKER["loop"]
    return loop.run_until_complete(run_entry(tasks[entry_id], convention, context))


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
        self._context = EntryContext(
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
                yield loop.run_until_complete(run_entry(task, convention, context))
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
                    row = base_row(task, convention, self.config.label)
                    row.error = f"worker: {type(exc).__name__}: {exc}"
                    yield row
