"""`Agent`: the drivers that run the loop of `_loop.py` against a model and tools."""

from __future__ import annotations

import asyncio
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .. import events as ev
from .._eventloop import PrivateLoop
from .._exceptions import AlreadyResumedError, ModelError, ResumeError, UsageError
from .._expect import Expect, check_expectations, check_tools
from .._messages import Message
from .._records import Outcome
from .._tokens import count_tokens
from ..context._store import ContextStore
from ..context._window import ContextPolicy, ContextWindow
from ..conventions import Convention, get_convention
from ..dispatch._dispatch import Dispatcher
from ..dispatch._scripts import ScriptRunner
from ..models import Model, ToolChoice
from ..policy._approval import (
    Approval,
    ApprovalPolicy,
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
from ._loop import (
    AskModel,
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
from ._stream import RunStream, StreamHooks, SyncRunStream, open_stream
from ._trace import EventSink, JsonlTrace, TypedSink, as_dict_sink

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["Agent"]


def _outside_a_loop(method: str, instead: str) -> None:
    """Refuse a blocking call made inside a running event loop, saying what to use."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise UsageError(f"{method} was called inside a running event loop; {instead}")


class Agent:
    """Runs a task: asks the model, executes the calls it makes, until it answers.

    Args:
        model: the backend to ask.
        tools: a `Toolbox`, or tools / typed functions to put in one.
        convention: ``"json"`` (native function calling) or a `Convention`.
        max_rounds: model requests at most; then the run stops with status
            ``max_rounds``.
        system_prompt: text put first in the conversation.
        tool_timeout: default seconds per tool call (a tool's own wins).
        max_concurrency: tool calls executing at once.
        max_calls_per_turn: calls in one reply beyond this are refused.
        cycle_limit: identical call+result repeats that end the run with
            status ``cycle`` (None: never); the model is warned earlier.
        count_tokens: count tokens offline (o200k) when the backend reports none.
        trace: a path to append JSON Lines trace events to.
        on_event: called with every trace event.
        sandbox: where scripts run (code convention); by default the agent
            starts its own on first use and stops it in `close`.
        isolation: the isolation of the agent's own sandbox: ``auto`` (the
            strongest available, with a warning if that is none),
            ``required`` (refuse to run scripts unisolated) or ``none``.
        script_timeout: wall-clock seconds a script may run.
        context: a hard token budget for what the model sees, with the context
            tools (see `ContextPolicy`); None sends the whole conversation.
        tool_choice: for conventions that pass tools natively (json):
            ``required`` or a tool's name makes the model call (that tool)
            until a call has run, then the choice is the model's again, so
            it can answer; None leaves it to the convention (``auto``).
        parallel_tool_calls: False asks the model for at most one call per
            reply (backends that support it); None leaves the backend's default.
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
        tool_timeout: float | None = 60.0,
        max_concurrency: int = 16,
        max_calls_per_turn: int = 128,
        cycle_limit: int | None = 5,
        count_tokens: bool = True,
        trace: str | Path | None = None,
        on_event: EventSink | None = None,
        sandbox: Sandbox | None = None,
        isolation: IsolationMode = "auto",
        script_timeout: float = 30.0,
        context: ContextPolicy | None = None,
        tool_choice: ToolChoice | None = None,
        parallel_tool_calls: bool | None = None,
        approval: ApprovalPolicy | PolicyFunction | str | None = None,
        tool_search: SearchMode | None = None,
        always_loaded: Iterable[str] = (),
        otel: bool | TracerProvider | None = None,
        scope: Literal["ask"] | Iterable[str] | None = None,
        approval_store: ApprovalStore | str | Path | None = None,
    ) -> None:
        if max_rounds < 1:
            raise UsageError("max_rounds must be at least 1")
        self.approval = as_policy(approval)
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
        if tool_choice not in (None, "auto", "none", "required") and tool_choice not in self.tools:
            raise UsageError(f"tool_choice={tool_choice!r} names no tool; have: {self.tools.names}")
        if tool_choice not in (None, "auto") and not self.convention.native_tools:
            raise UsageError(
                "tool_choice needs a convention that passes tools natively (json), "
                f"not {self.convention.name}"
            )
        self.config = LoopConfig(
            max_rounds=max_rounds,
            cycle_limit=cycle_limit,
            count_tokens=count_tokens,
            tool_choice=tool_choice,
            parallel_tool_calls=parallel_tool_calls,
            tool_names=frozenset(
                [*self.tools.names, *(s.function for s in self.tools.stub_signatures())]
            ),
        )
        self.tool_timeout = tool_timeout
        self.max_concurrency = max_concurrency
        self.max_calls_per_turn = max_calls_per_turn
        self.trace = Path(trace) if trace is not None else None
        self.on_event = on_event
        self._sandbox = sandbox
        self._owns_sandbox = sandbox is None
        self.isolation: IsolationMode = isolation
        self.script_timeout = script_timeout
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

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    def run(
        self,
        task: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        history: Sequence[Message] = (),
    ) -> RunResult:
        """Run `task` to completion (blocking). Use `arun` inside an event loop.

        `expect` states what a complete answer needs (see `Expect`); a run that
        answers without it ends with status ``truncated``. `history` continues
        a conversation: pass the `messages` of the previous result.

        Ctrl-C ends the run, and `run` returns its result with status
        ``cancelled``: every call that ended is kept, those of the turn or
        script the interrupt cut included, and the caller decides whether to
        stop. A tool given up on (timed out, or cut by the interrupt) is never
        waited for, whatever it does with its cancellation.
        """
        _outside_a_loop("Agent.run()", "await Agent.arun()")
        run = self._open(task, expect)
        try:
            # The first Ctrl-C cancels the run, and KeyboardInterrupt is raised once the
            # run has unwound; a tool given up on is left behind, never waited for.
            with PrivateLoop(lambda: run.dispatcher.left_behind) as loop:
                loop.run(self._play(run, task, history))
        except KeyboardInterrupt:
            return run.end(interrupted=True)
        return run.end()

    async def arun(
        self,
        task: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        history: Sequence[Message] = (),
    ) -> RunResult:
        """Run `task` to completion (see `run`).

        Cancelled (``task.cancel()``, a timeout around it), the run ends with
        status ``cancelled`` and the `asyncio.CancelledError` propagates, as
        asyncio's timeouts and task groups need; the partial `RunResult` is
        the exception's ``result`` attribute.
        """
        run = self._open(task, expect)
        try:
            await self._play(run, task, history)
        except (asyncio.CancelledError, KeyboardInterrupt) as exc:
            # The exception must stay asyncio's own, so the result rides on it.
            exc.result = run.end(interrupted=True)  # type: ignore[union-attr]
            raise
        return run.end()

    def stream(
        self,
        task: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        history: Sequence[Message] = (),
    ) -> RunStream:
        """Run `task` as `arun` does, giving its events as they happen.

        ``async for event in agent.stream(task)``: each event has a ``kind``
        (``text``, ``call_start``, ``call_end``, ``script_start``,
        ``script_output``, ``script_end``, ``context``, ``approval``,
        ``round_end``), and the last, ``done``, carries the `RunResult` that
        `run` returns for the same replies. The run goes on only while the
        consumer does: no call or script starts until every event before it
        was taken, and no model request goes out while the consumer is away,
        so leaving the loop early stops the run, even with the stream still
        held. Its result,
        status ``cancelled``, is `RunStream.result` once the stream is closed
        (``await stream.aclose()``) or the task cancelled, and keeps every call
        that ended.
        """
        return self._stream(self._open(task, expect), task, history)

    def stream_sync(
        self,
        task: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        history: Sequence[Message] = (),
    ) -> SyncRunStream:
        """`stream` for code without an event loop: ``for event in agent.stream_sync(task)``.

        Leaving the loop early stops the run (`SyncRunStream.close` returns its
        result); Ctrl-C ends the events with a ``done`` whose result has status
        ``cancelled``, as `run` returns one.
        """
        _outside_a_loop("Agent.stream_sync()", "use Agent.stream()")
        run = self._open(task, expect)
        return SyncRunStream(self._stream(run, task, history))

    def resume(
        self,
        result: RunResult,
        decisions: Mapping[str, bool | Approval | Mapping[str, Any]],
        *,
        expect: Expect | Sequence[Expect] = (),
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

        Raises `ResumeError`, with nothing run, if the run did not stop for
        approval or the decisions do not fit its pending calls, and
        `AlreadyResumedError` if this paused state, or any copy of it, was
        resumed already: the pause is written to the agent's `ApprovalStore`
        before anything runs, so each approval is used once.
        """
        _outside_a_loop("Agent.resume()", "await Agent.aresume()")
        run = self._reopen(result, decisions, expect)
        try:
            with PrivateLoop(lambda: run.dispatcher.left_behind) as loop:
                loop.run(self._play(run, run.task, (), paused=result.paused))
        except KeyboardInterrupt:
            return run.end(interrupted=True)
        return run.end()

    async def aresume(
        self,
        result: RunResult,
        decisions: Mapping[str, bool | Approval | Mapping[str, Any]],
        *,
        expect: Expect | Sequence[Expect] = (),
    ) -> RunResult:
        """`resume`, for async code (cancelled, it behaves as `arun` does)."""
        run = self._reopen(result, decisions, expect)
        try:
            await self._play(run, run.task, (), paused=result.paused)
        except (asyncio.CancelledError, KeyboardInterrupt) as exc:
            exc.result = run.end(interrupted=True)  # type: ignore[union-attr]
            raise
        return run.end()

    def resume_stream(
        self,
        result: RunResult,
        decisions: Mapping[str, bool | Approval | Mapping[str, Any]],
        *,
        expect: Expect | Sequence[Expect] = (),
    ) -> RunStream:
        """`aresume`, giving the resumed run's events as `stream` does.

        The decisions are checked at once: `ResumeError` is raised here, with
        nothing run, where `resume` would raise it. The events are those of
        the run from where it stopped; the ``done`` event's result holds the
        whole run, as `resume` returns it.
        """
        run = self._reopen(result, decisions, expect)
        return self._stream(run, run.task, (), paused=result.paused)

    def resume_stream_sync(
        self,
        result: RunResult,
        decisions: Mapping[str, bool | Approval | Mapping[str, Any]],
        *,
        expect: Expect | Sequence[Expect] = (),
    ) -> SyncRunStream:
        """`resume_stream` for code without an event loop, as `stream_sync` is to `stream`."""
        _outside_a_loop("Agent.resume_stream_sync()", "use Agent.resume_stream()")
        run = self._reopen(result, decisions, expect)
        stream = self._stream(run, run.task, (), paused=result.paused)
        return SyncRunStream(stream)

    def _reopen(
        self,
        result: RunResult,
        decisions: Mapping[str, bool | Approval | Mapping[str, Any]],
        expect: Expect | Sequence[Expect],
    ) -> _Run:
        """A run restored from a paused result, its decisions granted; nothing runs yet."""
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
        # Written down before anything runs: a copy of this state, here or in a process
        # sharing the store, is refused from now on (AlreadyResumedError).
        self.approval_store.claim(paused.id, task=paused.task, decisions=sorted(decisions))
        try:
            run = self._open(paused.task, expect, paused=paused)
        except BaseException:
            self.approval_store.release(paused.id)  # nothing ran: the pause is still unused
            raise
        gate = run.dispatcher.gate
        assert gate is not None
        for key, decision in granted:
            gate.grant(key, decision)
        run.state.restore(result)
        run.approvals_before = list(result.approvals)
        run.emit(ev.ApprovalDecided(tuple(sorted(decisions))))
        return run

    def _open(
        self, task: str, expect: Expect | Sequence[Expect], *, paused: Paused | None = None
    ) -> _Run:
        """Start recording a run: its trace, its tools and its dispatcher."""
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
        dispatcher = Dispatcher(
            tools,
            timeout=self.tool_timeout,
            max_concurrency=self.max_concurrency,
            max_calls_per_turn=self.max_calls_per_turn,
            max_argument_bytes=self.config.max_argument_chars,
            gate=gate,
            unloaded=searching.refusal if searching is not None else None,
            on_ended=ended.append,
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
        )
        run.state.context = window
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

    def _stream(
        self,
        run: _Run,
        task: str,
        history: Sequence[Message],
        *,
        paused: Paused | None = None,
    ) -> RunStream:
        """`run` played as a stream of events (the one entry the stream module is given)."""

        async def play(hooks: StreamHooks) -> None:
            await self._play(run, task, history, paused=paused, hooks=hooks)

        return open_stream(run, play, offloads=self.context is not None)

    async def _play(
        self,
        run: _Run,
        task: str,
        history: Sequence[Message],
        *,
        paused: Paused | None = None,
        hooks: StreamHooks | None = None,
    ) -> None:
        """Drive the loop until it ends; a cancellation or Ctrl-C passes through."""
        state = run.state
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
        try:
            if gate is not None and self.scope == "ask" and paused is None:
                await self._ask_scope(run, gate, task)
            shown = (run.shown or run.tools).callable_by(run.convention.caller)
            prepared = run.convention.prepare(shown, run.system_prompt)
            flow = agent_flow(
                state,
                task,
                prepared,
                run.convention,
                self.config,
                history=history,
                paused=paused,
            )
            await self._drive(flow, run.dispatcher, run.tools, hooks)
        except Exception as exc:
            # The host never crashes on a run: whatever broke, the state so far is kept.
            state.status = "error"
            state.error = f"{type(exc).__name__}: {exc}"
            run.emit(ev.InternalError(traceback.format_exc()))
        run.played = True

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

    async def _drive(
        self,
        flow: Any,
        dispatcher: Dispatcher,
        tools: Toolbox | None = None,
        hooks: StreamHooks | None = None,
    ) -> None:
        """Answer the loop's effects until it finishes; `hooks` see each one (streaming)."""
        tools = tools if tools is not None else self.tools
        runner: ScriptRunner | None = None
        try:
            effect = next(flow)
        except StopIteration:
            # Ended before asking for anything: a resume that cannot go on (its state says why).
            if hooks is not None:
                hooks.finished()
            return
        while True:
            try:
                if isinstance(effect, AskModel):
                    try:
                        if hooks is None:
                            reply: Any = await self.model.respond(effect.request)
                        else:
                            reply = await hooks.ask(self.model, effect.request)
                    except ModelError as exc:
                        effect = flow.throw(exc)
                        continue
                elif isinstance(effect, RunCalls):
                    if hooks is not None:
                        await hooks.calls_started(effect)
                    reply = await dispatcher.run(
                        effect.calls, round_=effect.round, source=effect.source
                    )
                    if hooks is not None:
                        hooks.calls_ended(effect.round, reply)
                elif isinstance(effect, RunScript):
                    if runner is None:
                        runner = ScriptRunner(
                            tools, dispatcher, self.sandbox(), timeout=self.script_timeout
                        )
                    if hooks is not None:
                        await hooks.script_started(effect)
                    reply = await runner.run(
                        effect.code,
                        script_id=effect.id,
                        round_=effect.round,
                        repairs=effect.repairs,
                        replay=effect.replay,
                        awaited=effect.awaited,
                        on_output=None if hooks is None else hooks.script_output,
                        on_call=None if hooks is None else hooks.script_call,
                    )
                    if hooks is not None:
                        hooks.script_ended(effect, reply)
                else:
                    raise TypeError(f"unknown effect {effect!r}")
                effect = flow.send(reply)
            except StopIteration:
                if hooks is not None:
                    hooks.finished()
                return


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
    ) -> None:
        self.agent = agent
        self.convention = convention
        self.task = task
        #: Decisions taken before a resume, kept at the head of the log.
        self.approvals_before: list[Any] = []
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

    def emit(self, event: ev.Event) -> None:
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
