"""One entry of a sweep: run a task in one convention and score it into a row.

Shared by every executor (this process, a process pool, Ray): each holds an
`EntryContext` and calls `run_entry`.
"""

from __future__ import annotations

import re
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from ..conventions import get_convention
from ..models import Model, resolve_model
from ..run._result import RunResult
from ..run._searching import search_on
from ..sandbox import Sandbox
from ._config import ORACLE, model_label
from ._driver import CallPolicy, Transcript, run_setup
from ._oracle import OracleModel, oracle_for
from ._row import Row, schema_valid_share
from ._task import BenchDataError, Setup, Task
from ._toolsearch import pad_setup, searching_oracle

__all__ = ["EntryContext", "base_row", "run_entry"]

_STATUS_ORDER = ("cancelled", "error", "max_rounds", "cycle", "truncated", "completed")


class EntryContext:
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
        folder = self.traces / file_name(convention)
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{file_name(task.id)}.jsonl"

    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = Sandbox()
        return self._sandbox

    def close(self) -> None:
        if self._sandbox is not None and self._owns_sandbox:
            self._sandbox.close()
            self._sandbox = None


def file_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip(".") or "_"


def base_row(task: Task, convention: str, model: str) -> Row:
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


async def run_entry(task: Task, convention: str, context: EntryContext) -> Row:
    """Run one task in one convention and score it; every failure ends up in the row."""
    row = base_row(task, convention, context.label)
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
