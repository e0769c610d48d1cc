"""How a checked call runs: the concurrency limit, the timeout, and where the tool runs.

Every call runs the same way: it takes a slot of the concurrency limit, its tool runs
under its timeout, and how it ended is written into its record (`Execution`). Where
the tool's function runs is the one thing that differs, and `Runner` decides it.
"""

from __future__ import annotations

import asyncio
import decimal
import threading
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pydantic_core import to_jsonable_python

from .._exceptions import ModelRetry
from .._records import CallRecord
from ..tools import Tool
from ._ledger import Ledger
from ._threads import CAN_WAIT_DIRECTLY, Abandoned, Ended, Lane, Pending, Workers, invoke
from ._validation import arguments_text

__all__ = ["DirectRun", "Execution", "Runner", "Slots"]

# Below this many bits an integer has fewer digits than Python's limit for writing
# one out (4,300 by default), so a result of plain numbers needs no check.
_SHORT_INT_BITS = 14_000
# How long a call made alone on the event loop is waited for on its thread.
_INLINE_WAIT_S = 0.001


class Slots:
    """The concurrency limit: a semaphore whose free slot can be taken without awaiting.

    Slots are taken and given on the event loop, except by direct calls, which take
    and give them from another thread: the counts change under a lock, and a waiter
    is only ever woken on its loop.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.in_use = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._lock = threading.Lock()

    @property
    def waiting(self) -> int:
        with self._lock:
            return sum(not waiter.done() for waiter in self._waiters)

    def try_take(self) -> bool:
        with self._lock:
            if self.in_use < self.size and not self._waiters:
                self.in_use += 1
                return True
            return False

    async def take(self) -> None:
        with self._lock:
            if self.in_use < self.size and not self._waiters:
                self.in_use += 1
                return
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            with self._lock:
                handed = waiter.done() and not waiter.cancelled()
                if not handed and waiter in self._waiters:  # give() drops cancelled waiters
                    self._waiters.remove(waiter)
            if handed:
                self.give()  # handed a slot just as we were cancelled: pass it on
            raise

    def give(self) -> None:
        with self._lock:
            while self._waiters:
                waiter = self._waiters.popleft()
                if not waiter.done():
                    waiter.set_result(None)  # the slot goes straight to the next in line
                    return
            self.in_use -= 1

    def give_back(self, _: object) -> None:
        self.give()

    def give_from_thread(self) -> None:
        """`give`, from any thread: a waiter is handed the slot on its own loop."""
        with self._lock:
            if not self._waiters:
                self.in_use -= 1
                return
            loop = self._waiters[0].get_loop()
        loop.call_soon_threadsafe(self.give)


class _Deferred:
    """A call that starts when first awaited: one that nobody awaits leaves nothing behind."""

    __slots__ = ("_start",)

    def __init__(self, start: Callable[[], Coroutine[Any, Any, CallRecord]]) -> None:
        self._start = start

    def __await__(self) -> Generator[Any, None, CallRecord]:
        return self._start().__await__()


def _writable(value: Any) -> tuple[Any, bool]:
    """``value``, with integers too long to write out as JSON numbers made decimal text.

    The second item says whether any was.
    """
    if type(value) is int:
        if value.bit_length() < _SHORT_INT_BITS:
            return value, False
        try:
            arguments_text(value)
        except ValueError:
            with decimal.localcontext() as context:
                context.prec = decimal.MAX_PREC
                return str(decimal.Decimal(value)), True
        return value, False
    if isinstance(value, dict):
        items = [(k, *_writable(v)) for k, v in value.items()]
        if any(changed for _, _, changed in items):
            return {k: v for k, v, _ in items}, True
        return value, False
    if isinstance(value, list):
        entries = [_writable(v) for v in value]
        if any(changed for _, changed in entries):
            return [v for v, _ in entries], True
    return value, False


@dataclass(slots=True, eq=False)  # one call is equal only to itself
class Execution:
    """One call from the moment its tool starts to its finished record.

    `begin` starts the clock; `conclude` writes how the tool ended into the record and,
    for a successful call to a tool with side effects, into the ledger; then ``after``
    (the approval gate's note of what the run has seen) is given the record. ``ended``
    is given every record the call ends with, concluded or given up on (`give_up`), the
    moment it is made: the run keeps it even if it is stopped before the record reaches
    its loop.
    """

    record: CallRecord
    tool: Tool
    kwargs: dict[str, Any]
    timeout: float | None
    ledger: Ledger | None
    after: Callable[[CallRecord, Tool], None] | None = field(default=None, kw_only=True)
    ended: Callable[[CallRecord], None] | None = field(default=None, kw_only=True)
    start: float = field(default_factory=time.perf_counter, init=False)
    #: How many times the tool has run for this call (see `invoke`).
    attempts: int = field(default=0, init=False)

    def begin(self) -> None:
        self.record.started_at = time.time()
        self.start = time.perf_counter()

    def left(self) -> float | None:
        """Seconds of the timeout still left, or None for no timeout."""
        if self.timeout is None:
            return None
        return self.timeout - (time.perf_counter() - self.start)

    def _again(self, ended: Ended) -> bool:
        """Whether the tool, having ended so, runs again: it failed, it declares retries
        left, and the call's timeout has not run out. A `ModelRetry` is a message for the
        model, and an exception that is not an `Exception` (an interrupt) stops the call."""
        error = ended[1]
        if error is None or not isinstance(error, Exception) or isinstance(error, ModelRetry):
            return False
        left = self.left()
        return self.attempts <= self.tool.retries and (left is None or left > 0)

    def invoke(self) -> Ended:
        """Run a sync tool here, again after each failure its ``retries`` allow."""
        while True:
            self.attempts += 1
            ended = invoke(self.tool.function, self.kwargs)
            if not self._again(ended):
                return ended

    async def invoke_async(self) -> Ended:
        """Run an async tool, again after each failure its ``retries`` allow."""
        while True:
            self.attempts += 1
            try:
                ended = await _ended(self.tool.function(**self.kwargs))
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # raised by calling it, before any await
                ended = None, exc
            if not self._again(ended):
                return ended

    def conclude(self, ended: Ended | None) -> CallRecord:
        """Fill in how the tool ended (None: its timeout ran out first)."""
        record, tool = self.record, self.tool
        value, error = (None, TimeoutError()) if ended is None else ended
        if error is None:
            try:
                result = to_jsonable_python(value)
            except Exception as exc:
                record.error = (
                    f"{tool.name} returned a {type(value).__name__}, "
                    f"which cannot be sent as JSON: {exc}"
                )
            else:
                record.result, as_text = _writable(result)
                if as_text:
                    record.repairs += (
                        "the result held an integer too long for a JSON number; "
                        "it is given as text",
                    )
        elif isinstance(error, ModelRetry):
            record.error = error.message
        elif isinstance(error, TimeoutError) and self.timeout is not None:
            record.error = f"{tool.name} timed out after {self.timeout:g} s"
        else:
            record.error = f"{tool.name} failed: {type(error).__name__}: {error}"
        record.duration_s = time.perf_counter() - self.start
        record.attempts = max(self.attempts, 1)
        if self.ledger is not None and tool.side_effects and record.ok:
            self.ledger.write(record, tool.effects)
        if self.after is not None:
            self.after(record, tool)
        if self.ended is not None:
            self.ended(record)
        return record

    def give_up(self, error: str, *, ran: bool) -> CallRecord:
        """End the record without the tool's own end: ``error`` says why (``ran``: for how long)."""
        record = self.record
        record.error = error
        if ran:
            record.duration_s = time.perf_counter() - self.start
        if self.ended is not None:
            self.ended(record)
        return record


class DirectRun:
    """A call to a sync tool that runs on the caller's own thread (see `Dispatcher.call_direct`).

    It holds a slot of the concurrency limit from the start. Exactly one of `run` (the
    tool ended) and `abandon` (the caller gave up on it) concludes the record and gives
    the slot back; the other then returns None. A call abandoned before `run` is
    recorded as not started, and `run` then does not start it.
    """

    __slots__ = ("_abandoned", "_execution", "_lock", "_over", "_slots", "_started")

    def __init__(self, execution: Execution, slots: Slots, abandoned: Abandoned) -> None:
        self._execution = execution
        self._slots = slots
        self._abandoned = abandoned
        self._lock = threading.Lock()
        self._started = self._over = False

    @property
    def record(self) -> CallRecord:
        return self._execution.record

    @property
    def timeout(self) -> float | None:
        """Seconds the tool may take; the caller enforces it with `abandon`."""
        return self._execution.timeout

    def run(self) -> CallRecord | None:
        """Run the tool here and return its record; None if the call was abandoned.

        What the tool raises, whatever it is, is recorded as its error.
        """
        with self._lock:
            if self._over:
                return None
            self._started = True
        execution = self._execution
        execution.begin()
        ended = execution.invoke()
        with self._lock:
            abandoned, self._over = self._over, True
        if abandoned:
            self._abandoned.remove()
            return None
        try:
            return execution.conclude(ended)
        finally:
            self._slots.give_from_thread()

    def abandon(self, reason: str | None = None) -> CallRecord | None:
        """Give up on the call: its record says it timed out, or ``reason``.

        Returns the record, or None if the tool had already ended. A tool already
        running is left to finish on its own thread; its result is dropped.
        """
        with self._lock:
            if self._over:
                return None
            self._over = True
            started = self._started
        execution = self._execution
        record, name, timeout = execution.record, execution.tool.name, execution.timeout
        if not started:
            default = "it was abandoned" if timeout is None else f"its {timeout:g} s ran out first"
            execution.give_up(f"{name} was not started: {reason or default}", ran=False)
        elif reason is None and timeout is not None:
            execution.conclude(None)
        else:
            execution.give_up(reason or f"{name} was abandoned before it ended", ran=True)
        if started:
            self._abandoned.add(name)
        self._slots.give_from_thread()
        return record


class Runner:
    """Where a tool runs, and how its end is waited for: the dispatcher's latency strategy.

    Every call takes a slot, runs under its timeout and is concluded the same way
    (`Execution`); only the place differs, chosen by what the caller is and what
    else runs:

    - An **async tool** runs on the event loop, as a task under its timeout.
    - A **sync tool called alone from the event loop** (`start` with ``alone``, while no
      other call holds a slot) runs on the lane, a thread kept for it, and the event
      loop waits for it there for up to 1 ms. Most tools end within that: the call is
      answered with no task and no trip through the event loop's self-pipe. A slower
      call is handed on to a task, as below.
    - A **sync tool called from the sandbox's channel thread** (`direct`), for a script
      waiting on that one call, runs on that very thread: no handoff to another
      thread and no turn of the event loop. This is what keeps a script's tool call at
      about 70 µs, request to reply; the caller enforces the timeout (`DirectRun`).
    - **Any other sync tool** runs on a daemon worker thread, awaited through a future:
      calls made together run side by side.
    """

    def __init__(self, max_concurrency: int) -> None:
        self._slots = Slots(max_concurrency)
        self._abandoned = Abandoned()
        self._left: set[asyncio.Future[Any]] = set()
        self._workers: Workers | None = None
        self._lane: Lane | None = None

    @property
    def running(self) -> int:
        """Calls holding a slot."""
        return self._slots.in_use

    @property
    def waiting(self) -> int:
        """Calls waiting for a slot."""
        return self._slots.waiting

    @property
    def abandoned(self) -> int:
        """Calls given up on whose tool still runs."""
        return self._abandoned.count

    def start(self, execution: Execution, *, alone: bool) -> CallRecord | Awaitable[CallRecord]:
        """Run a call from the event loop: its record if it ended at once, else an awaitable.

        The awaitable starts the call when first awaited.
        """
        if (
            alone
            and CAN_WAIT_DIRECTLY
            and not execution.tool.is_async
            and not self._slots.in_use
            and (self._lane is None or not self._lane.busy)
            and self._slots.try_take()
        ):
            return self._on_lane(execution)
        return _Deferred(partial(self._in_turn, execution))

    def take_slot_now(self) -> bool:
        """Take a free slot, from any thread, for a `direct` call; False if none is free."""
        return self._slots.try_take()

    def give_slot_from_thread(self) -> None:
        """Give back a slot taken with `take_slot_now` for a call that will not run."""
        self._slots.give_from_thread()

    def direct(self, execution: Execution) -> DirectRun:
        """The call, holding the slot taken with `take_slot_now`, for the caller to run."""
        return DirectRun(execution, self._slots, self._abandoned)

    def close(self) -> None:
        """Stop the threads; a sync tool still running is abandoned, not joined."""
        if self._workers is not None:
            self._workers.close()
            self._workers = None
        if self._lane is not None:
            self._lane.close()
            self._lane = None

    def _on_lane(self, execution: Execution) -> CallRecord | Awaitable[CallRecord]:
        tool = execution.tool
        timeout = execution.timeout
        execution.begin()
        wait = _INLINE_WAIT_S if timeout is None else min(_INLINE_WAIT_S, timeout)
        try:
            loop = asyncio.get_running_loop()  # outside a loop: fail before the tool runs
            if self._lane is None:
                self._lane = Lane()
                # Its thread ends with the dispatcher even if close() is never called.
                weakref.finalize(self, self._lane.close)
            ended = self._lane.run(
                execution.invoke,
                wait,
                partial(Pending, loop, self._abandoned, tool.name),
            )
        except BaseException:
            self._slots.give()
            raise
        if isinstance(ended, Pending):
            later = loop.create_task(self._finish_later(execution, ended))
            # The slot is the task's now, given back however the task ends, even if it
            # is cancelled before its first step.
            later.add_done_callback(self._slots.give_back)
            return later
        self._slots.give()
        return execution.conclude(ended)

    async def _finish_later(self, execution: Execution, pending: Pending) -> CallRecord:
        return execution.conclude(await pending.wait(execution.left()))

    async def _in_turn(self, execution: Execution) -> CallRecord:
        """Wait for a slot, then run the tool on the event loop or a worker thread."""
        await self._slots.take()
        try:
            execution.begin()
            tool = execution.tool
            if tool.is_async:
                ended = await self._on_loop(execution)
            else:
                pending = Pending(asyncio.get_running_loop(), self._abandoned, tool.name)
                try:
                    self._on_worker(execution, pending)
                except RuntimeError as exc:
                    return execution.give_up(
                        f"{tool.name} was not started: no thread for it: {exc}", ran=False
                    )
                ended = await pending.wait(execution.timeout)
            return execution.conclude(ended)
        finally:
            self._slots.give()

    def _on_worker(self, execution: Execution, pending: Pending) -> None:
        if self._workers is None:
            self._workers = Workers()
        self._workers.start(lambda: pending.deliver(execution.invoke()))

    async def _on_loop(self, execution: Execution) -> Ended | None:
        """How an async tool ended, or None if it outlasted ``timeout`` (it is abandoned).

        The tool runs as a task of its own, so that one that catches its cancellation
        and goes on never holds its caller: at its timeout it is recorded as timed out
        on time, and when the caller is cancelled the cancellation passes at once. Such
        a tool is left behind as a sync tool is left on its thread (see `left_behind`).
        """
        tool, timeout = execution.tool, execution.timeout
        running = asyncio.ensure_future(execution.invoke_async())
        try:
            await asyncio.wait((running,), timeout=None if timeout is None else max(timeout, 0.0))
        except asyncio.CancelledError:
            running.cancel()
            self._leave(running)
            raise
        if running.done():
            # Cancelled: the tool raised CancelledError of its own accord.
            return (None, asyncio.CancelledError()) if running.cancelled() else running.result()
        running.cancel()
        # One turn of the loop: a tool that stops when cancelled (most do) is not
        # abandoned, and no warning says it still runs.
        await asyncio.wait((running,), timeout=0)
        if not running.done():
            self._abandoned.add(tool.name)
            running.add_done_callback(self._async_abandoned_ended)
            self._leave(running)
        return None

    @property
    def left_behind(self) -> tuple[asyncio.Future[Any], ...]:
        """Async tools given up on (timed out, or their caller cancelled) still running.

        Whoever closes their event loop must not wait for them: they end on their own.
        """
        return tuple(task for task in self._left if not task.done())

    def _leave(self, task: asyncio.Future[Any]) -> None:
        if not task.done():
            self._left.add(task)
            task.add_done_callback(self._left_ended)

    def _left_ended(self, task: asyncio.Future[Any]) -> None:
        self._left.discard(task)

    def _async_abandoned_ended(self, task: asyncio.Future[Any]) -> None:
        self._abandoned.remove()


async def _ended(invocation: Awaitable[Any]) -> Ended:
    """How an async tool ended: what it returned or raised, SystemExit and KeyboardInterrupt
    included (raised from a task, they would leave the event loop). A cancellation passes."""
    try:
        return await invocation, None
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        return None, exc
