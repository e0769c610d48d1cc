"""The host end of a script's tool channel: JSON lines in, JSON lines out.

The channel is a pair of pipes, one each way: on a small message a pipe's round trip
costs about half a socket's.

Two readers share the rest. `LoopChannel` reads in the event loop's reader callback.
`ThreadChannel` reads on a thread of its own, where a call the script waits on alone is
served right away (no turn of the event loop, no handoff to a worker thread), and passes
every other message to the event loop in batches. Either way a script's messages are
handled in the order it wrote them, and replies may be sent from the loop or the thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ._wire import decode_message

__all__ = ["Channel", "LoopChannel", "Message", "ThreadChannel"]

Message = dict[str, Any]

_MAX_LINE = 32 * 1024 * 1024
# Replies the script has not read yet, held on the host: past this the script is stopped.
_MAX_UNSENT = 64 * 1024 * 1024
_RECV_SIZE = 1 << 16
# After serving a call, how long the channel thread keeps looking for the script's next
# message before it sleeps: a script calling tools in a loop sends it within microseconds,
# and waking a sleeping thread costs more than that on a virtual machine.
_SPIN_S = 100e-6
_TOO_LONG = f"a tool call from the script exceeded {_MAX_LINE >> 20} MiB"
_UNREAD = (
    f"the script left more than {_MAX_UNSENT >> 20} MiB of tool replies unread; it was stopped"
)
# The channel thread sleeps in poll() at most this long before it checks whether the
# channel was closed (closing a pipe does not wake a poll() on it).
_POLL_MS = 100


class Channel:
    """What both readers share: splitting lines, sending, ending.

    ``on_message`` is called on the event loop, once per message, and returns False
    once no more are wanted.
    """

    def __init__(
        self,
        calls: int,
        replies: int,
        on_message: Callable[[Message], bool],
        on_oversized: Callable[[str], None],
    ) -> None:
        self._calls_fd = calls
        self._replies_fd = replies
        self._on_message = on_message
        self._on_oversized = on_oversized
        self._partial = bytearray()
        self._unsent = bytearray()
        self._writer_armed = False
        # Sending, reading and closing happen under this lock: replies come from the loop
        # and the reader thread, and a descriptor must not be used once closed.
        self._lock = threading.Lock()
        self._closed = False
        self._loop = asyncio.get_running_loop()
        self.ended: asyncio.Future[None] = self._loop.create_future()
        os.set_blocking(calls, False)
        os.set_blocking(replies, False)

    def start(self) -> None:
        """Start reading (once whatever the callbacks use is in place)."""
        raise NotImplementedError

    def _recv(self) -> bytes | None:
        """What the script sent; b"" once it is gone, None if nothing is waiting."""
        try:
            return os.read(self._calls_fd, _RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            return b""

    def _lines(self, data: bytes) -> list[bytes] | None:
        """The complete lines ``data`` ends, keeping the rest; None if a line is too long."""
        lines = data.split(b"\n")
        if self._partial:
            self._partial += lines[0]
            if len(lines) == 1:
                return None if len(self._partial) > _MAX_LINE else []
            lines[0] = bytes(self._partial)
            self._partial.clear()
        rest = lines.pop()
        if rest:
            self._partial += rest
            if len(self._partial) > _MAX_LINE:
                return None
        return lines

    def send(self, data: bytes) -> None:
        """Send ``data`` (from the loop or the reader thread), or keep it until it can go."""
        with self._lock:
            if self._closed:
                return
            if self._unsent:
                if len(self._unsent) + len(data) > _MAX_UNSENT:
                    self._unsent.clear()
                    self.on_loop(self._oversized, _UNREAD)
                    return
                self._unsent += data
                return
            try:
                sent = os.write(self._replies_fd, data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                # The script is gone: nobody is left to read the reply.
                return
            if sent == len(data):
                return
            # The script is not reading its replies as fast as they come: keep the rest
            # until it does.
            self._unsent += memoryview(data)[sent:]
        self.on_loop(self._arm_writer)

    def _arm_writer(self) -> None:
        with self._lock:
            if self._closed or self._writer_armed or not self._unsent:
                return
            self._writer_armed = True
        self._loop.add_writer(self._replies_fd, self._write_unsent)

    def _write_unsent(self) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                sent = os.write(self._replies_fd, self._unsent)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                sent = len(self._unsent)
            del self._unsent[:sent]
            if self._unsent:
                return
            self._writer_armed = False
        self._loop.remove_writer(self._replies_fd)

    def on_loop(self, callback: Callable[..., object], *args: object) -> None:
        """Run ``callback`` on the event loop soon, from any thread; nothing once it is closed."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is left to tell
            self._loop.call_soon_threadsafe(callback, *args)

    def _deliver(self, messages: list[Message]) -> None:
        for message in messages:
            if self.ended.done():
                return
            if not self._on_message(message):
                self.finish()
                return

    def _oversized(self, message: str = "") -> None:
        if not self.ended.done():
            self._on_oversized(message or _TOO_LONG)
            self.finish()

    def finish(self) -> None:
        """No more messages are wanted (on the loop)."""
        if not self.ended.done():
            self.ended.set_result(None)

    def close(self) -> None:
        """Stop reading and close both pipes (on the loop)."""
        self.finish()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._unsent.clear()
            if self._writer_armed:
                self._loop.remove_writer(self._replies_fd)
            os.close(self._calls_fd)
            os.close(self._replies_fd)


class LoopChannel(Channel):
    """Read from the event loop's reader callback: one ``recv`` and one turn per batch."""

    def start(self) -> None:
        self._loop.add_reader(self._calls_fd, self._read)

    def _read(self) -> None:
        data = self._recv()
        if data is None:
            return
        if not data:
            self.finish()
            return
        lines = self._lines(data)
        if lines is None:
            self._oversized()
            return
        for line in lines:
            message = decode_message(line)
            if message is not None and not self._on_message(message):
                self.finish()
                return

    def finish(self) -> None:
        if not self._closed and not self.ended.done():
            self._loop.remove_reader(self._calls_fd)
        super().finish()


class ThreadChannel(Channel):
    """Read on a thread of its own, which serves the calls it can right there.

    ``serve`` is called on the thread with each message: True if it served the message
    (and sent the reply), False to hand it to the event loop, None if the thread was
    retired meanwhile (a call it ran was abandoned; see `retire`) and must stop.
    """

    def __init__(
        self,
        calls: int,
        replies: int,
        on_message: Callable[[Message], bool],
        on_oversized: Callable[[str], None],
        serve: Callable[[Message], bool | None],
    ) -> None:
        super().__init__(calls, replies, on_message, on_oversized)
        self._serve = serve
        # Lines read but not yet handled: a thread retired in the middle of a batch leaves
        # the rest to the next one.
        self._backlog: deque[bytes] = deque()
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        self._reader = self._start_reader()

    def _start_reader(self) -> threading.Thread:
        reader = threading.Thread(target=self._read_all, name="tooluse-sandbox-calls", daemon=True)
        reader.start()
        return reader

    def retire(self) -> None:
        """The reader is stuck in a call that was abandoned: start another (on the loop)."""
        if not self._closed and not self.ended.done():
            self._reader = self._start_reader()

    def _read_all(self) -> None:
        try:
            self._read_until_done()
        except BaseException:
            # A bug, not the script's doing: end the run rather than leave it waiting.
            self.on_loop(self.finish)
            raise

    def _read_until_done(self) -> None:
        poller = select.poll()
        poller.register(self._calls_fd, select.POLLIN)
        spin_until = 0.0
        while not self._closed:
            if self._backlog:
                handled = self._handle_backlog()
                if handled is None:
                    return
                if handled:
                    spin_until = time.perf_counter() + _SPIN_S
            if not poller.poll(0):
                if time.perf_counter() < spin_until:
                    os.sched_yield()
                else:
                    poller.poll(_POLL_MS)
                continue
            with self._lock:
                if self._closed:
                    return
                data = self._recv()
            if data is None:
                continue
            if not data:
                self.on_loop(self.finish)
                return
            lines = self._lines(data)
            if lines is None:
                self.on_loop(self._oversized)
                return
            self._backlog.extend(lines)

    def _handle_backlog(self) -> bool | None:
        """Handle the lines read so far: True if a call was served here, None to stop."""
        served = False
        batch: list[Message] = []
        try:
            while self._backlog:
                message = decode_message(self._backlog.popleft())
                if message is None:
                    continue
                if batch and message.get("w"):
                    # Whatever came before a call that may be served here goes first.
                    self.on_loop(self._deliver, batch)
                    batch = []
                outcome = self._serve(message)
                if outcome is None:
                    return None
                if outcome:
                    served = True
                    continue
                batch.append(message)
                if message.get("t") == "done":
                    # Nothing the script writes after its last word is read.
                    self._backlog.clear()
                    return None
        finally:
            if batch:
                self.on_loop(self._deliver, batch)
        return served
