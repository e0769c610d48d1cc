"""The event loop the blocking drivers run on: `Agent.run`, `Agent.stream_sync`, `run_script`.

`asyncio.run` would do but for two things. It installs its Ctrl-C handler at every
call, which costs more than a streamed event; and when it closes, it waits for every
task still pending, so an async tool that was given up on (timed out, or its run
cancelled) but catches its cancellation and goes on would hold the caller until it
ends, and a thread an abandoned tool started through the loop's executor would hold
it too. `PrivateLoop` closes without waiting for either: such a tool is left behind,
as a sync tool is left on its thread.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
from collections.abc import Callable, Collection, Coroutine
from typing import Any, TypeVar

__all__ = ["PrivateLoop"]

_T = TypeVar("_T")


class PrivateLoop:
    """A new event loop in this thread, for one step (`run`) or many.

    The first Ctrl-C while a step runs cancels the step and `run` raises
    KeyboardInterrupt once it has unwound, as `asyncio.Runner.run` does; between
    steps it is raised at once, as without a handler.

    Closing (the ``with`` block's end) cancels the tasks left and waits for them, as
    `asyncio.run` does, except for those `left_behind` names: the tools given up on.
    The loop is not waited for either: while any of them runs it goes on in a daemon
    thread of its own, which closes it once they end, and it never waits for the
    threads of its executor.
    """

    def __init__(self, left_behind: Callable[[], Collection[asyncio.Future[Any]]] = tuple) -> None:
        self._loop = asyncio.new_event_loop()
        self._left_behind = left_behind
        self._step: asyncio.Task[Any] | None = None
        self._interrupted = False
        self._previous: Any = None
        self._wakeup: tuple[socket.socket, socket.socket] | None = None

    def __enter__(self) -> PrivateLoop:
        asyncio.set_event_loop(self._loop)
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        ):
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            self._wakeup = _wake_on_signals(self._loop)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._previous is not None and signal.getsignal(signal.SIGINT) == self._on_sigint:
            signal.signal(signal.SIGINT, self._previous)
        if self._wakeup is not None:
            _stop_waking(self._loop, self._wakeup)
            self._wakeup = None
        loop = self._loop
        try:
            _cancel_the_rest(loop, set(self._left_behind()))
            loop.run_until_complete(loop.shutdown_asyncgens())
            left = [task for task in self._left_behind() if not task.done()]
        except BaseException:
            asyncio.set_event_loop(None)
            loop.close()
            raise
        asyncio.set_event_loop(None)
        if left:
            threading.Thread(
                target=_run_out, args=(loop,), name="tooluse-left-behind", daemon=True
            ).start()
        else:
            # Closing shuts the executor down without joining its threads: one that an
            # abandoned tool keeps busy ends on its own.
            loop.close()

    def run(self, step: Coroutine[Any, Any, _T]) -> _T:
        task: asyncio.Task[_T] = self._loop.create_task(step)
        self._step = task
        try:
            return self._loop.run_until_complete(task)
        except asyncio.CancelledError:
            if self._interrupted:
                raise KeyboardInterrupt from None
            raise
        finally:
            self._step = None

    def _on_sigint(self, signum: int, frame: object) -> None:
        step = self._step
        if step is not None and not step.done() and not self._interrupted:
            self._interrupted = True
            step.cancel()
            self._loop.call_soon_threadsafe(lambda: None)  # wake the loop
            return
        raise KeyboardInterrupt


def _wake_on_signals(
    loop: asyncio.AbstractEventLoop,
) -> tuple[socket.socket, socket.socket] | None:
    """Make a signal wake ``loop`` whichever thread the kernel hands it to.

    Python runs signal handlers in the main thread, but the kernel may deliver a
    process's signal to any thread: to a tool's, say. The main thread, asleep in the
    loop's wait for I/O, would then run the Ctrl-C handler only when something else
    woke it, which may be when that tool ends. Python writes a byte to the wakeup fd
    whatever thread takes the signal; the loop watching it wakes, and the handler runs.
    Nothing is done when a wakeup fd is already set: it belongs to someone else's loop.
    """
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    if previous != -1:
        signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()
        return None
    loop.add_reader(reader.fileno(), _drain, reader)
    return reader, writer


def _drain(reader: socket.socket) -> None:
    try:
        while reader.recv(512):
            pass
    except (BlockingIOError, InterruptedError):
        pass


def _stop_waking(
    loop: asyncio.AbstractEventLoop, wakeup: tuple[socket.socket, socket.socket]
) -> None:
    reader, writer = wakeup
    current = signal.set_wakeup_fd(-1)
    if current != writer.fileno():  # someone set their own meanwhile: theirs stays
        signal.set_wakeup_fd(current)
    loop.remove_reader(reader.fileno())
    reader.close()
    writer.close()


def _cancel_the_rest(loop: asyncio.AbstractEventLoop, spared: set[asyncio.Future[Any]]) -> None:
    """Cancel every task but the ``spared`` and wait for them, as `asyncio.run` does."""
    rest = [task for task in asyncio.all_tasks(loop) if task not in spared]
    if not rest:
        return
    for task in rest:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*rest, return_exceptions=True))
    for task in rest:
        if not task.cancelled() and task.exception() is not None:
            loop.call_exception_handler(
                {
                    "message": "unhandled exception while closing the run's event loop",
                    "exception": task.exception(),
                    "task": task,
                }
            )


def _run_out(loop: asyncio.AbstractEventLoop) -> None:
    """Run ``loop`` until the tasks left on it (and any they start) end, then close it."""
    try:
        while tasks := asyncio.all_tasks(loop):
            loop.run_until_complete(asyncio.wait(tasks))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
