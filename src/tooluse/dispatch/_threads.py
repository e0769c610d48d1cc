"""The threads sync tools run on, and how the event loop learns that a tool ended.

A sync tool cannot be stopped from outside. Each thread here is a daemon, so a tool
that never returns never holds up the interpreter's exit, and a call given up on is
counted (`Abandoned`) until its tool does return.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
import warnings
from asyncio import wait_for
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["CAN_WAIT_DIRECTLY", "Abandoned", "Ended", "Lane", "Pending", "Workers", "invoke"]

# Kept to POSIX systems, where the lane was measured; elsewhere such a call runs as any other.
CAN_WAIT_DIRECTLY = os.name == "posix"

Ended = tuple[Any, BaseException | None]
"""How a tool's run ended: its value, or what it raised."""


def invoke(function: Callable[..., Any], kwargs: dict[str, Any]) -> Ended:
    # Whatever the tool raises, SystemExit and StopIteration included, is its own
    # failure: it never reaches a future, where StopIteration cannot be set.
    try:
        return function(**kwargs), None
    except BaseException as exc:
        return None, exc


class Abandoned:
    """Calls given up on whose tool still runs: counted, and warned about once."""

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


class Pending:
    """The end of a sync tool's run on another thread, for the event loop to await."""

    __slots__ = ("_abandoned", "_given_up", "_lock", "_loop", "_name", "_over", "future")

    def __init__(self, loop: asyncio.AbstractEventLoop, abandoned: Abandoned, name: str) -> None:
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


class Workers:
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


class Lane:
    """A worker thread kept for the calls the dispatcher waits on directly.

    A call goes over as a byte through a pipe: ``os.write`` lets go of the GIL before it
    wakes the lane, which can then run at once (a lock released while holding the GIL
    would wake it only to wait for the GIL). Word of its end comes back as a lock the
    lane releases, the other way round: a byte written with the GIL let go can wake the
    caller while the lane still needs the GIL to get back to its wait, and each then
    waits on the other. On a 2-core virtual machine the lock took a call from 3.1
    context switches to 2.2, and a turn of ``bench/loop_overhead.py`` from about 70 µs
    to 55. A call that outlasts the wait is handed on as a `Pending`, and the lane stays
    busy until the call ends.

    Where it can (Linux), both handoffs happen on one CPU: while the caller waits, it
    and the lane are held to the CPU the caller is on, so that neither wakes the other
    across CPUs. On a 2-core virtual machine a pipe round trip between two threads took
    69 µs across CPUs and 7 µs held to one. The tool itself runs with the lane's usual
    CPUs (threads and processes it starts inherit those), and the caller's own are put
    back as soon as the call ends or is handed on.
    """

    def __init__(self) -> None:
        self.busy = False
        self._go_read, self._go_write = os.pipe()
        self._ended = threading.Lock()
        self._ended.acquire()  # released by the lane, each time a call ends in time
        self._handover = threading.Lock()
        self._job: Callable[[], Ended] | None = None
        self._outcome: Ended = (None, None)
        self._late: Pending | None = None
        self._pinning = _Pinning.here()
        threading.Thread(target=self._serve, name="tooluse-tool-direct", daemon=True).start()

    def run(
        self, job: Callable[[], Ended], wait: float, later: Callable[[], Pending]
    ) -> Ended | Pending:
        """How ``job`` ended if it ends within ``wait`` seconds, else ``later()`` awaiting it."""
        self.busy = True
        self._job = job
        pinning = self._pinning
        mine = pinning.hold() if pinning is not None else None
        try:
            os.write(self._go_write, b"\0")
            if not self._ended.acquire(True, wait):
                with self._handover:
                    if not self._ended.acquire(blocking=False):
                        self._late = later()
                        return self._late
        finally:
            if mine is not None and pinning is not None:
                pinning.release(mine)
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
            pinning = self._pinning
            if pinning is not None:
                pinning.lane = threading.get_native_id()
            while os.read(self._go_read, 1):
                job, self._job = self._job, None
                assert job is not None
                if pinning is not None:
                    pinning.free_lane()
                outcome = job()
                if pinning is not None:
                    pinning.hold_lane()
                with self._handover:
                    late, self._late = self._late, None
                    if late is None:
                        self._outcome = outcome
                        self._ended.release()
                        continue
                late.deliver(outcome)
                self.busy = False
        finally:
            os.close(self._go_read)


class _Pinning:
    """The CPU a lane's handoffs happen on, and how the two threads are held to it.

    The caller holds itself and the lane to the CPU it is on (`hold`) before it hands
    a call over, and lets go (`release`) once the call ends or is handed on. The lane
    runs the tool itself with its usual CPUs (`free_lane`), and holds itself to the
    CPU again before it reports the end (`hold_lane`). Any failure to set a thread's
    CPUs turns this off for good: the handoffs then go as the scheduler places them.
    """

    def __init__(self, getcpu: Callable[[], int], usual: set[int]) -> None:
        self._getcpu = getcpu
        self._usual = usual
        self.lane: int | None = None  # the lane thread's id, once it has started
        self._cpu: int | None = None  # the CPU the lane is held to, when it is held
        self._on = True

    @classmethod
    def here(cls) -> _Pinning | None:
        """Pinning for a lane made on this thread, or None where it cannot be done."""
        getcpu = _sched_getcpu()
        if getcpu is None:
            return None
        try:
            usual = os.sched_getaffinity(0)
        except OSError:
            return None
        if len(usual) < 2:
            return None
        return cls(getcpu, usual)

    def hold(self) -> set[int] | None:
        """Hold the calling thread and the lane to the caller's CPU; the caller's CPUs
        to put back, or None if nothing was held."""
        if not self._on or self.lane is None:
            return None
        try:
            cpu = self._getcpu()
            mine = os.sched_getaffinity(0)
            if cpu not in mine:
                return None
            if cpu != self._cpu:
                os.sched_setaffinity(self.lane, {cpu})
                self._cpu = cpu
            os.sched_setaffinity(0, {cpu})
        except OSError:
            self._on = False
            return None
        return mine

    def release(self, mine: set[int]) -> None:
        """Give the calling thread back the CPUs `hold` returned."""
        try:
            os.sched_setaffinity(0, mine)
        except OSError:
            self._on = False

    def free_lane(self) -> None:
        """On the lane: its usual CPUs, for the tool it is about to run."""
        if self._cpu is not None:
            try:
                os.sched_setaffinity(0, self._usual)
            except OSError:
                self._on = False

    def hold_lane(self) -> None:
        """On the lane: held to its CPU again, for the next handoff."""
        cpu = self._cpu
        if cpu is not None and self._on:
            try:
                os.sched_setaffinity(0, {cpu})
            except OSError:
                self._on = False


@functools.cache
def _sched_getcpu() -> Callable[[], int] | None:
    """The C library's ``sched_getcpu``, looked up once a process: a lane is made for each
    run, and the lookup cost its first call about 10 µs. None where there is none."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    try:
        import ctypes

        getcpu = ctypes.CDLL(None, use_errno=True).sched_getcpu
    except (OSError, AttributeError):
        return None
    getcpu.restype, getcpu.argtypes = ctypes.c_int, []
    found: Callable[[], int] = getcpu
    return found
