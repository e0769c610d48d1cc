"""Streaming a run: its events as they happen, from the very core `run` plays.

`Agent.stream` plays the run `Agent.arun` plays: the same core (`Agent._play`,
an async generator of `tooluse.events`), watched. A watched run asks the model
for its reply as a stream (`Model.respond_stream`) and makes the events only a
watcher needs: the model's text as it arrives, each call's start, a script's
start and its output line by line. The ends of calls and scripts, context moves
and approval requests are the same event objects the trace writes. The last
event is `DoneEvent`, stream-only, carrying the `RunResult` that `run` would
have returned (the trace's last line is `RunEnd`, its summary).

The run never runs ahead of its consumer by more than what is under way: the
core is a generator, so no call or script starts before the consumer has taken
every event before it, and no model request goes out unless the consumer waits
for its next event. A consumer that stops taking events (a ``break`` out of a
stream it still holds) stops the run there, as `Agent.stream_sync` does.
Closing the stream (``aclose``, a cancelled task, the stream dropped, Ctrl-C
under `Agent.stream_sync`) cancels the run the way cancelling `arun` does: the
model request is dropped, a running script is killed, and the result, with
status ``cancelled``, keeps the record of every call that ended, the calls of
the turn or script it was stopped in included.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from .._closing import Closing
from .._eventloop import PrivateLoop
from ..events import (
    AnswerChecked,
    ApprovalNeeded,
    CallEnd,
    CallOutcome,
    CallRejected,
    CallStart,
    ContextCompress,
    ContextMove,
    ContextOffload,
    Event,
    ModelDelta,
    RoundEnd,
    ScriptEnd,
    ScriptOutput,
    ScriptStart,
)
from ._result import RunResult

if TYPE_CHECKING:
    from ..dispatch._dispatch import Dispatcher

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
    "StreamedRun",
    "SyncRunStream",
    "TextEvent",
    "open_stream",
]


class StreamedRun(Protocol):
    """What a stream needs of the run it plays (the agent's own record of it)."""

    dispatcher: Dispatcher

    def ready(self) -> bool:
        """Whether the core has an event made and not yet given (taking it will not wait)."""
        ...

    def end(self, *, interrupted: bool = False) -> RunResult: ...


@dataclass(frozen=True, slots=True)
class DoneEvent(Event):
    """The run ended; `result` is what `Agent.run` returns. The stream's last event.

    Stream-only: a trace ends with `RunEnd`, the summary of this result.
    """

    kind: ClassVar[str] = "done"
    traced: ClassVar[bool] = False
    streamed: ClassVar[bool] = True
    result: RunResult

    def _body(self) -> dict[str, Any]:
        return {"result": self.result.to_dict()}


#: The stream's earlier names for the events of `tooluse.events` it gives.
TextEvent = ModelDelta
CallStartEvent = CallStart
CallEndEvent = CallOutcome
ScriptStartEvent = ScriptStart
ScriptOutputEvent = ScriptOutput
ScriptEndEvent = ScriptEnd
ContextEvent = ContextMove
ApprovalEvent = ApprovalNeeded
RoundEndEvent = RoundEnd

#: Every event a stream gives.
StreamEvent = (
    ModelDelta
    | CallStart
    | CallEnd
    | CallRejected
    | ScriptStart
    | ScriptOutput
    | ScriptEnd
    | ContextOffload
    | ContextCompress
    | ApprovalNeeded
    | AnswerChecked
    | RoundEnd
    | DoneEvent
)


@dataclass(slots=True)
class _Ending:
    """The run and its result, shared by the stream and its event generator (which must
    not refer to the stream: a dropped stream is then freed at once, and its run cancelled)."""

    run: StreamedRun
    result: RunResult | None = None


async def _events(
    run: StreamedRun, core: AsyncGenerator[Event, None], ending: _Ending
) -> AsyncIterator[Event]:
    """The core's events, then `DoneEvent`; however the stream is left, the run ends."""
    try:
        async with contextlib.aclosing(core):
            async for event in core:
                yield event
    except BaseException as exc:
        # Left early (GeneratorExit), cancelled, or interrupted: the core stopped the run.
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

    def __init__(self, events: AsyncIterator[Event], ending: _Ending) -> None:
        self._events = events
        self._ending = ending

    @property
    def result(self) -> RunResult | None:
        """The run's result once it ended (or was stopped); None while it runs."""
        return self._ending.result

    def __aiter__(self) -> RunStream:
        return self

    async def __anext__(self) -> StreamEvent:
        # Only the stream's own events reach here (`open_stream`).
        return await self._events.__anext__()  # type: ignore[return-value]

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


def open_stream(run: StreamedRun, core: AsyncGenerator[Event, None]) -> RunStream:
    """The stream of `run`, whose core (watched: it gives the streamed events) is not
    started until the first event is asked for."""
    ending = _Ending(run)
    return RunStream(_events(run, core, ending), ending)


class SyncRunStream(Closing):
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
    ready = stream._ending.run.ready
    while ready() and not isinstance(events[-1], DoneEvent):
        events.append(await stream.__anext__())
    return events
