"""Streaming a run: typed events as it happens, from the loop `run` drives.

`Agent.stream` plays the very run `Agent.arun` plays (the same `agent_flow`,
the same driver) as a task, with `StreamHooks` attached to the driver. The
hooks turn what the driver sees into events: the model's pieces as its backend
hands them over (`Model.respond_stream`), each call's start and end, a
script's start, its output line by line as it prints, and its end, context
offloads, approval requests and the end of each round. The last event is
``done``, carrying the `RunResult` that `run` would have returned.

The run never runs ahead of its consumer by more than what is under way: no
call or script starts before the consumer has taken every event before it, and
no model request goes out unless the consumer waits for its next event. A
consumer that stops taking events (a ``break`` out of a stream it still holds)
stops the run there, as `Agent.stream_sync` does.
Closing the stream (``aclose``, a cancelled task, the stream dropped, Ctrl-C
under `Agent.stream_sync`) cancels the run the way cancelling `arun` does: the
model request is dropped, a running script is killed, and the result, with
status ``cancelled``, keeps the record of every call that ended, the calls of
the turn or script it was stopped in included.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .._eventloop import PrivateLoop
from .._messages import Message, Usage
from .._records import CallRecord, Outcome, RejectedCall, ScriptRecord
from ..models import CallDelta, Delta, Model, ModelRequest, ModelResponse
from ..policy._approval import ApprovalRequest
from ._loop import RunCalls, RunScript, RunState
from ._result import RunResult
from ._state import Paused

if TYPE_CHECKING:
    from ._agent import Agent, _Run

__all__ = [
    "ApprovalEvent",
    "CallEndEvent",
    "CallStartEvent",
    "ContextEvent",
    "DoneEvent",
    "RoundEndEvent",
    "RunStream",
    "ScriptEndEvent",
    "ScriptOutputEvent",
    "ScriptStartEvent",
    "StreamEvent",
    "StreamHooks",
    "SyncRunStream",
    "TextEvent",
]

#: The context tools an agent may call; their calls are reported as context events too.
_CONTEXT_TOOLS = {"context_offload": "offload", "context_compress": "compress"}


@dataclass(frozen=True, slots=True)
class TextEvent:
    """A piece of the model's text in round `round`."""

    text: str
    round: int
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class CallStartEvent:
    """A tool call begins: its name is known (its arguments may still be arriving).

    `id` is the call's id where the wire gives one at its start; `index` is its
    place in the reply.
    """

    id: str | None
    name: str
    round: int
    index: int
    kind: Literal["call_start"] = "call_start"


@dataclass(frozen=True, slots=True)
class CallEndEvent:
    """A call ended: executed (`CallRecord`) or refused before it ran (`RejectedCall`)."""

    record: CallRecord | RejectedCall
    round: int
    kind: Literal["call_end"] = "call_end"

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def name(self) -> str:
        return self.record.name


@dataclass(frozen=True, slots=True)
class ScriptStartEvent:
    id: str
    code: str
    round: int
    kind: Literal["script_start"] = "script_start"


@dataclass(frozen=True, slots=True)
class ScriptOutputEvent:
    """One line the script printed (without its newline), as it printed it."""

    id: str
    line: str
    kind: Literal["script_output"] = "script_output"


@dataclass(frozen=True, slots=True)
class ScriptEndEvent:
    """A script ended; `record` is None when it paused for approval."""

    id: str
    record: ScriptRecord | None
    round: int
    kind: Literal["script_end"] = "script_end"


@dataclass(frozen=True, slots=True)
class ContextEvent:
    """Messages left the window (``offload``, ``compress``) by the ``harness`` or ``agent``."""

    action: str
    by: str
    ids: tuple[str, ...]
    round: int
    kind: Literal["context"] = "context"


@dataclass(frozen=True, slots=True)
class ApprovalEvent:
    """Calls wait for a decision; the run stops with status ``needs_approval``."""

    requests: tuple[ApprovalRequest, ...]
    round: int
    kind: Literal["approval"] = "approval"


@dataclass(frozen=True, slots=True)
class RoundEndEvent:
    """Round `round` ended (its reply acted on); `usage` is its tokens, None if it failed."""

    round: int
    usage: Usage | None
    kind: Literal["round_end"] = "round_end"


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """The run ended; `result` is what `Agent.run` returns."""

    result: RunResult
    kind: Literal["done"] = "done"


StreamEvent = (
    TextEvent
    | CallStartEvent
    | CallEndEvent
    | ScriptStartEvent
    | ScriptOutputEvent
    | ScriptEndEvent
    | ContextEvent
    | ApprovalEvent
    | RoundEndEvent
    | DoneEvent
)


class StreamHooks:
    """What the driver tells a stream: called at each effect of the loop, in order.

    Everything here runs on the event loop and only builds events; it never
    changes what the run does, only when: with `drained`, each turn of calls
    and script waits for the consumer to have taken every event, and a model
    request for that too unless the consumer is `asking` for its next event.
    """

    def __init__(
        self,
        state: RunState,
        put: Callable[[StreamEvent], None],
        drained: Callable[[], Awaitable[None]] | None = None,
        asking: Callable[[], bool] = lambda: False,
    ) -> None:
        self._state = state
        self._put = put
        self._drained = drained
        self._asking = asking
        self._round = 0
        self._usage_at = 0
        self._open_round = False
        #: Calls of the current reply announced while it streamed, by index.
        self._announced: dict[int, str | None] = {}
        self._started_ids: set[str] = set()
        self._script = ""
        self._line = ""
        #: The current script's calls: how many started, and which ended as events.
        self._script_calls = 0
        self._ended_live: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0

    # --- the model --------------------------------------------------------------------

    async def ask(self, model: Model, request: ModelRequest) -> ModelResponse:
        self._end_round()
        if self._drained is not None and not self._asking():
            # No request goes out while the consumer is away: a request has no side
            # effects, so one that waits for the next event is enough (calls wait for more).
            await self._drained()
        self._round = self._state.rounds
        self._usage_at = len(self._state.usage.rounds)
        self._open_round = True
        self._announced = {}
        return await model.respond_stream(request, self._delta)

    def _delta(self, delta: Delta) -> None:
        if isinstance(delta, CallDelta):
            if delta.index not in self._announced and delta.name:
                self._announced[delta.index] = delta.id
                if delta.id:
                    self._started_ids.add(delta.id)
                self._put(CallStartEvent(delta.id, delta.name, self._round, delta.index))
        elif delta.text:
            self._put(TextEvent(delta.text, self._round))

    # --- calls ------------------------------------------------------------------------

    async def calls_started(self, effect: RunCalls) -> None:
        """Announce the calls not announced yet; return once the consumer took them."""
        self._announce(effect)
        if self._drained is not None:
            # Before anything runs, the consumer has taken every event so far: a tool's
            # side effects never come before the start of its call on a screen.
            await self._drained()

    def _announce(self, effect: RunCalls) -> None:
        for index, call in enumerate(effect.calls):
            # The loop may have suffixed a repeated id (``c1~2``).
            if call.id in self._started_ids or call.id.split("~")[0] in self._started_ids:
                continue
            if index in self._announced and self._announced[index] is None:
                continue  # announced without an id, by its place
            self._put(CallStartEvent(call.id, call.name, effect.round, index))

    def calls_ended(self, round_: int, outcomes: Sequence[Outcome | ApprovalRequest]) -> None:
        waiting = []
        for outcome in outcomes:
            if isinstance(outcome, ApprovalRequest):
                waiting.append(outcome)
                continue
            self._put(CallEndEvent(outcome, round_))
            action = _CONTEXT_TOOLS.get(outcome.name)
            if action is not None and isinstance(outcome, CallRecord) and outcome.ok:
                self._put(ContextEvent(action, "agent", _ids(outcome.arguments), round_))
        if waiting:
            self._put(ApprovalEvent(tuple(waiting), round_))

    # --- scripts ----------------------------------------------------------------------

    async def script_started(self, effect: RunScript) -> None:
        self._script = effect.id
        self._line = ""
        self._script_calls = 0
        self._ended_live = set()
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._put(ScriptStartEvent(effect.id, effect.code, effect.round))
        if self._drained is not None:
            await self._drained()

    def script_output(self, data: str) -> None:
        lines = (self._line + data).split("\n")
        self._line = lines.pop()
        for line in lines:
            self._put(ScriptOutputEvent(self._script, line))

    def script_call(self, call_id: str, name: str, outcome: Outcome | None) -> None:
        """A call a script made starts (`outcome` None) or ends; from any thread."""
        round_ = self._round
        if outcome is None:
            events: list[StreamEvent] = [CallStartEvent(call_id, name, round_, self._script_calls)]
            self._script_calls += 1
        else:
            self._ended_live.add(call_id)
            events = []

        def emit() -> None:
            if outcome is None:
                self._put(events[0])
            else:
                self.calls_ended(round_, [outcome])

        if self._loop is None or threading.get_ident() == self._loop_thread:
            emit()
        else:
            # A closed loop means the run was stopped and nobody reads on: the call's
            # record is kept by the run itself, and only the event is dropped.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(emit)

    def script_ended(self, effect: RunScript, reply: Any) -> None:
        if self._line:
            self._put(ScriptOutputEvent(effect.id, self._line))
            self._line = ""
        record, outcomes, _answered = reply
        self.calls_ended(effect.round, [o for o in outcomes if _id_of(o) not in self._ended_live])
        paused = any(isinstance(o, ApprovalRequest) for o in outcomes)
        self._put(ScriptEndEvent(effect.id, None if paused else record, effect.round))

    # --- the trace (events the loop itself reports) -------------------------------------

    def trace(self, event: dict[str, Any]) -> None:
        if event.get("event") == "context_offload":
            ids = tuple(str(i) for i in event.get("ids", ()))
            self._put(ContextEvent("offload", "harness", ids, self._state.rounds))

    def finished(self) -> None:
        self._end_round()

    def _end_round(self) -> None:
        if not self._open_round:
            return
        self._open_round = False
        rounds = self._state.usage.rounds
        usage = rounds[self._usage_at] if len(rounds) > self._usage_at else None
        self._put(RoundEndEvent(self._round, usage))


def _id_of(outcome: Outcome | ApprovalRequest) -> str:
    return outcome.call_id if isinstance(outcome, ApprovalRequest) else outcome.id


def _ids(arguments: dict[str, Any]) -> tuple[str, ...]:
    ids = arguments.get("span_ids") or ()
    if isinstance(ids, str):
        return (ids,)
    return tuple(str(i) for i in ids) if isinstance(ids, list | tuple) else ()


@dataclass(slots=True)
class _Ending:
    """The run and its result, shared by the stream and its event generator (which must
    not refer to the stream: a dropped stream is then freed at once, and its run cancelled)."""

    run: _Run
    result: RunResult | None = None
    #: Whether an event waits to be taken (so taking it will not wait).
    ready: Callable[[], bool] = lambda: False


_END = object()


async def _events(
    run: _Run,
    play: Callable[[StreamHooks], Coroutine[Any, Any, None]],
    ending: _Ending,
) -> AsyncIterator[StreamEvent]:
    queue: asyncio.Queue[Any] = asyncio.Queue()
    ending.ready = lambda: not queue.empty()
    # The run waits on `queue.join` before each effect: an event is done once the next is
    # asked for, so a consumer that stops asking stops the run before anything new starts.
    asking = [False]  # whether the consumer waits for its next event
    hooks = StreamHooks(run.state, queue.put_nowait, queue.join, lambda: asking[0])
    task = asyncio.ensure_future(play(hooks))
    task.add_done_callback(lambda _: queue.put_nowait(_END))
    try:
        while True:
            asking[0] = True
            event = await queue.get()
            asking[0] = False
            if event is _END:
                break
            yield event
            # Done with an event once the next is asked for: `StreamHooks` waits on that.
            queue.task_done()
        task.result()  # a KeyboardInterrupt inside the run passes through here
    except BaseException as exc:
        # Left early (GeneratorExit), cancelled, or interrupted: stop the run.
        if not task.done():
            task.cancel()
            await asyncio.wait([task])
        if not task.cancelled():
            task.exception()  # seen here; asyncio need not report it
        ending.result = run.end(interrupted=True)
        if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
            exc.result = ending.result  # type: ignore[union-attr]
        raise
    ending.result = run.end()
    yield DoneEvent(ending.result)


class RunStream:
    """The events of one run as they happen (``async for event in stream``).

    Each event has a ``kind``; the last is ``done``, whose ``result`` is the
    `RunResult`. Leaving the loop early, or `aclose`, cancels the run; `aclose`
    returns its result, status ``cancelled``, with everything recorded before.
    ``async with agent.stream(task) as stream:`` closes it on the way out.
    """

    def __init__(self, events: AsyncIterator[StreamEvent], ending: _Ending) -> None:
        self._events = events
        self._ending = ending

    @property
    def result(self) -> RunResult | None:
        """The run's result once it ended (or was stopped); None while it runs."""
        return self._ending.result

    def __aiter__(self) -> RunStream:
        return self

    async def __anext__(self) -> StreamEvent:
        return await self._events.__anext__()

    async def aclose(self) -> RunResult:
        """Stop the run if it still runs; return its result."""
        closer = getattr(self._events, "aclose", None)
        if closer is not None:
            await closer()
        if self._ending.result is None:  # closed before it started: nothing ran
            self._ending.result = self._ending.run.end(interrupted=True)
        return self._ending.result

    async def __aenter__(self) -> RunStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._ending.result is None:
            await self.aclose()


def open_stream(
    agent: Agent,
    run: _Run,
    task: str,
    history: Sequence[Message],
    *,
    paused: Paused | None = None,
) -> RunStream:
    """The stream of `run`, not started until its first event is asked for.

    Calls and scripts wait to start until the consumer has taken every event
    before them, model requests until it asks for the next: a tool's side effects
    never come before the start of its call on a screen, and a consumer that stops
    asking stops the run.
    `paused`: where a resumed run goes on from (`Agent.resume_stream`).
    """
    if agent.context is not None:
        run.state.tracing = True  # the harness's offloads reach the stream as events

    async def play(hooks: StreamHooks) -> None:
        if agent.context is not None:
            run.sinks.append(hooks.trace)
        await agent._play(run, task, history, paused=paused, hooks=hooks)

    ending = _Ending(run)
    return RunStream(_events(run, play, ending), ending)


class SyncRunStream:
    """`RunStream` for code without an event loop (``for event in stream``).

    The run goes on only while the events are asked for, on a private event
    loop in the calling thread. Leaving early, `close` or the ``with`` block's
    end cancels it; Ctrl-C ends the events with a ``done`` whose result has
    status ``cancelled``.
    """

    def __init__(self, stream: RunStream) -> None:
        self._stream = stream
        self._events = _sync_events(stream)

    @property
    def result(self) -> RunResult | None:
        """The run's result once it ended (or was stopped); None while it runs."""
        return self._stream.result

    def __iter__(self) -> SyncRunStream:
        return self

    def __next__(self) -> StreamEvent:
        return next(self._events)

    def close(self) -> RunResult:
        """Stop the run if it still runs; return its result."""
        self._events.close()
        if self._stream.result is None:
            asyncio.run(self._stream.aclose())
        result = self._stream.result
        assert result is not None
        return result

    def __enter__(self) -> SyncRunStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _sync_events(stream: RunStream) -> Generator[StreamEvent, None, None]:
    """`stream`'s events on a private event loop in this thread; Ctrl-C ends with ``done``."""
    with PrivateLoop(lambda: stream._ending.run.dispatcher.left_behind) as steps:
        try:
            while True:
                try:
                    # Every event that is ready in one turn of the loop: entering
                    # the loop costs more than an event.
                    batch = steps.run(_take(stream))
                except StopAsyncIteration:
                    return
                for event in batch:
                    yield event
                    if isinstance(event, DoneEvent):
                        return
        except KeyboardInterrupt:
            # Ctrl-C cancelled the run (or, pressed between two turns of the loop, was
            # raised in it); the result keeps what was done.
            if stream.result is None:
                steps.run(stream.aclose())
            assert stream.result is not None
            yield DoneEvent(stream.result)
        finally:
            if stream.result is None:
                steps.run(stream.aclose())


async def _take(stream: RunStream) -> list[StreamEvent]:
    events = [await stream.__anext__()]
    ready = stream._ending.ready
    while ready() and not isinstance(events[-1], DoneEvent):
        events.append(await stream.__anext__())
    return events
