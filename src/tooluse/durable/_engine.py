"""Runs as DBOS workflows: the one DBOS of this process, the run's workflow, its steps.

One run is one workflow, its id the run's id. In it, each model request is a step
(the reply recorded), and each tool call is a step (its `CallRecord` recorded);
a write call takes a step before it too, recording that it began, so that a call
which began and never ended is known after a crash: it is *in doubt*. A deferred
approval waits in the workflow for a message (DBOS ``recv``), and the calls
waiting are published as the workflow's ``pending`` event.

On recovery DBOS runs the workflow again from its start, and each step already
recorded returns its recorded output without running: the model is not asked
again, and a call that ended is not executed again. A script is run again in the
sandbox, and its calls are answered from the record up to the first that never
ended. Steps are matched to the record by their place in the run, and DBOS gives
a step its place when it is called, not when it ends: the calls of a durable run
are decided and given their places one at a time in the order they arrive (the
dispatcher's durable path), and then run side by side. Each recorded call also
carries its tool and arguments, and a recovered run that asks for another call at
that place is stopped (`RunDivergedError`), never answered with another call's
result.

DBOS is one per process: the first durable agent fixes the database, the worker
name and the application version (its `fingerprint`); an agent with other tools
in the same process is refused until the others are closed.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from dbos import DBOS, SetWorkflowID

from .. import events as ev
from .._exceptions import DurableStoreError, RunDivergedError, RunVersionError, UsageError
from .._messages import Message
from .._records import CallRecord, call_key
from ..models import Model, ModelRequest, ModelResponse
from ..policy._approval import Approval, ApprovalRequest
from ..tools import Tool
from ._config import Durable

__all__ = ["PENDING_EVENT", "WORKFLOW", "Engine", "Recorder", "Reserved", "RunBody", "topic_of"]

_T = TypeVar("_T")

#: The name of a run's workflow in the database.
WORKFLOW = "tooluse.run"
#: The event a run publishes the calls it waits a decision for under.
PENDING_EVENT = "pending"
#: Seconds one wait for a decision lasts before it is taken up again (recorded as a step).
_WAIT = 24 * 3600.0

#: What runs a task for the agent whose fingerprint names it: given the task, the
#: conversation before it and the run's recorder, it gives the result's written form.
RunBody = Callable[[str, Sequence[Message], "Recorder"], Awaitable[dict[str, Any]]]


def topic_of(call_id: str) -> str:
    """The message topic a decision on ``call_id`` is sent under."""
    return f"approval:{call_id}"


@dataclass(frozen=True, slots=True)
class _InDoubt:
    """The recorded output of a write call found begun and not ended on recovery."""

    key: str


@dataclass(frozen=True, slots=True)
class _Ended:
    """The recorded output of a call: what it was, so a replay can check, and its record."""

    key: str
    record: CallRecord


# --- the steps and the workflow (registered with DBOS at import) ----------------------


@DBOS.step(name="tooluse.model")
async def _model_step(model: Model, request: ModelRequest) -> ModelResponse:
    response = await model.respond(request)
    # What the backend sent on the wire is not recorded: only what the run reads.
    return replace(response, raw=None)


@DBOS.step(name="tooluse.began")
async def _began_step(attempt: str) -> str:
    return attempt


@DBOS.step(name="tooluse.call")
async def _call_step(body: Callable[[], Awaitable[_Ended | _InDoubt]]) -> _Ended | _InDoubt:
    return await body()


@DBOS.workflow(name=WORKFLOW)
async def _run_workflow(agent: str, task: str, history: Sequence[Message]) -> dict[str, Any]:
    body = Engine.body_of(agent)
    run_id = DBOS.workflow_id
    assert run_id is not None
    return await body(task, history, Recorder(run_id))


class Recorder:
    """The record of one execution of a run's workflow (see `DurableCalls`)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        #: This execution of the workflow: a call begun under another one and not
        #: ended is in doubt.
        self.attempt = uuid.uuid4().hex
        # The workflow's own context: a script's calls arrive from the sandbox's thread,
        # and their steps must be recorded in the workflow all the same.
        self._context = contextvars.copy_context()
        self._lock = asyncio.Lock()
        self._pending: dict[str, dict[str, Any]] = {}
        #: Where the run's events go (set by the agent): a wait for a decision is told.
        self.emit: Callable[[ev.Event], None] | None = None

    async def one_at_a_time(self, work: Callable[[], Awaitable[_T]]) -> _T:
        async def alone() -> _T:
            async with self._lock:
                return await work()

        task = asyncio.get_running_loop().create_task(alone(), context=self._context)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.cancel()
            raise

    async def respond(self, model: Model, request: ModelRequest) -> ModelResponse:
        """The model's reply, recorded; the recorded one on recovery."""
        return await _model_step(model, request)

    async def began(self, tool: Tool) -> str:
        """The execution a call began in: recorded for a write call, this one for others."""
        return await _began_step(self.attempt) if tool.effects == "write" else self.attempt

    def reserve(
        self, record: CallRecord, tool: Tool, start: Callable[[], Awaitable[CallRecord]], began: str
    ) -> Reserved:
        """The call's step, its place in the record taken now; it runs in the background.

        DBOS numbers a step when it is called, not when it is awaited: steps called in
        the order their calls arrive keep that order in the record, however long each
        runs, so calls reserved one after the other may run side by side.
        """
        key = call_key(tool.name, record.arguments)
        reserved = Reserved(self, record, tool, key)
        reserved.may_be_in_doubt = began != self.attempt

        async def body() -> _Ended | _InDoubt:
            if began != self.attempt:
                return _InDoubt(key)  # began in an execution that crashed before it ended
            reserved.ran = True
            return _Ended(key, await start())

        step = _call_step(body)  # numbered here, in the workflow's context

        async def run() -> _Ended | _InDoubt:
            return await step

        # A context of its own: a step sets the DBOS context while it runs, and the calls
        # reserved after this one must still see the workflow's.
        reserved.task = asyncio.get_running_loop().create_task(run(), context=self._context.copy())
        return reserved

    def _settle(
        self, reserved: Reserved, output: _Ended | _InDoubt
    ) -> tuple[CallRecord | None, bool]:
        record, tool, key = reserved.record, reserved.tool, reserved.key
        if output.key != key:
            raise RunDivergedError(
                f"run {self.run_id!r} recorded another call at this place than "
                f"{tool.name}({record.arguments}): the agent's tools, its model's replies or "
                "the code changed since the run was recorded; recover it with the agent "
                "that started it"
            )
        if isinstance(output, _InDoubt):
            return None, False
        if reserved.ran:
            return output.record, True
        # From the record: the call keeps its own id in this run (a script numbers its
        # calls again), the rest as it ended.
        return replace(output.record, id=record.id, round=record.round), False

    async def decision(self, request: ApprovalRequest) -> Approval:
        """Publish the request as pending, and wait in the workflow for its decision."""
        self._pending[request.call_id] = {**request.to_dict(), "run": self.run_id}
        await DBOS.set_event_async(PENDING_EVENT, dict(self._pending))
        if self.emit is not None:
            self.emit(ev.ApprovalNeeded((request,)))
        message: Any = None
        while not _fits(message, request):
            message = await DBOS.recv_async(topic_of(request.call_id), timeout_seconds=_WAIT)
        del self._pending[request.call_id]
        await DBOS.set_event_async(PENDING_EVENT, dict(self._pending))
        if message["allow"]:
            return Approval.allow()
        return Approval.deny(message.get("reason") or "denied by the user")


@dataclass(eq=False)
class Reserved:
    """A call whose step has its place in the run's record, running (see `Recorder.reserve`)."""

    recorder: Recorder
    record: CallRecord
    tool: Tool
    key: str
    #: Whether the tool ran in this execution (False: the step came from the record).
    ran: bool = field(default=False, init=False)
    #: A write call begun in an execution that crashed: in doubt unless it ended.
    may_be_in_doubt: bool = field(default=False, init=False)
    task: asyncio.Task[_Ended | _InDoubt] | None = field(default=None, init=False)

    async def ended(self) -> tuple[CallRecord | None, bool]:
        """The call's record and whether it ran now; a None record for a write in doubt."""
        task = self.task
        assert task is not None
        try:
            output = await asyncio.shield(task)
        except asyncio.CancelledError:
            task.cancel()
            raise
        return self.recorder._settle(self, output)


def _fits(message: Any, request: ApprovalRequest) -> bool:
    """Whether ``message`` decides ``request``: bound to its tool and arguments."""
    return isinstance(message, Mapping) and message.get("key") == request.key


# --- the one DBOS of this process -------------------------------------------------------


class Engine:
    """DBOS for this process: launched by the first durable agent, destroyed with the last."""

    _lock: ClassVar[threading.Lock] = threading.Lock()
    _current: ClassVar[Engine | None] = None
    #: What runs the tasks of each fingerprint (the application version) in this process.
    _bodies: ClassVar[dict[str, RunBody]] = {}
    _users: ClassVar[int] = 0

    def __init__(self, durable: Durable, version: str) -> None:
        self.durable = durable
        self.version = version

    @classmethod
    def body_of(cls, agent: str) -> RunBody:
        body = cls._bodies.get(agent)
        if body is None:  # the version DBOS recovers by is the fingerprint: never here
            raise RunVersionError(f"no agent with fingerprint {agent!r} runs in this process")
        return body

    @classmethod
    def open(cls, durable: Durable, version: str, body: RunBody) -> Engine:
        """The process's engine for ``durable``, launched (recovering this worker's
        pending runs) if it is the first; ``body`` runs the tasks of ``version``."""
        with cls._lock:
            current = cls._current
            if current is not None:
                if current.durable != durable or current.version != version:
                    raise UsageError(
                        "one process runs durable agents of one database, worker and set of "
                        f"tools: this one runs {current.durable.url} as {current.version}; "
                        "close those agents first, or run this one in another process"
                    )
                cls._bodies[version] = body
                cls._users += 1
                return current
            cls._bodies[version] = body
            engine = Engine(durable, version)
            try:
                engine._launch()
            except BaseException:
                del cls._bodies[version]
                raise
            cls._current = engine
            cls._users = 1
            return engine

    def _launch(self) -> None:
        config: Any = {
            "name": "tooluse",
            "system_database_url": _sqlalchemy_url(self.durable.url),
            "application_version": self.version,
            "executor_id": self.durable.worker,
            "log_level": "ERROR",
            # DBOS's listener thread sleeps this long between looks, and its shutdown
            # waits for the sleep to end: at its default of 1 s, every durable agent's
            # close took a second. Idle, a look costs nothing (no waiter, no query).
            "notification_listener_polling_interval_sec": 0.1,
            # A Postgres that is down is said within seconds, not after a minute of retries.
            "db_engine_kwargs": _engine_kwargs(self.durable.url),
        }
        check_schema(self.durable.url)
        try:
            DBOS(config=config)
            DBOS.launch()
        except Exception as exc:
            DBOS.destroy()
            raise DurableStoreError(
                f"the database of durable runs at {_shown(self.durable.url)} cannot be used: "
                f"{type(exc).__name__}: {_first_line(exc)}"
            ) from exc

    def release(self) -> None:
        """One agent less; the last one destroys DBOS (its runs stay in the database)."""
        with Engine._lock:
            Engine._users -= 1
            if Engine._users > 0:
                return
            Engine._current = None
            Engine._bodies.clear()
            DBOS.destroy()

    async def run(self, task: str, history: Sequence[Message], run_id: str) -> dict[str, Any]:
        """The run ``run_id``: started, continued if pending, or its recorded result."""
        status = await DBOS.get_workflow_status_async(run_id)
        if status is not None and status.app_version not in (None, self.version):
            raise RunVersionError(
                f"run {run_id!r} was started by an agent with other tools, convention or "
                f"release ({status.app_version}, this agent is {self.version}): recover it "
                "with an agent like the one that started it"
            )
        with SetWorkflowID(run_id):
            return await _run_workflow(self.version, task, list(history))

    @staticmethod
    def recover(workers: Sequence[str]) -> list[str]:
        """Take over the pending runs of ``workers`` (of this engine's version); their ids."""
        handles = DBOS._recover_pending_workflows(list(workers))
        return [h.get_workflow_id() for h in handles]


def check_schema(url: str) -> None:
    """Refuse a database a newer DBOS wrote: this one would read it wrongly, or change it.

    A database that does not exist yet, or cannot be reached, passes: creating it, or
    saying why it cannot be reached, is the launch's to do.
    """
    import sqlalchemy
    from dbos._migration import get_migration_versions, get_sqlite_migration_versions

    engine = sqlalchemy.create_engine(_sqlalchemy_url(url), **_engine_kwargs(url))
    try:
        if url.startswith("sqlite:///"):
            if not Path(url[len("sqlite:///") :]).is_file():
                return
            current, latest = get_sqlite_migration_versions(engine)
        else:
            current, latest = get_migration_versions(engine, "dbos", True)
    except sqlalchemy.exc.SQLAlchemyError:
        return
    finally:
        engine.dispose()
    if current > latest:
        raise DurableStoreError(
            f"the database of durable runs at {_shown(url)} was written by a newer release "
            f"of DBOS (its schema is at version {current}, this one reads up to {latest}): "
            "upgrade dbos; the database is left as it is"
        )


def _sqlalchemy_url(url: str) -> str:
    # DBOS drives Postgres through psycopg 3: a bare postgresql:// would ask for psycopg2.
    for bare in ("postgresql://", "postgres://"):
        if url.startswith(bare):
            return "postgresql+psycopg://" + url[len(bare) :]
    return url


def _engine_kwargs(url: str) -> dict[str, Any]:
    if url.startswith(("postgresql://", "postgres://")):
        return {"connect_args": {"connect_timeout": 5}}
    return {}


def _shown(url: str) -> str:
    """The URL without its password."""
    head, at, tail = url.rpartition("@")
    if not at or ":" not in head.split("//", 1)[-1]:
        return url
    scheme, _, user_password = head.partition("//")
    return f"{scheme}//{user_password.split(':', 1)[0]}:***@{tail}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
