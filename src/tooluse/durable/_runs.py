"""Reading and deciding durable runs from any process: `list_runs`, `show_run`, `approve`.

They talk to the database alone (DBOS's client), so they need no agent and run
nothing: `tooluse runs …` is built on them. `recover` is the one that needs a
durable agent in this process, since it runs what it takes over.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._exceptions import DurableStoreError, NotPendingError, UnknownRunError, UsageError
from .._records import CallRecord
from ._config import Durable, default_url, require_dbos

if TYPE_CHECKING:
    from dbos import DBOSClient

__all__ = ["RunInfo", "StepInfo", "approve", "list_runs", "recover", "show_run"]


@dataclass(frozen=True, slots=True)
class StepInfo:
    """One recorded step of a run: a model request, a call, or a wait."""

    number: int
    kind: str
    """``model``, ``began`` (a write call started), ``call``, ``event`` or ``recv``."""
    summary: str
    ended: bool


@dataclass(frozen=True, slots=True)
class RunInfo:
    """A durable run as its database holds it."""

    id: str
    status: str
    """DBOS's: ``PENDING`` (running, waiting, or stopped by a crash), ``SUCCESS``,
    ``ERROR``, ``CANCELLED`` …"""
    task: str
    worker: str | None
    version: str | None
    answer: str | None = None
    result_status: str | None = None
    """The `RunResult` status of an ended run."""
    steps: tuple[StepInfo, ...] = ()
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The calls waiting for a decision, by call id (their `ApprovalRequest` written)."""


def _url(url: str | None) -> str:
    return Durable(url or default_url()).url


@contextlib.contextmanager
def _client(url: str | None) -> Iterator[DBOSClient]:
    require_dbos("tooluse runs")
    from dbos import DBOSClient

    from ._engine import _engine_kwargs, _first_line, _shown, _sqlalchemy_url, check_schema

    url = _url(url)
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///") :]).is_file():
        raise DurableStoreError(f"no database of durable runs at {url}")
    check_schema(url)
    try:
        import sqlalchemy

        engine = sqlalchemy.create_engine(_sqlalchemy_url(url), **_engine_kwargs(url))
        client = DBOSClient(system_database_engine=engine, retry_connection_errors=False)
    except Exception as exc:
        raise DurableStoreError(
            f"the database of durable runs at {_shown(url)} cannot be used: "
            f"{type(exc).__name__}: {_first_line(exc)}"
        ) from exc
    try:
        yield client
    finally:
        client.destroy()


def _info(status: Any) -> RunInfo:
    inputs = status.input
    args = getattr(inputs, "args", None) or (inputs or {}).get("args", ())
    task = args[1] if len(args) > 1 else ""
    output = status.output if isinstance(status.output, dict) else None
    return RunInfo(
        id=status.workflow_id,
        status=str(status.status),
        task=task,
        worker=status.executor_id,
        version=status.app_version,
        answer=output.get("answer") if output else None,
        result_status=output.get("status") if output else None,
    )


def list_runs(url: str | None = None, *, status: str | None = None) -> list[RunInfo]:
    """The durable runs in the database at ``url`` (the default SQLite file if None),
    oldest first; ``status`` keeps those with that DBOS status (``PENDING`` …)."""
    from ._engine import WORKFLOW

    with _client(url) as client:
        found = client.list_workflows(name=WORKFLOW, status=status)
        return [_info(s) for s in found]


def show_run(run_id: str, url: str | None = None) -> RunInfo:
    """The run ``run_id`` with its recorded steps and the calls waiting for a decision;
    `UnknownRunError` if no run has that id."""
    from ._engine import PENDING_EVENT, WORKFLOW

    with _client(url) as client:
        found = client.list_workflows(workflow_ids=[run_id], name=WORKFLOW)
        if not found:
            raise UnknownRunError(f"no durable run {run_id!r} in {_url(url)}")
        info = _info(found[0])
        steps = tuple(_step(s) for s in client.list_workflow_steps(run_id))
        pending = client.get_event(run_id, PENDING_EVENT, timeout_seconds=0) or {}
        return replace(info, steps=steps, pending=pending if info.status == "PENDING" else {})


def _step(step: Any) -> StepInfo:
    name: str = step["function_name"]
    kind = name.removeprefix("tooluse.").removeprefix("DBOS.")
    output = step["output"]
    ended = step["completed_at_epoch_ms"] is not None or output is not None
    summary = ""
    record = getattr(output, "record", None)
    if isinstance(record, CallRecord):
        summary = f"{record.name}({record.arguments}) -> " + (
            f"error: {record.error}" if record.error else repr(record.result)[:80]
        )
    elif hasattr(output, "key") and kind == "call":
        summary = "in doubt: began before a crash and never ended"
    elif kind == "model" and output is not None:
        calls = ", ".join(c.name for c in getattr(output, "tool_calls", ()))
        summary = f"calls {calls}" if calls else repr((getattr(output, "content", "") or "")[:80])
    elif step["error"] is not None:
        summary = f"error: {step['error']}"
    return StepInfo(step["function_id"], kind, summary, ended)


def approve(
    run_id: str, call_id: str, *, allow: bool, url: str | None = None, reason: str | None = None
) -> None:
    """Decide the call ``call_id`` that run ``run_id`` waits on, from any process.

    The decision is bound to the call's tool and arguments as the run published
    them. Raises `UnknownRunError` for an unknown run and `NotPendingError` for a
    call that does not wait for a decision.
    """
    from ._engine import topic_of

    info = show_run(run_id, url)
    request = info.pending.get(call_id)
    if request is None:
        waiting = ", ".join(f"{c} ({r['tool']})" for c, r in info.pending.items()) or "none"
        raise NotPendingError(
            f"no call {call_id!r} of run {run_id!r} waits for a decision; those that do: {waiting}"
        )
    with _client(url) as client:
        client.send(
            run_id,
            {"key": request["key"], "allow": allow, "reason": reason},
            topic=topic_of(call_id),
        )


def recover(workers: Sequence[str]) -> list[str]:
    """Take over the pending runs that ``workers`` (dead, or stopped) recorded, and run
    them here; their ids. Needs a durable agent in this process, like the one that
    started them (runs of other tools are left to an agent with those)."""
    from ._engine import Engine

    if Engine._current is None:
        raise UsageError("recover runs with a durable agent open in this process")
    return Engine._current.recover(workers)
