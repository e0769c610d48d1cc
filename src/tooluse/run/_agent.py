"""`Agent`: the drivers that run the loop of `_loop.py` against a model and tools."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
import traceback
import uuid
import warnings
from collections import deque
from collections.abc import (
    AsyncGenerator,
    Callable,
    Coroutine,
    Generator,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from .. import events as ev
from .._closing import Closing
from .._eventloop import PrivateLoop
from .._exceptions import AlreadyResumedError, ModelError, ResumeError, UsageError
from .._expect import Expect, check_expectations, check_tools
from .._messages import Message
from .._records import CallRecord, Outcome
from .._tokens import count_tokens
from ..context._store import ContextStore
from ..context._window import ContextPolicy, ContextWindow
from ..conventions import Convention, get_convention
from ..dispatch._dispatch import Dispatcher
from ..dispatch._handles import Handles
from ..dispatch._scripts import ScriptRunner, outside_a_loop
from ..models import CallDelta, Delta, Model, ToolChoice
from ..policy._approval import (
    Approval,
    ApprovalPolicy,
    AskWhenInDoubt,
    Gate,
    PolicyFunction,
    as_decision,
    as_policy,
    call_key,
)
from ..policy._approval_store import PROCESS_STORE, ApprovalStore
from ..policy._provenance import Provenance
from ..policy._scope import AllowInScope, ask_scope
from ..sandbox import IsolationMode, Sandbox
from ..search import SearchMode, SearchRun, ToolSearch
from ..tools import Tool, Toolbox
from ..tools._output import OutputSpec, OutputTool, output_tool
from ._limits import Limits
from ._loop import (
    AskModel,
    Effect,
    LoopConfig,
    RunCalls,
    RunScript,
    RunState,
    agent_flow,
    keep_unrecorded,
)
from ._otel import check_otel, otel_enabled, otel_sink
from ._result import RunResult
from ._searching import more_tools_note, render_for, search_on, search_tool_name
from ._state import Paused
from ._stream import RunStream, SyncRunStream, open_stream
from ._trace import EventSink, JsonlTrace, TypedSink, as_dict_sink

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from ..durable._config import Durable
    from ..durable._engine import Engine, Recorder

__all__ = ["Agent"]

_Out = TypeVar("_Out")


class Agent(Closing):
    """Runs a task: asks the model, executes the calls it makes, until it answers.

    Args:
        model: the backend to ask.
        tools: a `Toolbox`, or tools / typed functions to put in one.
        convention: ``"json"`` (native function calling) or a `Convention`.
        max_rounds: model requests at most; then the run stops with status
            ``max_rounds``.
        system_prompt: text put first in the conversation.
        output_type: the type of the run's result (a pydantic model, a dataclass,
            a TypedDict, or a type such as ``int`` or a ``Literal``): the run
            ends only when the model hands over a value that validates, which
            `RunResult.output` holds (see docs/output.md). A run's own
            ``output_type`` wins over this one.
        limits: the run's other bounds: timeouts of tools and scripts, calls
            at once and per reply, and repeats that end it (see `Limits`;
            None: its defaults).
        count_tokens: count tokens offline (o200k) when the backend reports none.
        trace: a path to append JSON Lines trace events to.
        on_event: called with every trace event.
        sandbox: where scripts run (code convention); by default the agent
            starts its own on first use and stops it in `close`.
        isolation: the isolation of the agent's own sandbox: ``auto`` (the
            strongest available, with a warning if that is none),
            ``required`` (refuse to run scripts unisolated) or ``none``.
        context: a hard token budget for what the model sees, with the context
            tools (see `ContextPolicy`); None sends the whole conversation.
        tool_choice: for conventions that pass tools natively (json):
            ``required`` or a tool's name makes the model call (that tool)
            until a call has run, then the choice is the model's again, so
            it can answer; None leaves it to the convention (``auto``).
        parallel_tool_calls: False asks the model for at most one call per
            reply (backends that support it); None leaves the backend's default.
        check_answers: check the model's final answer against the run's
            results: an answer whose comparison its own numbers refute (``92
            EUR is not enough for the 85 EUR room``), or that asks the task
            back as a question, is sent one note a run saying so, and the model answers
            again, in a round of `max_rounds` (see docs/models.md). Each check
            is told as an `AnswerChecked` event. None (the default) takes the
            model's own default,
            `Model.check_answers`: on for the local models the registry
            measured it on, off for every other.
        approval: decides on calls before they run, the model's and its
            scripts' alike: a callable taking an `ApprovalRequest` and returning
            an `Approval` (or True / False), an `ApprovalPolicy`, or
            ``"provenance"`` (a `ProvenancePolicy` that denies a side-effecting
            call whose arguments only untrusted tool results supplied). None runs
            every valid call. See `resume` for a deferred call.
        approval_store: where resumed pauses are written down, so that each
            paused state is resumed once (`ApprovalStore`): a path to a SQLite
            file that processes share, or a store. None: this process's memory,
            shared by its agents.
        scope: the tools with side effects a run may call, fixed before it reads
            anything: an iterable of tool names, or ``"ask"`` to have the
            model name them from the task alone, in one request before the
            first round. A call to any other tool with side effects is denied,
            in JSON, plans and scripts alike. None: no limit. See `tooluse.policy._scope`.
        tool_search: ``always`` defers the toolbox: the model starts with the
            ``always_loaded`` tools and a search tool (``tool_search(query,
            top_k=5)``; ``tools.search(query)`` in scripts) that loads the tools
            it finds; ``auto`` does so when there are more than 30 tools or
            their schemas would take more than 10% of the token budget (the
            context policy's, else 128,000); ``never`` shows every tool. None:
            ``always`` for a `Toolbox` made with ``defer=True``, else ``never``.
        always_loaded: names of tools shown from the start under tool search.
        otel: export OpenTelemetry GenAI spans of each run (needs the ``otel``
            extra): True, or a `TracerProvider` to export to; None follows
            ``TOOLUSE_OTEL=1``. See `tooluse.run._otel` for the spans.
        durable: record each run as it goes, so that a run a crash stopped is
            finished by the next process that starts this agent (needs the
            ``durable`` extra): True (an SQLite file, see
            `tooluse.durable.default_url`), ``"sqlite:///path"``,
            ``"postgresql://…"`` (workers sharing one database), or a
            `tooluse.durable.Durable`. Model replies and the calls that ended are
            taken from the record, never asked or run again; a write call caught
            mid-way goes to the approval policy as in doubt (with no policy, it
            waits for a decision: `tooluse runs approve`). See docs/durable.md.

    Close the agent (``with Agent(...) as agent:``, or `close`) to stop its
    sandbox; an agent that never ran a script holds nothing.
    """

    def __init__(
        self,
        model: Model,
        tools: Toolbox | Iterable[Tool | Callable[..., Any]] = (),
        *,
        convention: str | Convention = "json",
        max_rounds: int = 10,
        system_prompt: str | None = None,
        output_type: Any = None,
        limits: Limits | None = None,
        count_tokens: bool = True,
        trace: str | Path | None = None,
        on_event: EventSink | None = None,
        sandbox: Sandbox | None = None,
        isolation: IsolationMode = "auto",
        context: ContextPolicy | None = None,
        tool_choice: ToolChoice | None = None,
        parallel_tool_calls: bool | None = None,
        check_answers: bool | None = None,
        approval: ApprovalPolicy | PolicyFunction | str | None = None,
        tool_search: SearchMode | None = None,
        always_loaded: Iterable[str] = (),
        otel: bool | TracerProvider | None = None,
        scope: Literal["ask"] | Iterable[str] | None = None,
        approval_store: ApprovalStore | str | Path | None = None,
        durable: bool | str | Durable | None = None,
    ) -> None:
        if max_rounds < 1:
            raise UsageError("max_rounds must be at least 1")
        self.limits = limits if limits is not None else Limits()
        self.approval = as_policy(approval)
        self._engine: Engine | None = None
        self._owns_approval_store = isinstance(approval_store, str | Path)
        self.approval_store = (
            ApprovalStore(approval_store)
            if isinstance(approval_store, str | Path)
            else approval_store or PROCESS_STORE
        )
        self.model = model
        self.tools = tools if isinstance(tools, Toolbox) else Toolbox(tools)
        self.scope: Literal["ask"] | frozenset[str] | None = (
            scope if scope is None or scope == "ask" else self.tools.named(scope, "scope")
        )
        self.convention = get_convention(convention)
        self.system_prompt = system_prompt
        self.output = OutputSpec.of(output_type) if output_type is not None else None
        if tool_choice not in (None, "auto", "none", "required") and tool_choice not in self.tools:
            raise UsageError(f"tool_choice={tool_choice!r} names no tool; have: {self.tools.names}")
        if tool_choice not in (None, "auto") and not self.convention.native_tools:
            raise UsageError(
                "tool_choice needs a convention that passes tools natively (json), "
                f"not {self.convention.name}"
            )
        self.config = LoopConfig(
            max_rounds=max_rounds,
            cycle_limit=self.limits.cycle_limit,
            count_tokens=count_tokens,
            tool_choice=tool_choice,
            parallel_tool_calls=parallel_tool_calls,
            tool_names=frozenset(
                [*self.tools.names, *(s.function for s in self.tools.stub_signatures())]
            ),
            check_answers=(
                bool(getattr(model, "check_answers", False))
                if check_answers is None
                else check_answers
            ),
        )
        self.trace = Path(trace) if trace is not None else None
        self.on_event = on_event
        self._sandbox = sandbox
        self._owns_sandbox = sandbox is None
        self.isolation: IsolationMode = isolation
        self.context = context
        if context is not None and context.agent_tools:
            # The context tools join these in every run: refuse a name clash now.
            with ContextStore() as scratch:
                self.tools.merged(Toolbox(ContextWindow(context, scratch, len).tools()))
        self._store: ContextStore | None = None
        self._search = self._tool_search(tool_search, always_loaded)
        self.otel = otel_enabled() if otel is None else otel
        if self.otel is True:
            check_otel()  # a missing extra is said now, not at the first run
        if durable is not None and durable is not False:
            self._make_durable(durable)

    def _make_durable(self, durable: bool | str | Durable) -> None:
        """Open the process's durable engine, which recovers this worker's pending runs."""
        from ..durable._config import as_durable, fingerprint, require_dbos

        spec = as_durable(durable)
        assert spec is not None
        require_dbos("Agent(durable=...)")
        from ..durable._engine import Engine

        if self.approval is None:
            # A write call in doubt after a crash is never run again unasked.
            self.approval = AskWhenInDoubt()
        self._engine = Engine.open(
            spec, fingerprint(self.tools, self.convention.name), self._durable_body
        )

    @property
    def durable(self) -> Durable | None:
        """Where this agent records its runs (None: it does not)."""
        return self._engine.durable if self._engine is not None else None

    async def _durable_body(
        self, task: str, history: Sequence[Message], recorder: Recorder
    ) -> dict[str, Any]:
        """One execution of a durable run's workflow: the run, its steps recorded."""
        expect, deps, output = _DURABLE_CALL.get()
        run = self._open(task, expect, deps=deps, output=output, durable=recorder)
        result = await self._awaited(run, history)
        while result.status == "needs_approval" and result.paused is not None:
            # A script's deferred call paused it, as in a plain run: no script runs while
            # the decision is waited for, here, in the run's record, however long it
            # takes. The script then runs again, its answered calls served from the
            # record, and the paused call meets its decision.
            decisions = {p.call_id: await recorder.decision(p) for p in result.pending}
            run = self._reopen(result, decisions, expect, deps, output, durable=recorder)
            result = await self._awaited(run)
        return result.to_dict()

    async def _durable_run(
        self,
        task: str,
        run_id: str | None,
        expect: Expect | Sequence[Expect],
        history: Sequence[Message],
        deps: Any,
        *,
        output_type: Any = None,
    ) -> RunResult:
        engine = self._engine
        assert engine is not None
        # Not part of the record: a run recovered by another process runs without them
        # (a run's own output type included; the agent's is the agent's).
        token = _DURABLE_CALL.set((expect, deps, output_type))
        try:
            data = await engine.run(task, history, run_id or uuid.uuid4().hex)
        finally:
            _DURABLE_CALL.reset(token)
        typed = output_type or (self.output.type if self.output is not None else None)
        return RunResult.from_dict(data, output_type=typed)

    def _tool_search(
        self, mode: SearchMode | None, always_loaded: Iterable[str]
    ) -> ToolSearch | None:
        if mode is None:
            mode = "always" if self.tools.defer else "never"
        if mode not in ("auto", "always", "never"):
            raise UsageError(f"tool_search must be 'auto', 'always' or 'never', not {mode!r}")
        always = self.tools.named(always_loaded, "always_loaded")
        budget = self.context.budget if self.context is not None else None
        if not search_on(mode, self.tools, budget):
            return None
        return ToolSearch(always)

    def sandbox(self) -> Sandbox:
        """The sandbox scripts run in (started on first use)."""
        if self._sandbox is None:
            self._sandbox = Sandbox(isolation=self.isolation)
        return self._sandbox

    def close(self) -> None:
        """Stop the agent's own sandbox, if it started one, and its own approval store."""
        if self._sandbox is not None and self._owns_sandbox:
            self._sandbox.close()
            self._sandbox = None
        if self._owns_approval_store:
            self.approval_store.close()
        if self._engine is not None:
            self._engine.release()
            self._engine = None

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    # A run given its own output type has a result typed by it; with the agent's, `output` is Any.
    @overload
    def run(
        self,
        task: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        history: Sequence[Message] = (),
        deps: Any = None,
        output_type: type[_Out],
        run_id: str | None = None,
    ) -> RunResult[_Out]: ...
    @overload
    def run(
        self,
        task: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        history: Sequence[Message] = (),
        deps: Any = None,
        output_type: Any = None,
        run_id: str | None = None,
    ) -> RunResult: ...
    def run(
        self,
        task: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        history: Sequence[Message] = (),
        deps: Any = None,
        output_type: Any = None,
        run_id: str | None = None,
    ) -> RunResult:
        """Run `task` to completion (blocking). Use `arun` inside an event loop.

        `expect` states what a complete answer needs (see `Expect`); a run that
        answers without it ends with status ``truncated``. `history` continues
        a conversation: pass the `messages` of the previous result (or use
        `Conversation`). `deps` is given to every tool that takes a
        `RunContext`, on the host: no model or script sees it. `output_type`
        sets this run's output type, in place of the agent's (see `Agent`).

        Ctrl-C ends the run, and `run` returns its result with status
        ``cancelled``: every call that ended is kept, those of the turn or
        script the interrupt cut included, and the caller decides whether to
        stop. A tool given up on (timed out, or cut by the interrupt) is never
        waited for, whatever it does with its cancellation.

        For a durable agent, `run_id` names the run (a new id if None): an id
        that names a pending run continues it, one that names an ended run gives
        its recorded result, as a workflow id does in DBOS. `expect` and `deps`
        are not recorded: a run recovered by another process runs without them.
        """
        outside_a_loop("Agent.run()", "await Agent.arun()")
        if self._engine is not None:
            with PrivateLoop() as loop:
                return loop.run(
                    self._durable_run(task, run_id, expect, history, deps, output_type=output_type)
                )
        _no_run_id(run_id)
        return self._blocking(self._open(task, expect, deps=deps, output=output_type), history)

    @overload
    async def arun(
        self,
        task: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        history: Sequence[Message] = (),
        deps: Any = None,
        output_type: type[_Out],
        run_id: str | None = None,
    ) -> RunResult[_Out]: ...
    @overload
    async def arun(
        self,
        task: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        history: Sequence[Message] = (),
        deps: Any = None,
        output_type: Any = None,
        run_id: str | None = None,
    ) -> RunResult: ...
    async def arun(
        self,
        task: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        history: Sequence[Message] = (),
        deps: Any = None,
        output_type: Any = None,
        run_id: str | None = None,
    ) -> RunResult:
        """Run `task` to completion (see `run`, and its `run_id` for a durable agent).

        Cancelled (``task.cancel()``, a timeout around it), the run ends with
        status ``cancelled`` and the `asyncio.CancelledError` propagates, as
        asyncio's timeouts and task groups need; the partial `RunResult` is
        the exception's ``result`` attribute.
        """
        if self._engine is not None:
            return await self._durable_run(
                task, run_id, expect, history, deps, output_type=output_type
            )
        _no_run_id(run_id)
        return await self._awaited(self._open(task, expect, deps=deps, output=output_type), history)

    def stream(
        self,
        task: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        history: Sequence[Message] = (),
        deps: Any = None,
        output_type: Any = None,
    ) -> RunStream:
        """Run `task` as `arun` does, giving its events as they happen.

        ``async for event in agent.stream(task)``: each event is one of
        `tooluse.events`, with a ``kind`` (``text``, ``call_start``,
        ``call_end``, ``script_start``, ``script_output``, ``script_end``,
        ``context``, ``approval``, ``round_end``); the ends of calls and scripts,
        context moves and approval requests are the very events the trace
        writes. The last, `DoneEvent` (``done``), carries the `RunResult` that
        `run` returns for the same replies. The run goes on only while the
        consumer does: no call or script starts until every event before it
        was taken, and no model request goes out while the consumer is away,
        so leaving the loop early stops the run, even with the stream still
        held. Its result,
        status ``cancelled``, is `RunStream.result` once the stream is closed
        (``await stream.aclose()``) or the task cancelled, and keeps every call
        that ended.
        """
        return self._stream(self._open(task, expect, deps=deps, output=output_type), history)

    def stream_sync(
        self,
        task: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        history: Sequence[Message] = (),
        deps: Any = None,
        output_type: Any = None,
    ) -> SyncRunStream:
        """`stream` for code without an event loop: ``for event in agent.stream_sync(task)``.

        Leaving the loop early stops the run (`SyncRunStream.close` returns its
        result); Ctrl-C ends the events with a ``done`` whose result has status
        ``cancelled``, as `run` returns one.
        """
        outside_a_loop("Agent.stream_sync()", "use Agent.stream()")
        run = self._open(task, expect, deps=deps, output=output_type)
        return SyncRunStream(self._stream(run, history))

    def resume(
        self,
        result: RunResult,
        decisions: Mapping[str, bool | Approval | Mapping[str, Any]],
        *,
        expect: Expect | Sequence[Expect] = (),
        deps: Any = None,
        output_type: Any = None,
    ) -> RunResult:
        """Continue a run that stopped with status ``needs_approval``.

        ``decisions`` gives one decision per pending call, by its ``call_id``:
        True (run it), False (do not; the model is told the user denied it), an
        `Approval`, or a dict of arguments to run it with instead. Each decision
        is bound to the call's tool and arguments and used once. The run goes on
        where it stopped: the rest of its turn, or its script, re-run to the
        paused call with the earlier calls answered from the record (see
        `ScriptRunner`). ``result`` may come from `RunResult.from_dict`, in
        another process; the agent must have the same tools and policy.
        ``deps`` and ``output_type`` are not part of the paused state: give
        them again (the agent's output type is used otherwise).

        Raises `ResumeError`, with nothing run, if the run did not stop for
        approval or the decisions do not fit its pending calls, and
        `AlreadyResumedError` if this paused state, or any copy of it, was
        resumed already: the pause is written to the agent's `ApprovalStore`
        before anything runs, so each approval is used once.
        """
        outside_a_loop("Agent.resume()", "await Agent.aresume()")
        return self._blocking(self._reopen(result, decisions, expect, deps, output_type))

    async def aresume(
        self,
        result: RunResult,
        decisions: Mapping[str, bool | Approval | Mapping[str, Any]],
        *,
        expect: Expect | Sequence[Expect] = (),
        deps: Any = None,
        output_type: Any = None,
    ) -> RunResult:
        """`resume`, for async code (cancelled, it behaves as `arun` does)."""
        return await self._awaited(self._reopen(result, decisions, expect, deps, output_type))

    def resume_stream(
        self,
        result: RunResult,
        decisions: Mapping[str, bool | Approval | Mapping[str, Any]],
        *,
        expect: Expect | Sequence[Expect] = (),
        deps: Any = None,
        output_type: Any = None,
    ) -> RunStream:
        """`aresume`, giving the resumed run's events as `stream` does.

        The decisions are checked at once: `ResumeError` is raised here, with
        nothing run, where `resume` would raise it. The events are those of
        the run from where it stopped; the ``done`` event's result holds the
        whole run, as `resume` returns it.
        """
        return self._stream(self._reopen(result, decisions, expect, deps, output_type))

    def resume_stream_sync(
        self,
        result: RunResult,
        decisions: Mapping[str, bool | Approval | Mapping[str, Any]],
        *,
        expect: Expect | Sequence[Expect] = (),
        deps: Any = None,
        output_type: Any = None,
    ) -> SyncRunStream:
        """`resume_stream` for code without an event loop, as `stream_sync` is to `stream`."""
        outside_a_loop("Agent.resume_stream_sync()", "use Agent.resume_stream()")
        run = self._reopen(result, decisions, expect, deps, output_type)
        return SyncRunStream(self._stream(run))

    def _reopen(
        self,
        result: RunResult,
        decisions: Mapping[str, bool | Approval | Mapping[str, Any]],
        expect: Expect | Sequence[Expect],
        deps: Any = None,
        output: Any = None,
        *,
        durable: Recorder | None = None,
    ) -> _Run:
        """A run restored from a paused result, its decisions granted; nothing runs yet.

        With ``durable``, the decisions were taken from the run's record, which holds
        each once: the approval store is not asked.
        """
        paused = result.paused
        if result.status != "needs_approval" or paused is None:
            raise ResumeError(
                f"the run ended with status {result.status!r}: only a run that stopped "
                "with status 'needs_approval' can be resumed"
            )
        if result.resumed:
            raise AlreadyResumedError(
                "this paused run was resumed already, and each approval is used once; "
                "resume the result that run returned"
            )
        if self.approval is None:
            raise ResumeError("this agent has no approval policy: resume with the one that paused")
        granted = _granted(result, decisions)
        if durable is not None:
            run = self._open(
                paused.task, expect, paused=paused, deps=deps, output=output, durable=durable
            )
        else:
            # Written down before anything runs: a copy of this state, here or in a process
            # sharing the store, is refused from now on (AlreadyResumedError).
            self.approval_store.claim(paused.id, task=paused.task, decisions=sorted(decisions))
            try:
                run = self._open(paused.task, expect, paused=paused, deps=deps, output=output)
            except BaseException:
                self.approval_store.release(paused.id)  # nothing ran: the pause is still unused
                raise
        gate = run.dispatcher.gate
        assert gate is not None
        for key, decision in granted:
            gate.grant(key, decision)
        run.state.restore(result)
        run.approvals_before = tuple(result.approvals)
        run.emit(ev.ApprovalDecided(tuple(sorted(decisions))))
        return run

    def _open(
        self,
        task: str,
        expect: Expect | Sequence[Expect],
        *,
        paused: Paused | None = None,
        deps: Any = None,
        output: Any = None,
        durable: Recorder | None = None,
    ) -> _Run:
        """Start recording a run: its trace, its tools and its dispatcher.

        `output` is the run's output type, if not the agent's.
        """
        if self._engine is not None and durable is None:
            raise UsageError(
                "a durable agent's runs are recorded through run() and arun() only: "
                "streaming or resuming one would run outside its record"
            )
        sinks: list[TypedSink] = []
        writer = JsonlTrace(self.trace) if self.trace is not None else None
        if writer is not None:
            sinks.append(writer)
        if self.on_event is not None:
            sinks.append(as_dict_sink(self.on_event))
        if self.otel is not False:
            sinks.append(otel_sink(None if self.otel is True else self.otel))
        window: ContextWindow | None = None
        tools = self.tools
        if self.context is not None:
            if self._store is None:
                self._store = self.context.store or ContextStore(":memory:")
            window = ContextWindow(self.context, self._store, count_tokens)
            if self.context.agent_tools:
                tools = self.tools.merged(Toolbox(window.tools()))
        gate: Gate | None = None
        if self.approval is not None or self.scope is not None:
            gate = Gate(self.approval or AllowInScope(), task=task)
            if isinstance(self.scope, frozenset):
                gate.scope = self.scope
            if paused is not None:
                gate.remember_denials(paused.denied)
                if paused.provenance is not None and gate.provenance is not None:
                    gate.provenance = Provenance.from_dict(paused.provenance)
                if paused.scope is not None:
                    gate.scope = frozenset(paused.scope)
            elif gate.provenance is not None and self.system_prompt:
                gate.provenance.trust(self.system_prompt)
        expectations = [expect] if isinstance(expect, Expect) else list(expect)
        check_tools(expectations, self.tools)
        convention = self.convention.for_run(task, expectations, model=self.model.name)
        spec = OutputSpec.of(output) if output is not None else self.output
        ending: OutputTool | None = None
        if spec is not None:
            # A tool of this run only: its name and shape follow who calls the tools.
            ending = output_tool(spec, convention.caller, tools)
            tools = tools.merged(Toolbox([ending]))
        shown: Toolbox | None = None
        searching: SearchRun | None = None
        if self._search is not None:
            context_tools = [t.name for t in tools if t.name not in self.tools]
            searching = self._search.open(
                self.tools,
                render=render_for(convention),
                name=search_tool_name(convention, tools),
                also_loaded=context_tools,
                callable_now=convention.caller == "script",
            )
            shown = Toolbox([*searching.initial, *(t for t in tools if t.name in context_tools)])
            tools = tools.merged(Toolbox([searching.tool]))
        # Every outcome as it is made: what a stopped turn or script ended is kept from here.
        ended: list[Outcome] = []
        handles: Handles | None = None
        # A durable run's handles are tagged by its id: a recovered run makes the same ones.
        handles_of = durable.run_id if durable is not None else None
        if self.context is not None:
            # The window's 3 characters a token.
            handles = Handles(self.context.result_limit * 3, handles_of)
        elif self.limits.result_limit is not None:
            handles = Handles(self.limits.result_limit, handles_of)
        dispatcher = Dispatcher(
            tools,
            timeout=self.limits.tool_timeout,
            max_concurrency=self.limits.max_concurrency,
            max_calls_per_turn=self.limits.max_calls_per_turn,
            max_argument_bytes=self.config.max_argument_chars,
            gate=gate,
            unloaded=searching.refusal if searching is not None else None,
            on_ended=ended.append,
            deps=deps,
            durable=durable,
            handles=handles,
        )
        run = _Run(
            self,
            convention=convention,
            sinks=sinks,
            writer=writer,
            expectations=expectations,
            tools=tools,
            dispatcher=dispatcher,
            task=task,
            ended=ended,
            paused=paused,
            output=ending,
        )
        run.durable = durable
        if durable is not None:
            durable.emit = run.emit
            # Told once the decision is awaited in the record, where `approve` finds it.
            run.state.tells_pending = False
        run.state.context = window
        run.state.handles = handles
        if searching is not None:
            run.searching = searching
            run.shown = shown
            run.system_prompt = "\n\n".join(
                p for p in (self.system_prompt, more_tools_note(convention, searching)) if p
            )
            run.state.extra_tools = searching.found
        if gate is not None:
            state = run.state
            gate.messages = lambda: state.messages
        run.emit(
            ev.RunStart(
                task,
                self.model.name,
                convention.name,
                tuple(tools.names),
                convention.chosen_by or None,
                tuple(sorted(gate.scope)) if gate is not None and gate.scope else None,
            )
        )
        return run

    # --- the one core, and the ways of playing it ------------------------------------

    def _blocking(self, run: _Run, history: Sequence[Message] = ()) -> RunResult:
        """`run` played to its end on a private event loop; Ctrl-C ends it ``cancelled``."""
        try:
            # The first Ctrl-C cancels the run, and KeyboardInterrupt is raised once the
            # run has unwound; a tool given up on is left behind, never waited for.
            with PrivateLoop(lambda: run.dispatcher.left_behind) as loop:
                loop.run(_drain(self._play(run, history)))
        except KeyboardInterrupt:
            return run.end(interrupted=True)
        return run.end()

    async def _awaited(self, run: _Run, history: Sequence[Message] = ()) -> RunResult:
        """`run` played to its end in this task; a cancellation carries the result."""
        try:
            await _drain(self._play(run, history))
        except (asyncio.CancelledError, KeyboardInterrupt) as exc:
            # The exception must stay asyncio's own, so the result rides on it.
            exc.result = run.end(interrupted=True)  # type: ignore[union-attr]
            raise
        return run.end()

    def _stream(self, run: _Run, history: Sequence[Message] = ()) -> RunStream:
        """`run` played watched: its streamed events, then its result."""
        run.watch()
        return open_stream(run, self._play(run, history))

    async def _play(self, run: _Run, history: Sequence[Message]) -> AsyncGenerator[ev.Event, None]:
        """Drive the loop until it ends, giving the events of a watched run as they are made.

        Every entry point plays this. Sinks take each traced event the moment it is
        made; a watched run (`_Run.watch`) also gives its streamed events here, and as
        a generator goes on only while they are taken: nothing starts, and no model
        request goes out, before its consumer asked for the event after every earlier
        one. A cancellation, or the generator closed, stops the run where it is; any
        other failure ends it with status ``error``.
        """
        state = run.state
        live = _Live(run)
        runner: ScriptRunner | None = None
        # The loop's own steps run in one context whichever task asks for the next event:
        # a convention keeps what it learns of the run there (`PerRun`).
        own = contextvars.copy_context()
        try:
            flow = await self._flow(run, history, own)
            effect = _advance(own, flow, None)
            while effect is not None:
                live.before(effect)
                while run.outbox:  # the events so far, taken before anything new starts
                    yield run.outbox.popleft()
                reply: Any
                if isinstance(effect, AskModel):
                    try:
                        if run.durable is not None:
                            reply = await run.durable.respond(self.model, effect.request)
                        elif run.watched:
                            answer: list[Any] = []
                            asking = self.model.respond_stream(effect.request, live.delta)
                            async with contextlib.aclosing(_meanwhile(run, asking, answer)) as made:
                                async for event in made:
                                    yield event
                            reply = answer[0]
                        else:
                            reply = await self.model.respond(effect.request)
                    except ModelError as exc:
                        effect = _advance(own, flow, exc)
                        continue
                elif isinstance(effect, RunCalls):
                    reply = await run.dispatcher.run(
                        effect.calls, round_=effect.round, source=effect.source
                    )
                elif isinstance(effect, RunScript):
                    if runner is None:
                        runner = ScriptRunner(
                            run.tools,
                            run.dispatcher,
                            self.sandbox(),
                            timeout=self.limits.script_timeout,
                        )
                    answer = []
                    running = runner.run(
                        effect.code,
                        script_id=effect.id,
                        round_=effect.round,
                        repairs=effect.repairs,
                        replay=effect.replay,
                        awaited=effect.awaited,
                        on_output=live.output,
                        on_call=live.script_call,
                    )
                    async with contextlib.aclosing(_meanwhile(run, running, answer)) as made:
                        async for event in made:
                            yield event
                    live.script_ends(effect)
                    reply = answer[0]
                else:
                    raise TypeError(f"unknown effect {effect!r}")
                effect = _advance(own, flow, reply)
            live.finished()
        except Exception as exc:
            # The host never crashes on a run: whatever broke, the state so far is kept.
            state.status = "error"
            state.error = f"{type(exc).__name__}: {exc}"
            run.emit(ev.InternalError(traceback.format_exc()))
        run.played = True
        while run.outbox:
            yield run.outbox.popleft()

    async def _flow(self, run: _Run, history: Sequence[Message], own: contextvars.Context) -> Flow:
        """The loop of `run`, set up: what it trusts and has loaded, and its scope."""
        state = run.state
        paused = run.paused
        gate = run.dispatcher.gate
        if gate is not None and gate.provenance is not None and paused is None:
            for earlier in history:
                if not earlier.content:
                    continue
                if earlier.role in ("system", "user"):
                    gate.provenance.trust(earlier.content)
                elif earlier.role == "tool":
                    # A result of an earlier run: trusted only from a tool known to be.
                    known = run.tools.get(earlier.name or "")
                    trusted = known is not None and known.trust == "trusted"
                    gate.provenance.note(earlier.name or "tool", earlier.content, trusted=trusted)
        if run.searching is not None:
            # Tools the conversation called already (an earlier run, a resumed one) stay loaded.
            said = [*history, *state.messages]
            run.searching.load(c.name for m in said for c in m.tool_calls if c.name in self.tools)
        if gate is not None and self.scope == "ask" and paused is None:
            await self._ask_scope(run, gate, run.task)
        shown = (run.shown or run.tools).callable_by(run.convention.caller)
        prepared = own.run(run.convention.prepare, shown, run.system_prompt)
        return agent_flow(
            state,
            run.task,
            prepared,
            run.convention,
            self.config,
            history=history,
            paused=paused,
            output=run.output,
        )

    async def _ask_scope(self, run: _Run, gate: Gate, task: str) -> None:
        """Fix the run's scope from the model's answer, before it has read anything."""
        asked = await ask_scope(
            self.model, task, list(run.tools), self.system_prompt, count=self.config.count_tokens
        )
        gate.scope = asked.scope
        run.state.usage.asides.append(asked.usage)
        run.emit(
            ev.ScopeFixed(
                tuple(sorted(asked.scope)), "model", asked.usage.to_dict(), asked.problem or None
            )
        )


#: What a durable run is given that its record does not keep: its expectations, deps
#: and own output type.
_DURABLE_CALL: contextvars.ContextVar[tuple[Expect | Sequence[Expect], Any, Any]] = (
    contextvars.ContextVar("tooluse_durable_call", default=((), None, None))
)


def _no_run_id(run_id: str | None) -> None:
    if run_id is not None:
        raise UsageError(
            "run_id names a durable run: give the agent durable=True or a database URL"
        )


#: The loop of one run (`agent_flow`).
Flow = Generator[Effect, Any, None]

_T = TypeVar("_T")


def _advance(own: contextvars.Context, flow: Flow, reply: Any) -> Effect | None:
    """The loop's next effect, given the last one's reply (a `ModelError` thrown in), in
    the run's `own` context; None once it ended."""
    try:
        if isinstance(reply, ModelError):
            return own.run(flow.throw, reply)
        return own.run(flow.send, reply)
    except StopIteration:
        return None


async def _drain(core: AsyncGenerator[ev.Event, None]) -> None:
    """Play a run's core to its end (an unwatched run gives no events)."""
    async for _ in core:
        pass


async def _meanwhile(
    run: _Run, work: Coroutine[Any, Any, _T], answer: list[_T]
) -> AsyncGenerator[ev.Event, None]:
    """Do `work` (a streamed reply, a script), giving the events made while it runs; its
    result goes into `answer`. Closed or cancelled early, it cancels the work."""
    task = asyncio.ensure_future(work)
    task.add_done_callback(run.ring)
    try:
        while True:
            while run.outbox:
                yield run.outbox.popleft()
            if task.done():
                break
            await run.bell()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait([task])
    answer.append(task.result())


class _Live:
    """The events only a watcher needs, made as a watched run goes (nothing otherwise):
    the model's text and each call's start as they arrive, the starts of the calls not
    announced so, a script's start, its output line by line and its calls' starts, and
    the end of each round. A script's calls' ends are told as they happen, watched or
    not (the trace writes them then too)."""

    def __init__(self, run: _Run) -> None:
        self._run = run
        self._emit = run.emit
        self._state = run.state
        self._on = run.watched
        self._round = 0
        self._usage_at = 0
        self._open_round = False
        #: Calls of the current reply announced while it streamed, by index.
        self._announced: dict[int, str | None] = {}
        self._started_ids: set[str] = set()
        self._script = ""
        self._script_round = 0
        self._line = ""
        self._script_calls = 0
        # Where a script's calls are told from another thread to (the core runs here).
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    def before(self, effect: Effect) -> None:
        """What is told before `effect` starts (and taken before it does)."""
        if not self._on:
            return
        if isinstance(effect, AskModel):
            self._end_round()
            self._round = self._state.rounds
            self._usage_at = len(self._state.usage.rounds)
            self._open_round = True
            self._announced = {}
        elif isinstance(effect, RunCalls):
            for index, call in enumerate(effect.calls):
                # The loop may have suffixed a repeated id (``c1~2``).
                if call.id in self._started_ids or call.id.split("~")[0] in self._started_ids:
                    continue
                if index in self._announced and self._announced[index] is None:
                    continue  # announced without an id, by its place
                self._emit(ev.CallStart(call.id, call.name, effect.round, index))
        elif isinstance(effect, RunScript):
            self._script = effect.id
            self._script_round = effect.round
            self._line = ""
            self._script_calls = 0
            self._emit(ev.ScriptStart(effect.id, effect.code, effect.round))

    def delta(self, delta: Delta) -> None:
        """A piece of the model's reply, as its backend hands it over."""
        if isinstance(delta, CallDelta):
            if delta.index not in self._announced and delta.name:
                self._announced[delta.index] = delta.id
                if delta.id:
                    self._started_ids.add(delta.id)
                self._emit(ev.CallStart(delta.id, delta.name, self._round, delta.index))
        elif delta.text:
            self._emit(ev.ModelDelta(delta.text, self._round))

    def output(self, data: str) -> None:
        """What the running script printed (on the event loop)."""
        if not self._on:
            return
        lines = (self._line + data).split("\n")
        self._line = lines.pop()
        for line in lines:
            self._emit(ev.ScriptOutput(self._script, line))

    def script_call(self, call_id: str, name: str, outcome: Outcome | None) -> None:
        """A call the script made starts (`outcome` None) or ends; from any thread."""
        state = self._state
        if outcome is None:
            if not self._on:
                return
            event: ev.Event = ev.CallStart(call_id, name, self._script_round, self._script_calls)
            self._script_calls += 1

            def tell() -> None:
                self._emit(event)

        elif not state.tracing:
            return
        else:
            ended = outcome

            def tell() -> None:
                # Told once: the loop tells the script's calls not told by the time it ends.
                if ended.id not in state.told:
                    state.told.add(ended.id)
                    self._emit(ev.call_outcome(ended))
                    moved = ev.context_move(ended) if isinstance(ended, CallRecord) else None
                    if moved is not None:
                        self._emit(moved)

        if threading.get_ident() == self._loop_thread:
            tell()
        else:
            # A closed loop means the run was stopped and nobody reads on: the call's
            # record is kept by the run itself, and written to its trace then.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(tell)

    def script_ends(self, effect: RunScript) -> None:
        if self._line:
            self._emit(ev.ScriptOutput(effect.id, self._line))
            self._line = ""

    def finished(self) -> None:
        self._end_round()

    def _end_round(self) -> None:
        if not self._open_round:
            return
        self._open_round = False
        rounds = self._state.usage.rounds
        usage = rounds[self._usage_at] if len(rounds) > self._usage_at else None
        self._emit(ev.RoundEnd(self._round, usage))


def _granted(
    result: RunResult, decisions: Mapping[str, bool | Approval | Mapping[str, Any]]
) -> list[tuple[str, Approval]]:
    """Each pending call's key and its decision; ResumeError if they do not fit."""
    pending = {p.call_id: p for p in result.pending}
    listed = ", ".join(f"{p.call_id} ({p.tool})" for p in result.pending) or "none"
    if not isinstance(decisions, Mapping):
        raise ResumeError("decisions must map each pending call_id to True, False or arguments")
    for call_id in decisions:
        if call_id not in pending:
            raise ResumeError(
                f"no call {call_id!r} waits for approval in this run; the pending calls are: "
                f"{listed}"
            )
    missing = [call_id for call_id in pending if call_id not in decisions]
    if missing:
        raise ResumeError(
            f"no decision for {', '.join(missing)}: give one for every pending call ({listed})"
        )
    granted: list[tuple[str, Approval]] = []
    for call_id, request in pending.items():
        if call_key(request.tool, request.arguments) != request.key:
            raise ResumeError(
                f"the arguments of pending call {call_id!r} do not match the hash its approval "
                "is bound to: the paused state was changed after the run stopped"
            )
        value = decisions[call_id]
        if isinstance(value, Mapping):
            decision = Approval.allow(value)
        else:
            try:
                decision = as_decision(value, denied="denied by the user")
            except TypeError:
                raise ResumeError(
                    f"the decision for {call_id!r} must be True, False, an Approval or a dict "
                    f"of arguments, not {value!r}"
                ) from None
        if decision.decision == "defer":
            raise ResumeError(f"the decision for {call_id!r} defers again: decide it, or wait")
        granted.append((request.key, decision))
    return granted


class _Run:
    """One run being recorded: its state, its event sinks, and how it ends."""

    def __init__(
        self,
        agent: Agent,
        *,
        convention: Convention,
        sinks: list[TypedSink],
        writer: JsonlTrace | None,
        expectations: list[Expect],
        tools: Toolbox,
        dispatcher: Dispatcher,
        task: str,
        ended: list[Outcome],
        paused: Paused | None = None,
        output: OutputTool | None = None,
    ) -> None:
        self.agent = agent
        self.convention = convention
        self.task = task
        #: Where a resumed run stopped; None for a new run.
        self.paused = paused
        #: The tool the run ends with, when it has an output type.
        self.output = output
        #: Decisions taken before a resume, kept at the head of the log.
        self.approvals_before: tuple[Any, ...] = ()
        self.sinks = sinks
        self.writer = writer
        self.expectations = expectations
        self.sink_errors = 0
        self.state = RunState(
            emit=self.emit, tracing=bool(sinks), count_tokens=agent.config.count_tokens
        )
        self.tools = tools
        self.dispatcher = dispatcher
        #: Every outcome the dispatcher made, in the order they ended.
        self.ended = ended
        #: Under tool search: the tools shown at the start, and the prompt with its note.
        self.shown: Toolbox | None = None
        self.searching: SearchRun | None = None
        self.system_prompt = agent.system_prompt
        #: Whether the loop ran to its own end (an answer, a limit, an error).
        self.played = False
        self.result: RunResult | None = None
        self.start = time.perf_counter()
        #: Whether a stream watches the run; its streamed events wait in `outbox`.
        self.watched = False
        self.outbox: deque[ev.Event] = deque()
        self._bell: asyncio.Future[None] | None = None
        #: The record of a durable run's workflow; None for a plain run.
        self.durable: Recorder | None = None

    def watch(self) -> None:
        """Have the run's streamed events given by its core, as they are made."""
        self.watched = True
        self.state.tracing = True

    def ready(self) -> bool:
        """Whether an event is made and not yet given (taking it will not wait)."""
        return bool(self.outbox)

    def bell(self) -> asyncio.Future[None]:
        """A future `ring` sets: an event was made, or the work under way ended."""
        self._bell = asyncio.get_running_loop().create_future()
        return self._bell

    def ring(self, *_: object) -> None:
        bell = self._bell
        if bell is not None and not bell.done():
            bell.set_result(None)

    def emit(self, event: ev.Event) -> None:
        """Give `event` to the sinks if it is traced, and to the stream if it is streamed."""
        if self.watched and event.streamed:
            self.outbox.append(event)
            self.ring()
        if not event.traced:
            return
        for sink in self.sinks:
            try:
                sink(event)
            except Exception as exc:
                # Tracing must never change what the run does.
                self.sink_errors += 1
                if self.sink_errors == 1:
                    warnings.warn(
                        f"a trace sink failed ({type(exc).__name__}: {exc}); the run goes on, "
                        "and RunResult.sink_errors counts the events sinks failed to take",
                        RuntimeWarning,
                        stacklevel=2,
                    )

    def end(self, *, interrupted: bool = False) -> RunResult:
        """The run's result, built once: ``cancelled`` if interrupted before its end."""
        if self.result is not None:
            return self.result
        state = self.state
        self.dispatcher.close()
        # Calls that ended in a turn or script the run was stopped in never reached the
        # loop; they ran all the same, and are kept.
        keep_unrecorded(state, list(self.ended))
        if interrupted and not self.played:
            state.status, state.error = "cancelled", "the run was cancelled"
        if state.status == "completed" and self.expectations:
            shortfall = check_expectations(self.expectations, state.calls)
            if shortfall is not None:
                state.status, state.error = "truncated", shortfall
        result = self.result = RunResult(
            answer=state.answer,
            status=state.status,
            calls=state.calls,
            rejected=state.rejected,
            scripts=state.scripts,
            messages=state.messages,
            usage=state.usage,
            rounds=state.rounds,
            error=state.error,
            duration_s=time.perf_counter() - self.start,
            model=self.agent.model.name,
            convention=self.convention.name,
            output=state.output,
        )
        gate = self.dispatcher.gate
        if gate is not None:
            result.approvals = [*self.approvals_before, *gate.log]
            result.scope = tuple(sorted(gate.scope)) if gate.scope is not None else None
            if gate.provenance is not None and result.answer:
                result.untrusted_in_answer = gate.provenance.repeated(result.answer)
        if state.status == "needs_approval" and state.paused is not None and gate is not None:
            result.pending = list(state.pending)
            # The approval step's memory, as it stands at the stop, goes with the pause.
            result.paused = replace(
                state.paused,
                denied=gate.denied,
                scope=result.scope,
                provenance=(
                    gate.provenance.to_dict()
                    if gate.provenance is not None
                    else state.paused.provenance
                ),
            )
        if state.tracing:  # else nobody listens: the event, and its usage per round, go unmade
            self.emit(
                ev.RunEnd(
                    result.status,
                    result.answer,
                    result.error,
                    result.rounds,
                    len(result.calls),
                    len(result.rejected),
                    result.usage.to_dict(),
                    result.duration_s,
                    tuple(s.to_dict() for s in result.untrusted_in_answer),
                )
            )
        result.sink_errors = self.sink_errors
        if self.writer is not None:
            self.writer.close()
        return result
