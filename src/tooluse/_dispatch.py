"""The dispatcher: the only place a tool runs.

JSON calls and calls made from a script go through the same steps:
validate (size, JSON, tool name, schema, conversion), execute (async tools on
the event loop, sync tools in worker threads, each under its timeout and a
shared concurrency limit), record.
"""

from __future__ import annotations

import asyncio
import contextlib
import decimal
import json
import os
import select
import threading
import time
import warnings
import weakref
from asyncio import wait_for
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import pydantic
from pydantic_core import to_jsonable_python

from ._exceptions import ModelRetry
from ._messages import ToolCall
from ._records import CallRecord, Outcome, RejectedCall
from .sandbox._wire import json_encoder
from .tools import Tool, Toolbox
from .tools._validate import ArgumentChecker, ArgumentsError, parse_arguments

__all__ = ["DirectRun", "Dispatcher", "Ledger"]

_RAW_KEEP = 300
# Below this many bits an integer has fewer digits than Python's limit for writing
# one out (4,300 by default), so a result of plain numbers needs no check.
_SHORT_INT_BITS = 14_000
_INLINE_WAIT_S = 0.001
# The direct wait selects on a pipe, which Windows cannot do.
_CAN_WAIT_DIRECTLY = os.name == "posix"


# What ``json.dumps(value, default=str)`` writes, with the encoder built once.
_arguments_text = json_encoder(separators=(", ", ": "), default=str)

Ended = tuple[Any, BaseException | None]
"""How a tool's run ended: its value, or what it raised."""


def _invoke(function: Callable[..., Any], kwargs: dict[str, Any]) -> Ended:
    # Whatever the tool raises, SystemExit and StopIteration included, is its own
    # failure: it never reaches a future, where StopIteration cannot be set.
    try:
        return function(**kwargs), None
    except BaseException as exc:
        return None, exc


def _writable(value: Any) -> tuple[Any, bool]:
    """``value``, with integers too long to write out as JSON numbers made decimal text.

    The second item says whether any was.
    """
    if type(value) is int:
        if value.bit_length() < _SHORT_INT_BITS:
            return value, False
        try:
            _arguments_text(value)
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


class _Abandoned:
    """Calls given up on whose tool still runs: counted, and warned about once.

    A sync tool cannot be stopped from outside; its thread is a daemon, so it never
    holds up the interpreter's exit, and it ends when the tool returns.
    """

    def __init__(self) -> None:
        self.count = 0
        self._warned = False
        self._lock = threading.Lock()

    def add(self, name: str) -> None:
        with self._lock:
            self.count += 1
            first, self._warned = not self._warned, True
        if first:
            warnings.warn(
                f"{name} is still running after its call was given up on; a tool that "
                "ignores its timeout keeps running until it returns (see "
                "Dispatcher.abandoned)",
                RuntimeWarning,
                stacklevel=2,
            )

    def remove(self) -> None:
        with self._lock:
            self.count -= 1


class _Pending:
    """The end of a sync tool's run on another thread, for the event loop to await."""

    __slots__ = ("_abandoned", "_given_up", "_lock", "_loop", "_name", "_over", "future")

    def __init__(self, loop: asyncio.AbstractEventLoop, abandoned: _Abandoned, name: str) -> None:
        self._loop = loop
        self._abandoned = abandoned
        self._name = name
        self.future: asyncio.Future[Ended] = loop.create_future()
        self._lock = threading.Lock()
        self._over = self._given_up = False

    def deliver(self, ended: Ended) -> None:
        """From the tool's thread: the tool ended."""
        with self._lock:
            self._over = True
            given_up = self._given_up
        if given_up:
            self._abandoned.remove()
            return
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            self._loop.call_soon_threadsafe(self._settle, ended)

    def _settle(self, ended: Ended) -> None:
        if not self.future.done():
            self.future.set_result(ended)

    async def wait(self, timeout: float | None) -> Ended | None:
        """How the tool ended, or None if ``timeout`` passed first (it is abandoned)."""
        try:
            if timeout is None:
                return await self.future
            return await wait_for(self.future, max(timeout, 0.0))
        except (TimeoutError, asyncio.CancelledError) as exc:
            with self._lock:
                running = not self._over
                self._given_up = True
            if running:
                self._abandoned.add(self._name)
            if isinstance(exc, asyncio.CancelledError):
                raise
            return None


class _Workers:
    """Daemon threads for sync tools: an idle one takes the next call, else a new one starts.

    Not capped (the dispatcher's slots limit how many calls run): a thread stuck in an
    abandoned call never keeps a later call from starting.
    """

    def __init__(self) -> None:
        self._jobs: deque[Callable[[], None]] = deque()
        self._ready = threading.Condition(threading.Lock())
        self._idle = 0
        self._closed = False

    def start(self, job: Callable[[], None]) -> None:
        with self._ready:
            self._jobs.append(job)
            if self._idle:
                self._idle -= 1
                self._ready.notify()
                return
        threading.Thread(target=self._serve, name="tooluse-tool", daemon=True).start()

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def _serve(self) -> None:
        while True:
            with self._ready:
                while not self._jobs:
                    if self._closed:
                        return
                    self._idle += 1
                    self._ready.wait()
                job = self._jobs.popleft()
            job()


def _canonical(arguments: Mapping[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


class Ledger:
    """What a script did to tools with side effects, for the retry of a script that failed.

    While a script runs, its successful calls to tools marked ``side_effects`` are
    written down. When it fails, the next script's calls to those tools are answered
    from that list (marked ``replayed``) while they match it, identical and in the
    same order; the first call that differs ends the replay. Every other call runs.
    One ledger serves the scripts of one run, one after the other.
    """

    __slots__ = ("_lock", "_replayable", "_written")

    def __init__(self) -> None:
        self._written: list[CallRecord] = []
        self._replayable: deque[CallRecord] = deque()
        # Calls arrive on the event loop and on the sandbox's channel thread.
        self._lock = threading.Lock()

    def replay(self, name: str, arguments: Mapping[str, Any]) -> CallRecord | None:
        """The earlier record answering this call, or None: the call runs."""
        with self._lock:
            if not self._replayable:
                return None
            earlier = self._replayable[0]
            if earlier.name == name and _canonical(earlier.arguments) == _canonical(arguments):
                return self._replayable.popleft()
            self._replayable.clear()
            return None

    def write(self, record: CallRecord) -> None:
        """Note a successful call (run or replayed) of the script running now."""
        with self._lock:
            self._written.append(record)

    def script_ended(self, ok: bool) -> None:
        """The script ended: if it failed, the next one may replay what it did."""
        with self._lock:
            self._replayable = deque() if ok else deque(self._written)
            self._written = []


@dataclass(slots=True)
class _Prepared:
    call: ToolCall
    tool: Tool
    arguments: dict[str, Any]
    kwargs: dict[str, Any]
    repairs: tuple[str, ...]


class _Deferred:
    """A call that starts when first awaited: one that nobody awaits leaves nothing behind."""

    __slots__ = ("_start",)

    def __init__(self, start: Callable[[], Coroutine[Any, Any, CallRecord]]) -> None:
        self._start = start

    def __await__(self) -> Generator[Any, None, CallRecord]:
        return self._start().__await__()


class _Slots:
    """The concurrency limit: a semaphore whose free slot can be taken without awaiting.

    Slots are taken and given on the event loop, except by direct calls (see
    `Dispatcher.call_direct`), which take and give them from another thread: the
    counts change under a lock, and a waiter is only ever woken on its loop.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.in_use = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._lock = threading.Lock()

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


class DirectRun:
    """A call to a sync tool that runs on the caller's own thread (see `Dispatcher.call_direct`).

    Exactly one of `run` (the tool ended) and `abandon` (the caller gave up on it)
    concludes the record; the other then returns None. A call abandoned before `run`
    is recorded as not started, and `run` then does not start it.
    """

    __slots__ = (
        "_dispatcher",
        "_kwargs",
        "_ledger",
        "_lock",
        "_over",
        "_start",
        "_started",
        "_tool",
        "record",
        "timeout",
    )

    def __init__(
        self,
        dispatcher: Dispatcher,
        record: CallRecord,
        tool: Tool,
        kwargs: dict[str, Any],
        ledger: Ledger | None,
    ) -> None:
        self._dispatcher = dispatcher
        self._ledger = ledger
        self.record = record
        self._tool = tool
        self._kwargs = kwargs
        self.timeout = dispatcher._timeout_for(tool)
        self._lock = threading.Lock()
        self._started = self._over = False
        self._start = time.perf_counter()

    def run(self) -> CallRecord | None:
        """Run the tool here and return its record; None if the call was abandoned.

        What the tool raises, whatever it is, is recorded as its error.
        """
        with self._lock:
            if self._over:
                return None
            self._started = True
        self.record.started_at = time.time()
        self._start = time.perf_counter()
        value, error = _invoke(self._tool.function, self._kwargs)
        with self._lock:
            abandoned, self._over = self._over, True
        if abandoned:
            self._dispatcher._abandoned.remove()
            return None
        try:
            self._dispatcher._conclude(
                self.record,
                self._tool,
                self.timeout,
                self._start,
                value=value,
                error=error,
                ledger=self._ledger,
            )
        finally:
            self._dispatcher._slots.give_from_thread()
        return self.record

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
        record = self.record
        name = self._tool.name
        if not started:
            default = (
                "it was abandoned"
                if self.timeout is None
                else f"its {self.timeout:g} s ran out first"
            )
            record.error = f"{name} was not started: {reason or default}"
        elif reason is None and self.timeout is not None:
            self._dispatcher._conclude(
                record, self._tool, self.timeout, self._start, error=TimeoutError()
            )
        else:
            record.error = reason or f"{name} was abandoned before it ended"
            record.duration_s = time.perf_counter() - self._start
        if started:
            self._dispatcher._abandoned.add(name)
        self._dispatcher._slots.give_from_thread()
        return record


class _Lane:
    """A worker thread kept for the calls the dispatcher waits on directly.

    A call goes over, and word of its end comes back, as a byte through a pipe:
    ``os.write`` lets go of the GIL before it wakes the other thread, which can then run
    at once, where a lock released while holding the GIL wakes it only to wait for the
    GIL (about twice the cost). A call that outlasts the wait is handed on as a
    `_Pending`, and the lane stays busy until the call ends.
    """

    def __init__(self) -> None:
        self.busy = False
        self._go_read, self._go_write = os.pipe()
        self._ended_read, self._ended_write = os.pipe()
        self._handover = threading.Lock()
        self._job: Callable[[], Ended] | None = None
        self._outcome: Ended = (None, None)
        self._late: _Pending | None = None
        threading.Thread(target=self._serve, name="tooluse-tool-direct", daemon=True).start()

    def run(
        self, job: Callable[[], Ended], wait: float, later: Callable[[], _Pending]
    ) -> Ended | _Pending:
        """How ``job`` ended if it ends within ``wait`` seconds, else ``later()`` awaiting it."""
        self.busy = True
        self._job = job
        os.write(self._go_write, b"\0")
        ended = [self._ended_read]
        if not select.select(ended, [], [], wait)[0]:
            with self._handover:
                if not select.select(ended, [], [], 0)[0]:
                    self._late = later()
                    return self._late
        os.read(self._ended_read, 1)
        self.busy = False
        outcome, self._outcome = self._outcome, (None, None)
        return outcome

    def close(self) -> None:
        """Let the thread end, now or once the call it runs ends."""
        if self._go_write >= 0:
            os.close(self._go_write)
            self._go_write = -1

    def _serve(self) -> None:
        try:
            while os.read(self._go_read, 1):
                job, self._job = self._job, None
                assert job is not None
                outcome = job()
                with self._handover:
                    late, self._late = self._late, None
                    if late is None:
                        self._outcome = outcome
                        os.write(self._ended_write, b"\0")
                        continue
                late.deliver(outcome)
                self.busy = False
        finally:
            for fd in (self._go_read, self._ended_read, self._ended_write):
                os.close(fd)


class Dispatcher:
    """Validates and executes calls against a toolbox.

    Args:
        tools: the tools that may be called.
        timeout: default seconds per call (a tool's own ``timeout`` wins);
            None waits forever.
        max_concurrency: calls executing at once, across all callers.
        max_calls_per_turn: calls of one turn beyond this are refused.
        max_argument_bytes: argument text beyond this is refused unread.
    """

    def __init__(
        self,
        tools: Toolbox,
        *,
        timeout: float | None = 60.0,
        max_concurrency: int = 16,
        max_calls_per_turn: int = 128,
        max_argument_bytes: int = 1_000_000,
    ) -> None:
        self.tools = tools
        self.timeout = timeout
        self.max_calls_per_turn = max_calls_per_turn
        self.max_argument_bytes = max_argument_bytes
        self._max_concurrency = max_concurrency
        self._checkers: dict[str, ArgumentChecker] = {}
        self._slots = _Slots(max_concurrency)
        self._workers: _Workers | None = None
        self._lane: _Lane | None = None
        self._abandoned = _Abandoned()

    @property
    def abandoned(self) -> int:
        """Calls given up on (timed out, or their caller stopped) whose tool still runs."""
        return self._abandoned.count

    def close(self) -> None:
        """Stop the worker threads; a sync tool still running is abandoned, not joined."""
        if self._workers is not None:
            self._workers.close()
            self._workers = None
        if self._lane is not None:
            self._lane.close()
            self._lane = None

    # --- validation -----------------------------------------------------------------

    def _reject(self, call: ToolCall, error: str, round_: int, source: str) -> RejectedCall:
        raw = call.arguments
        if len(raw) > _RAW_KEEP:
            raw = raw[:_RAW_KEEP] + f"... [{len(call.arguments) - _RAW_KEEP:,} characters cut]"
        return RejectedCall(
            id=call.id, name=call.name, arguments=raw, error=error, round=round_, source=source
        )

    def _unknown_tool(self, name: str) -> str:
        if not name:
            head = "the call has no tool name"
        else:
            head = f"there is no tool named {name!r}"
            close = self.tools.closest(name)
            if close:
                head += f"; did you mean {', '.join(repr(c) for c in close)}?"
        names = self.tools.names
        listed = ", ".join(names[:30]) + (f" and {len(names) - 30} more" if len(names) > 30 else "")
        return f"{head}. Available tools: {listed}" if names else f"{head}. No tools are available."

    def prepare(
        self, call: ToolCall, *, round_: int = 0, source: str = "json"
    ) -> _Prepared | RejectedCall:
        """Check one call completely without running anything."""
        tool = self.tools.get(call.name)
        if tool is None:
            return self._reject(call, self._unknown_tool(call.name), round_, source)
        try:
            parsed = parse_arguments(call.arguments, max_bytes=self.max_argument_bytes)
        except ArgumentsError as exc:
            return self._reject(call, f"invalid call to {tool.name}: {exc}", round_, source)
        return self._check(call, tool, parsed.value, parsed.repairs, round_=round_, source=source)

    def _prepare_decoded(
        self, call_id: str, name: str, arguments: dict[str, Any], *, round_: int, source: str
    ) -> _Prepared | RejectedCall:
        # Arguments decoded from JSON are what parsing their text would give: only the
        # text's size needs checking. Refusals are worded from the text, as for JSON calls.
        call = ToolCall(call_id, name, _arguments_text(arguments))
        tool = self.tools.get(name)
        if tool is None or len(call.arguments) > self.max_argument_bytes:
            return self.prepare(call, round_=round_, source=source)
        return self._check(call, tool, arguments, (), round_=round_, source=source)

    def _check(
        self,
        call: ToolCall,
        tool: Tool,
        parsed: dict[str, Any],
        repairs: tuple[str, ...],
        *,
        round_: int,
        source: str,
    ) -> _Prepared | RejectedCall:
        try:
            checker = self._checkers.get(tool.name)
            if checker is None:
                checker = self._checkers[tool.name] = ArgumentChecker(tool.parameters)
            arguments, null_repairs = checker.check(parsed)
        except ArgumentsError as exc:
            return self._reject(call, f"invalid call to {tool.name}: {exc}", round_, source)
        try:
            kwargs = tool.convert_arguments(arguments)
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"argument '{'.'.join(str(p) for p in err['loc'])}': {err['msg']}"
                for err in exc.errors(include_url=False)
            )
            return self._reject(call, f"invalid call to {tool.name}: {problems}", round_, source)
        return _Prepared(call, tool, arguments, kwargs, repairs + null_repairs)

    # --- execution ------------------------------------------------------------------

    def execute_nowait(
        self,
        prepared: _Prepared,
        *,
        round_: int = 0,
        source: str = "json",
        alone: bool = False,
        ledger: Ledger | None = None,
    ) -> CallRecord | Awaitable[CallRecord]:
        """Like `execute`, but a call that can be answered at once comes back as its record.

        That is a replay from the ledger, or a call to a sync tool made ``alone`` while
        no other call runs, which is waited for on its thread for a moment (holding up
        the event loop that long) and finishes within it. Anything else comes back as an
        awaitable of the record.
        """
        tool = prepared.tool
        record = self._record(prepared, round_, source)
        if self._replayed(record, tool, ledger):
            return record
        if (
            not alone
            or not _CAN_WAIT_DIRECTLY
            or tool.is_async
            or self._slots.in_use
            or (self._lane is not None and self._lane.busy)
            or not self._slots.try_take()
        ):
            return _Deferred(partial(self._execute, record, tool, prepared.kwargs, ledger))
        timeout = self._timeout_for(tool)
        record.started_at = time.time()
        start = time.perf_counter()
        # Alone, the call has nothing to run beside it: waiting on its thread directly
        # costs one wake-up instead of a task and a round trip through the event loop's
        # self-pipe, and most tools finish within the moment. Slower calls go on as a task.
        wait = _INLINE_WAIT_S if timeout is None else min(_INLINE_WAIT_S, timeout)
        try:
            loop = asyncio.get_running_loop()  # outside a loop: fail before the tool runs
            if self._lane is None:
                self._lane = _Lane()
                # Its thread ends with the dispatcher even if close() is never called.
                weakref.finalize(self, self._lane.close)
            ended = self._lane.run(
                partial(_invoke, tool.function, prepared.kwargs),
                wait,
                partial(_Pending, loop, self._abandoned, tool.name),
            )
        except BaseException:
            self._slots.give()
            raise
        if isinstance(ended, _Pending):
            later = loop.create_task(
                self._finish_later(
                    record=record,
                    tool=tool,
                    pending=ended,
                    start=start,
                    timeout=timeout,
                    ledger=ledger,
                )
            )
            # The slot is the task's now, given back however the task ends, even if it
            # is cancelled before its first step.
            later.add_done_callback(self._slots.give_back)
            return later
        self._slots.give()
        value, error = ended
        self._conclude(record, tool, timeout, start, value=value, error=error, ledger=ledger)
        return record

    @staticmethod
    def _record(prepared: _Prepared, round_: int, source: str) -> CallRecord:
        return CallRecord(
            id=prepared.call.id,
            name=prepared.tool.name,
            arguments=prepared.arguments,
            round=round_,
            repairs=prepared.repairs,
            source=source,
        )

    @staticmethod
    def _replayed(record: CallRecord, tool: Tool, ledger: Ledger | None) -> bool:
        """Answer ``record`` from the ledger if it replays a call that already succeeded."""
        if ledger is None or not tool.side_effects:
            return False
        earlier = ledger.replay(tool.name, record.arguments)
        if earlier is None:
            return False
        record.result = earlier.result
        record.replayed = True
        record.started_at = time.time()
        ledger.write(record)
        return True

    async def execute(
        self,
        prepared: _Prepared,
        *,
        round_: int = 0,
        source: str = "json",
        alone: bool = False,
        ledger: Ledger | None = None,
    ) -> CallRecord:
        """Run a prepared call; whatever the tool does, a record comes back."""
        record = self.execute_nowait(
            prepared, round_=round_, source=source, alone=alone, ledger=ledger
        )
        return record if isinstance(record, CallRecord) else await record

    async def _execute(
        self, record: CallRecord, tool: Tool, kwargs: dict[str, Any], ledger: Ledger | None
    ) -> CallRecord:
        timeout = self._timeout_for(tool)
        await self._slots.take()
        try:
            record.started_at = time.time()
            start = time.perf_counter()
            if tool.is_async:
                ended = await self._run_async(tool, kwargs, timeout)
            else:
                pending = _Pending(asyncio.get_running_loop(), self._abandoned, tool.name)
                try:
                    self._start_thread(tool, kwargs, pending)
                except RuntimeError as exc:
                    record.error = f"{tool.name} was not started: no thread for it: {exc}"
                    return record
                ended = await pending.wait(timeout)
            value, error = (None, TimeoutError()) if ended is None else ended
            self._conclude(record, tool, timeout, start, value=value, error=error, ledger=ledger)
        finally:
            self._slots.give()
        return record

    def _start_thread(self, tool: Tool, kwargs: dict[str, Any], pending: _Pending) -> None:
        if self._workers is None:
            self._workers = _Workers()
        function = tool.function
        self._workers.start(lambda: pending.deliver(_invoke(function, kwargs)))

    async def _run_async(
        self, tool: Tool, kwargs: dict[str, Any], timeout: float | None
    ) -> Ended | None:
        """How an async tool ended, or None if it outlasted ``timeout`` (it is abandoned).

        A tool that catches its cancellation and goes on still times out on time: it
        runs as a task of its own, which is cancelled and left to end as it will.
        """
        try:
            invocation = tool.function(**kwargs)
            if timeout is None:
                return await invocation, None
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the caller's cancellation, not the tool's failure
            return None, exc
        except BaseException as exc:
            return None, exc
        running = asyncio.ensure_future(invocation)
        try:
            await asyncio.wait((running,), timeout=max(timeout, 0.0))
        except asyncio.CancelledError:
            running.cancel()
            raise
        if running.done():
            if running.cancelled():
                return None, asyncio.CancelledError()
            error = running.exception()
            return (None, error) if error is not None else (running.result(), None)
        running.cancel()
        self._abandoned.add(tool.name)
        running.add_done_callback(self._async_abandoned_ended)
        return None

    def _async_abandoned_ended(self, task: asyncio.Future[Any]) -> None:
        self._abandoned.remove()
        if not task.cancelled():
            task.exception()  # retrieved: an abandoned call's failure is nobody's to log

    async def _finish_later(
        self,
        *,
        record: CallRecord,
        tool: Tool,
        pending: _Pending,
        start: float,
        timeout: float | None,
        ledger: Ledger | None,
    ) -> CallRecord:
        left = None if timeout is None else timeout - (time.perf_counter() - start)
        ended = await pending.wait(left)
        value, error = (None, TimeoutError()) if ended is None else ended
        self._conclude(record, tool, timeout, start, value=value, error=error, ledger=ledger)
        return record

    def _timeout_for(self, tool: Tool) -> float | None:
        return tool.timeout if tool.timeout is not None else self.timeout

    def _conclude(
        self,
        record: CallRecord,
        tool: Tool,
        timeout: float | None,
        start: float,
        *,
        value: Any = None,
        error: BaseException | None = None,
        ledger: Ledger | None = None,
    ) -> None:
        """Fill in how the call ended, and write it in the ledger if it counts."""
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
        elif isinstance(error, TimeoutError) and timeout is not None:
            record.error = f"{tool.name} timed out after {timeout:g} s"
        else:
            record.error = f"{tool.name} failed: {type(error).__name__}: {error}"
        record.duration_s = time.perf_counter() - start
        if ledger is not None and tool.side_effects and record.ok:
            ledger.write(record)

    async def run(
        self, calls: Sequence[ToolCall], *, round_: int = 0, source: str = "json"
    ) -> list[Outcome]:
        """Validate and execute one turn's calls concurrently, in the calls' order.

        One call failing, timing out or being refused never loses its
        siblings' results.
        """
        outcomes: list[Outcome | None] = [None] * len(calls)
        pending: list[tuple[int, _Prepared]] = []
        for index, call in enumerate(calls):
            if index >= self.max_calls_per_turn:
                outcomes[index] = self._reject(
                    call,
                    f"not run: this turn made {len(calls):,} calls and at most "
                    f"{self.max_calls_per_turn} run per turn; make the rest in the next turn",
                    round_,
                    source,
                )
                continue
            prepared = self.prepare(call, round_=round_, source=source)
            if isinstance(prepared, RejectedCall):
                outcomes[index] = prepared
            else:
                pending.append((index, prepared))
        if len(pending) == 1:
            index, prepared = pending[0]
            outcomes[index] = await self.execute(prepared, round_=round_, source=source, alone=True)
        elif pending:
            records = await asyncio.gather(
                *(self.execute(p, round_=round_, source=source) for _, p in pending)
            )
            for (index, _), record in zip(pending, records, strict=True):
                outcomes[index] = record
        return [o for o in outcomes if o is not None]

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str,
        *,
        call_id: str,
        round_: int = 0,
        source: str = "script",
        ledger: Ledger | None = None,
    ) -> Outcome:
        """Validate and execute one call given by name (how scripts call tools).

        With a ``ledger``, a call that replays the failed script before it is
        answered from there (see `Ledger`).
        """
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
        outcome = self.call_nowait(
            name, text, call_id=call_id, round_=round_, source=source, ledger=ledger
        )
        return outcome if isinstance(outcome, CallRecord | RejectedCall) else await outcome

    def call_nowait(
        self,
        name: str,
        arguments: dict[str, Any] | str,
        *,
        call_id: str,
        round_: int = 0,
        source: str = "script",
        ledger: Ledger | None = None,
    ) -> Outcome | Awaitable[Outcome]:
        """Like `call`, but an outcome that is ready at once is returned as it is.

        ``arguments`` is the argument text, or the object it decodes to (JSON values
        only, as a script's call arrives). A refused call, a replay from the ledger, or
        a quick sync tool called while no other call runs (see `execute_nowait`) needs
        no task; anything else comes back as an awaitable of the outcome.
        """
        if isinstance(arguments, str):
            prepared = self.prepare(
                ToolCall(call_id, name, arguments), round_=round_, source=source
            )
        else:
            prepared = self._prepare_decoded(call_id, name, arguments, round_=round_, source=source)
        if isinstance(prepared, RejectedCall):
            return prepared
        return self.execute_nowait(
            prepared, round_=round_, source=source, alone=True, ledger=ledger
        )

    def call_direct(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        call_id: str | Callable[[], str],
        round_: int = 0,
        source: str = "script",
        ledger: Ledger | None = None,
    ) -> Outcome | DirectRun | None:
        """Check a call on the caller's own thread, to run a sync tool right there.

        For a caller that is not the event loop and can wait for the tool itself (the
        sandbox's channel thread, while a script waits on one call): no thread handoff
        and no turn of the event loop. Returns None, having done nothing, when the tool
        is unknown or async or no slot of the concurrency limit is free; the caller then
        makes the call the usual way (`call_nowait`). Otherwise ``call_id`` (or what it
        returns) names the call, and the result is the refused call, the replay from the
        ledger, or a `DirectRun` holding a slot: the caller runs it, and the timeout is
        the caller's to enforce with `DirectRun.abandon`.
        """
        tool = self.tools.get(name)
        if tool is None or tool.is_async or not self._slots.try_take():
            return None
        try:
            if not isinstance(call_id, str):
                call_id = call_id()
            record = self._quick_record(call_id, tool, arguments, round_, source)
            kwargs: dict[str, Any] = {}
            if record is not None:
                try:
                    kwargs = tool.convert_arguments(arguments)
                except pydantic.ValidationError:
                    record = None
            if record is None:
                # Anything but a call valid as sent: the full path words the refusal, or
                # makes the repair.
                prepared = self._prepare_decoded(
                    call_id, name, arguments, round_=round_, source=source
                )
                if isinstance(prepared, RejectedCall):
                    self._slots.give_from_thread()
                    return prepared
                record = self._record(prepared, round_, source)
                kwargs = prepared.kwargs
            if self._replayed(record, tool, ledger):
                self._slots.give_from_thread()
                return record
        except BaseException:
            self._slots.give_from_thread()
            raise
        return DirectRun(self, record, tool, kwargs, ledger)

    def _quick_record(
        self, call_id: str, tool: Tool, arguments: dict[str, Any], round_: int, source: str
    ) -> CallRecord | None:
        """A record for a call whose arguments are valid as sent, or None for the full path."""
        if len(_arguments_text(arguments)) > self.max_argument_bytes:
            return None
        checker = self._checkers.get(tool.name)
        if checker is None or not checker.is_valid(arguments):
            return None
        return CallRecord(
            id=call_id, name=tool.name, arguments=arguments, round=round_, source=source
        )
