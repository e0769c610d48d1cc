"""Running a model's script in the sandbox, with every tool call sent to the dispatcher.

Inside the sandbox the tool functions are proxies; each call arrives here by
name, is mapped back from the stub's Python names to the tool's schema names,
and goes through the same validation, execution and record as a JSON call.
This sits above both: the sandbox knows nothing of tools.

A call the approval policy defers pauses the script: the calls already under way
finish and are answered, any call made after it is held unanswered, and the
script is stopped (status ``paused``). To resume, the same script runs again and
the calls it had been answered are answered again from the record, without
running, as long as each arrives as before (the same tool and arguments, in the
same order); the paused call then meets its decision. This assumes the script is
deterministic up to that call: its calls depend only on what they returned. The
first call that differs ends the replay, and from there every call runs through
the dispatcher, approvals included, as in any script.

::

    with Sandbox() as sb:
        r = run_script(sb, script, tools=box, timeout=10)
    r.stdout, r.error, r.calls, r.truncated
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import InitVar, dataclass, field
from typing import Any

from .._eventloop import PrivateLoop
from .._exceptions import UsageError
from .._records import (
    Answered,
    CallRecord,
    Outcome,
    RejectedCall,
    ScriptRecord,
    call_identity,
    call_key,
)
from ..policy._approval import ApprovalRequest
from ..sandbox import DirectCall, ExecResult, ProxySpec, Sandbox, ToolReply
from ..tools import Tool, Toolbox
from ._dispatch import DirectRun, Dispatcher, Ledger

__all__ = ["ScriptRun", "ScriptRunner", "arun_script", "outside_a_loop", "run_script"]


@dataclass(slots=True)
class ScriptRun:
    """What `run_script` returns: the script's outcome and the calls it made."""

    status: str
    stdout: str
    error: str | None
    calls: list[CallRecord]
    rejected: list[RejectedCall]
    truncated: bool
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class _Direct:
    """A dispatcher's `DirectRun` as the sandbox runs it: its record becomes the reply."""

    __slots__ = ("_reply", "_run")

    def __init__(self, run: DirectRun, reply: Callable[[Outcome], ToolReply]) -> None:
        self._run = run
        self._reply = reply

    @property
    def timeout(self) -> float | None:
        return self._run.timeout

    def run(self) -> ToolReply | None:
        record = self._run.run()
        return None if record is None else self._reply(record)

    def abandon(self, reason: str | None) -> ToolReply | None:
        record = self._run.abandon(reason)
        return None if record is None else self._reply(record)


@dataclass(eq=False)
class ScriptRunner:
    """Runs scripts against a toolbox: one warm sandbox, one dispatcher.

    The scripts of one runner are retries of each other as far as the `Ledger` goes:
    use one runner per run.
    """

    tools: InitVar[Toolbox]
    dispatcher: Dispatcher
    sandbox: Sandbox
    module: str = field(default="tools", kw_only=True)
    timeout: float = field(default=30.0, kw_only=True)
    ledger: Ledger = field(default_factory=Ledger, init=False)
    _proxies: list[ProxySpec] = field(init=False)
    _by_function: dict[str, tuple[str, dict[str, str]]] = field(init=False)

    def __post_init__(self, tools: Toolbox) -> None:
        signatures = tools.callable_by("script").stub_signatures()
        # The proxies bind arguments by the very signatures the stubs show.
        self._proxies = [
            ProxySpec(s.function, [p for p, _ in s.params], positional=s.positional)
            for s in signatures
        ]
        # Python names the stubs use in place of the schema's (``from_`` for ``from``).
        self._by_function = {
            s.function: (s.tool, {p: k for p, k in s.params if p != k}) for s in signatures
        }

    async def run(
        self,
        code: str,
        *,
        script_id: str,
        round_: int = 0,
        repairs: Sequence[str] = (),
        replay: Sequence[Answered] = (),
        awaited: Sequence[str] = (),
        on_output: Callable[[str], None] | None = None,
        on_call: Callable[[str, str, Outcome | None], None] | None = None,
    ) -> tuple[ScriptRecord, list[Outcome | ApprovalRequest], list[Answered]]:
        """Run ``code``: its record, the outcome of every call, and what it was answered.

        A paused script (status ``paused``) has its deferred calls among the
        outcomes as `ApprovalRequest`s, and the calls it had been answered, in
        the order it made them, as the third item (empty otherwise). ``replay``
        answers the first calls as a paused run of the script was answered;
        ``awaited`` are the keys of the calls that run stopped at: one arriving
        out of the replay's order does not end the replay. ``on_output`` is
        given the script's stdout as it prints it; ``on_call(id, tool, None)`` is
        told of each call as it starts and ``on_call(id, tool, outcome)`` as it
        ends (replayed calls are not told). Both may be called from the sandbox's
        channel thread.
        """
        calls = _ScriptCalls(self, script_id, round_, deque(replay), awaited, on_call)
        result = await self._execute(code, calls, on_output)
        if result is not None:
            self.ledger.script_ended(result.status == "ok")
        record = _record(
            code, script_id=script_id, round_=round_, repairs=repairs, calls=calls, result=result
        )
        # A paused script resumes by running again, answered as it was this time.
        return record, calls.outcomes, calls.transcript() if result is None else []

    def schema_call(self, function: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """A call as the script made it, by the stub's names, as the tool's schema names it."""
        tool_name, names = self._by_function[function]
        return tool_name, {names.get(k, k): v for k, v in arguments.items()}

    async def _execute(
        self, code: str, calls: _ScriptCalls, on_output: Callable[[str], None] | None
    ) -> ExecResult | None:
        """The sandbox's result for ``code``, or None when it was stopped at a deferred call."""
        execution = asyncio.ensure_future(
            self.sandbox.execute(
                code,
                tools=self._proxies,
                handler=calls.handler,
                direct=calls.direct,
                timeout=self.timeout,
                module_name=self.module,
                on_output=on_output,
            )
        )
        calls.pause.execution = execution
        try:
            return await execution
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not calls.pause.asked or (task is not None and task.cancelling()):
                raise  # the caller's cancellation, not the pause
            return None


class _Pause:
    """A script stopping at a deferred call, once the calls under way have been answered."""

    __slots__ = ("asked", "execution", "running")

    def __init__(self) -> None:
        self.asked = False
        self.running = 0
        self.execution: asyncio.Future[ExecResult] | None = None

    def started(self) -> None:
        self.running += 1

    def ended(self) -> None:
        self.running -= 1
        self._maybe_stop()

    def ask(self) -> None:
        self.asked = True
        self._maybe_stop()

    def hold(self) -> asyncio.Future[ToolReply]:
        """A reply that never comes: the script is stopped before it would."""
        return asyncio.get_running_loop().create_future()

    def _maybe_stop(self) -> None:
        if self.asked and not self.running and self.execution is not None:
            # Stopped on the next turn, once the replies just sent are on their way.
            asyncio.get_running_loop().call_soon(self.execution.cancel)


@dataclass(eq=False)
class _ScriptCalls:
    """The calls of one script as they arrive from its sandbox, and what each was answered.

    `handler` takes a call on the event loop, `direct` one the script waits on alone on
    the sandbox's channel thread; both number it, replay it or send it to the dispatcher,
    and `reply` keeps its outcome and answer.
    """

    runner: ScriptRunner
    script_id: str
    round: int
    #: The recorded answers still to give, first first (see `ScriptRunner.run`).
    replaying: deque[Answered]
    awaited: Sequence[str]
    on_call: Callable[[str, str, Outcome | None], None] | None
    outcomes: list[Outcome | ApprovalRequest] = field(default_factory=list)
    # Taken as each call arrives: parallel calls overlap.
    numbers: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    sent: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    answered: dict[str, ToolReply] = field(default_factory=dict)
    pause: _Pause = field(default_factory=_Pause)

    def next_id(self) -> str:
        return f"{self.script_id}.{next(self.numbers)}"

    def handler(
        self, function: str, arguments: dict[str, object]
    ) -> ToolReply | Awaitable[ToolReply]:
        # A plain function, so that a call the dispatcher answers at once (a quick
        # sync tool, a refusal, a replay) is answered without a task per call.
        tool_name, schema_arguments = self.runner.schema_call(function, arguments)
        call_id = self.next_id()
        if self.pause.asked:
            return self.pause.hold()  # after the deferred call: nothing more runs
        if self.replaying:
            earlier = _replayed(self.replaying, tool_name, schema_arguments, self.awaited)
            if earlier is not None:
                self.sent[call_id] = (tool_name, schema_arguments)
                answer = self.answered[call_id] = ToolReply(
                    earlier.value, earlier.kind, earlier.message
                )
                return answer
        self.started(call_id, tool_name, schema_arguments)
        outcome = self.runner.dispatcher.call_nowait(
            tool_name,
            schema_arguments,
            call_id=call_id,
            round_=self.round,
            source="script",
            ledger=self.runner.ledger,
        )
        if isinstance(outcome, CallRecord | RejectedCall):
            return self.reply(outcome)
        self.pause.started()
        return self.reply_later(outcome)

    def direct(self, function: str, arguments: dict[str, object]) -> DirectCall | ToolReply | None:
        # On the sandbox's channel thread, for a call the script waits on alone: a sync
        # tool runs right there, with no turn of the event loop.
        if self.replaying or self.pause.asked:
            return None  # the event loop answers it, in order
        tool_name, schema_arguments = self.runner.schema_call(function, arguments)

        def take_id() -> str:
            call_id = self.next_id()
            self.started(call_id, tool_name, schema_arguments)
            return call_id

        outcome = self.runner.dispatcher.call_direct(
            tool_name,
            schema_arguments,
            call_id=take_id,
            round_=self.round,
            source="script",
            ledger=self.runner.ledger,
        )
        if outcome is None:
            return None
        if isinstance(outcome, CallRecord | RejectedCall):
            return self.reply(outcome)
        return _Direct(outcome, self.reply)

    def started(self, call_id: str, tool_name: str, arguments: dict[str, Any]) -> None:
        self.sent[call_id] = (tool_name, arguments)
        if self.on_call is not None:
            self.on_call(call_id, tool_name, None)

    async def reply_later(self, pending: Awaitable[Outcome | ApprovalRequest]) -> ToolReply:
        try:
            outcome = await pending
        finally:
            self.pause.ended()
        if isinstance(outcome, ApprovalRequest):
            self.outcomes.append(outcome)
            self.pause.ask()
            return await self.pause.hold()
        return self.reply(outcome)

    def reply(self, outcome: Outcome) -> ToolReply:
        self.outcomes.append(outcome)
        if self.on_call is not None:
            self.on_call(outcome.id, outcome.name, outcome)
        answer = _reply(outcome)
        self.answered[outcome.id] = answer
        return answer

    def replayed(self) -> tuple[CallRecord, ...]:
        """The calls answered from the ledger rather than run."""
        return tuple(o for o in self.outcomes if isinstance(o, CallRecord) and o.replayed)

    def transcript(self) -> list[Answered]:
        """The calls answered so far, in the order the script made them."""
        return [
            Answered(call_id, *self.sent[call_id], answer.value, answer.kind, answer.message)
            for call_id in self.sent
            if (answer := self.answered.get(call_id)) is not None
        ]


def _record(
    code: str,
    *,
    script_id: str,
    round_: int,
    repairs: Sequence[str],
    calls: _ScriptCalls,
    result: ExecResult | None,
) -> ScriptRecord:
    """The script's record; without a `result` it was stopped at a deferred call."""
    if result is None:
        status, stdout, error, truncated, duration = "paused", "", None, False, 0.0
    else:
        status, stdout, error = result.status, result.stdout, result.error
        truncated, duration = result.truncated, result.duration_s
    return ScriptRecord(
        id=script_id,
        code=code,
        status=status,
        stdout=stdout,
        error=error,
        round=round_,
        calls=len(calls.answered),
        truncated=truncated,
        duration_s=duration,
        repairs=tuple(repairs),
        replayed=calls.replayed(),
    )


def _reply(outcome: Outcome) -> ToolReply:
    if isinstance(outcome, RejectedCall):
        return ToolReply.fail(
            outcome.error, kind="denied" if outcome.kind == "denied" else "validation"
        )
    if outcome.error is not None:
        return ToolReply.fail(outcome.error, kind="tool")
    return ToolReply.ok(outcome.result)


def _replayed(
    replaying: deque[Answered], tool: str, arguments: dict[str, Any], awaited: Sequence[str]
) -> Answered | None:
    """The recorded answer to this call, or None: it runs (and the replay may end)."""
    earlier = replaying[0]
    if call_identity(earlier.tool, earlier.arguments) == call_identity(tool, arguments):
        return replaying.popleft()
    if call_key(tool, arguments) not in awaited:
        replaying.clear()  # the script went another way: from here every call runs
    return None


def outside_a_loop(method: str, instead: str) -> None:
    """Refuse a blocking call made inside a running event loop, saying what to use."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise UsageError(f"{method} was called inside a running event loop; {instead}")


def run_script(
    sandbox: Sandbox,
    script: str,
    tools: Toolbox | Iterable[Tool | Callable[..., Any]],
    *,
    timeout: float = 10.0,
    deps: Any = None,
) -> ScriptRun:
    """Run ``script`` in ``sandbox`` with ``tools`` (a Toolbox or tools) as its ``tools`` module.

    Each call the script makes is validated and executed on the host by the dispatcher,
    exactly like a JSON call; the result lists every call. A tool that takes a
    `RunContext` is given ``deps`` there, on the host: the script never sees them. Not
    callable inside an event loop: await `arun_script` there.
    """
    outside_a_loop("run_script()", "await arun_script()")
    box = tools if isinstance(tools, Toolbox) else Toolbox(tools)
    dispatcher = Dispatcher(box, deps=deps)
    # An async tool given up on is left behind on the loop: run_script returns at its timeout.
    with PrivateLoop(lambda: dispatcher.left_behind) as loop:
        return loop.run(_run_script(sandbox, script, box, dispatcher, timeout))


async def arun_script(
    sandbox: Sandbox,
    script: str,
    tools: Toolbox | Iterable[Tool | Callable[..., Any]],
    *,
    timeout: float = 10.0,
    deps: Any = None,
) -> ScriptRun:
    """`run_script` for async code."""
    box = tools if isinstance(tools, Toolbox) else Toolbox(tools)
    return await _run_script(sandbox, script, box, Dispatcher(box, deps=deps), timeout)


async def _run_script(
    sandbox: Sandbox, script: str, box: Toolbox, dispatcher: Dispatcher, timeout: float
) -> ScriptRun:
    try:
        runner = ScriptRunner(box, dispatcher, sandbox, timeout=timeout)
        record, every, _ = await runner.run(script, script_id="script")
        outcomes = [o for o in every if not isinstance(o, ApprovalRequest)]
    finally:
        dispatcher.close()
    return ScriptRun(
        status=record.status,
        stdout=record.stdout,
        error=record.error,
        calls=[o for o in outcomes if isinstance(o, CallRecord)],
        rejected=[o for o in outcomes if isinstance(o, RejectedCall)],
        truncated=record.truncated,
        duration_s=record.duration_s,
    )
