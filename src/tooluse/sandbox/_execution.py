from __future__ import annotations

import asyncio
import codecs
import inspect
import itertools
import json
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from ._channel import Channel, LoopChannel, Message, ThreadChannel
from ._exceptions import SandboxError
from ._limits import SandboxLimits
from ._output import OutputCapture, fit
from ._types import (
    DirectCall,
    DirectHandler,
    ExecResult,
    ExecStatus,
    Handler,
    LimitName,
    ProxySpec,
    ToolReply,
)
from ._wire import json_encoder

__all__ = ["Execution", "memory_file"]

# After asking the server to kill a script, how long to wait for its pipes to close before
# declaring the sandbox broken.
_KILL_GRACE_S = 3.0
# How long a script told to stop (at its limit on calls) has to end on its own.
_STOP_GRACE_S = 1.0
# The monitor's report is one short JSON line; a tool name is an identifier.
_MAX_STATUS = 4096
_MAX_NAME = 64
# How often the event loop looks at the call the channel thread runs, to abandon it once
# past its timeout: a call times out at most this much late.
_WATCH_S = 0.02


class ServerLink(Protocol):
    """What one script run needs of the sandbox that runs it: its server's control socket.

    The sandbox hands each execution one of these, so an execution reaches no further
    into the sandbox than these three calls.
    """

    def send_run(self, message: dict[str, object], fds: list[int]) -> None:
        """Hand the server a job and the descriptors it runs with; `SandboxError` if it cannot."""

    def send_kill(self, job_id: str) -> None:
        """Tell the server to kill the job's processes (nothing if the server is gone)."""

    def mark_broken(self) -> None:
        """Restart the sandbox before the next script (it lost a job or stopped answering)."""


class Execution:
    """One script run: hands the script to the server, serves its tool calls, collects output."""

    def __init__(
        self,
        *,
        server: ServerLink,
        job_id: str,
        script: str,
        tools: list[ProxySpec],
        handler: Handler | None,
        direct: DirectHandler | None = None,
        timeout: float,
        module_name: str,
        limits: SandboxLimits,
        max_calls: int | None,
        on_output: Callable[[str], None] | None = None,
    ) -> None:
        self._server = server
        self._on_stdout = on_output
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._job_id = job_id
        self._script = script
        self._tools = {spec.name: spec for spec in tools}
        self._handler = handler
        self._direct = direct
        self._timeout = timeout
        self._module_name = module_name
        self._limits = limits
        self._max_calls = max_calls
        self._stdout = OutputCapture(limits.max_output_bytes)
        self._stderr = OutputCapture(limits.max_output_bytes)
        self._flood_bytes = limits.flood_limit_mb * 1024 * 1024
        # Calls accepted but not started, and how many are running: at most
        # limits.max_concurrent_calls at once.
        self._waiting: deque[dict[str, Any]] = deque()
        self._running = 0
        self._starting = False
        # Calls running as tasks, with what each awaits.
        self._call_tasks: dict[int, tuple[asyncio.Task[None], Awaitable[object]]] = {}
        self._task_keys = itertools.count()
        self._calls_made = 0
        self._closed = False
        self._done: dict[str, Any] | None = None
        self._exit: dict[str, Any] | None = None
        self._stop_reason: LimitName | None = None
        self._stop_message = ""
        self._channel: Channel | None = None
        # With a direct handler, calls the script waits on alone are served on the channel's
        # thread while no call handed to the loop is unanswered; the counts they share
        # with the loop change under this lock.
        self._lock = threading.Lock()
        self._forwarded = 0
        # The call running on the channel thread, its deadline, and the script's id for it.
        self._running_direct: tuple[DirectCall, float | None, object] | None = None
        self._watch: asyncio.TimerHandle | None = None
        self._kill_later: asyncio.TimerHandle | None = None

    async def run(self) -> ExecResult:
        started = time.perf_counter()
        # The tool channel: calls come up one pipe, replies go down the other. The job
        # travels in a memory file the worker alone reads; the status pipe goes to the
        # script's monitor alone, which reports the end once every process of the script
        # is gone.
        calls_read, calls_write = os.pipe()
        replies_read, replies_write = os.pipe()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        status_read, status_write = os.pipe()
        job = _job_file(
            {
                "script": self._script,
                "module": self._module_name,
                "tools": [
                    [spec.name, list(spec.params), spec.positional] for spec in self._tools.values()
                ],
            }
        )
        try:
            self._server.send_run(
                {
                    "t": "run",
                    "job": self._job_id,
                    "limits": self._limits.for_worker(),
                    "deadline": self._timeout,
                },
                [calls_write, replies_read, out_write, err_write, job, status_write],
            )
        except BaseException:
            for fd in (calls_read, replies_write, out_read, err_read, status_read):
                os.close(fd)
            raise
        finally:
            for fd in (calls_write, replies_read, out_write, err_write, job, status_write):
                os.close(fd)

        pipes = [
            _Pipe(
                out_read,
                self._stdout,
                self._on_output,
                "stdout",
                listen=None if self._on_stdout is None else self._pass_stdout,
            ),
            _Pipe(err_read, self._stderr, self._on_output, "stderr"),
        ]
        status = _Pipe(status_read, OutputCapture(_MAX_STATUS), _ignore, "status")
        loop = asyncio.get_running_loop()
        self._channel = (
            LoopChannel(calls_read, replies_write, self._on_message, self._on_oversized)
            if self._direct is None
            else ThreadChannel(
                calls_read, replies_write, self._on_message, self._on_oversized, self._serve_direct
            )
        )
        self._channel.start()
        if self._direct is not None:
            self._watch = loop.call_later(_WATCH_S, self._watch_direct)
        calls = self._channel.ended
        try:
            try:
                await asyncio.wait_for(asyncio.shield(status.eof), self._timeout)
            except TimeoutError:
                self._stop("wall_clock", f"timed out after {_seconds(self._timeout)}")
                try:
                    await asyncio.wait_for(asyncio.shield(status.eof), _KILL_GRACE_S)
                except TimeoutError:
                    self._server.mark_broken()
                    raise SandboxError("the sandbox did not stop a timed-out script") from None
            self._exit = _status_record(status)
            # Every process of the script is gone, so whatever it wrote is in the pipes:
            # read to their ends (the outcome the script reported is on the tool channel).
            rest = asyncio.gather(calls, *(pipe.eof for pipe in pipes))
            try:
                await asyncio.wait_for(rest, _KILL_GRACE_S)
            except TimeoutError:
                # Only without a pid namespace can something the script started outlive
                # the sweep and hold a pipe open: what it wrote so far is kept.
                for pipe in pipes:
                    pipe.read_available()
        except BaseException:
            # Cancelled by the caller, or the sandbox is stuck: kill the script and let the
            # descriptors close.
            self._stop(None, "")
            calls.cancel()
            raise
        finally:
            self._closed = True
            if self._watch is not None:
                self._watch.cancel()
            if self._kill_later is not None:
                self._kill_later.cancel()
            running = self._running_direct
            if running is not None:
                # Recorded as cut short; the channel is closed below, so no new reader.
                running[0].abandon("the script was stopped before the call ended")
            self._waiting.clear()
            for pipe in (*pipes, status):
                pipe.close()
            for call, pending in self._call_tasks.values():
                call.cancel()
                # A task cancelled before its first step never awaits the handler's
                # coroutine; closed here, it is not reported as never awaited.
                if (
                    inspect.iscoroutine(pending)
                    and inspect.getcoroutinestate(pending) == inspect.CORO_CREATED
                ):
                    pending.close()
            self._channel.close()
        return self._result(time.perf_counter() - started)

    def _stop(self, reason: LimitName | None, message: str) -> None:
        if self._stop_reason is None and reason is not None:
            self._stop_reason = reason
            self._stop_message = message
        self._server.send_kill(self._job_id)
        self._abandon_direct("the script was stopped before the call ended")

    def _abandon_direct(self, reason: str) -> None:
        """Give up on the call the channel thread runs, if any, and read on with a new one.

        The script is being stopped: the reply goes nowhere, but the call's record says
        how it ended, and the new reader sees the channel close.
        """
        running = self._running_direct
        if running is not None and running[0].abandon(reason) is not None:
            self._forget_direct(running)

    def _forget_direct(self, running: tuple[DirectCall, float | None, object]) -> None:
        """After ``running`` was abandoned: stop watching it, and read on with a new thread.

        The thread that ran it is stuck in it and never sets another; the new one starts
        only now, so nothing it sets is cleared here.
        """
        if self._running_direct is running:
            self._running_direct = None
        assert isinstance(self._channel, ThreadChannel)
        self._channel.retire()

    # -- tool calls --------------------------------------------------------------------------

    def _on_message(self, message: Message) -> bool:
        """Handle one message from the script (on the loop); False once no more are wanted.

        "done" carries the outcome the script reports; it does not end the run, which
        ends when the monitor reports that every process of the script is gone.
        """
        kind = message.get("t")
        if kind == "call":
            self._accept_call(message)
        elif kind == "done":
            self._done = message
            return False
        return True

    def _accept_call(self, message: dict[str, Any]) -> None:
        if self._stop_reason is not None:
            return
        with self._lock:
            over = self._max_calls is not None and self._calls_made >= self._max_calls
            if not over:
                self._calls_made += 1
        if over:
            if self._stop_reason is None:
                self._stop_reason = "calls"
                self._stop_message = (
                    f"the script made more than {self._max_calls:,} tool calls, the limit "
                    "per script; it was stopped. Batch work with tools.parallel() or make "
                    "fewer calls."
                )
                # The reply ends the script from inside, so that what it printed is
                # flushed; a script that does not end at once is killed.
                self._send_reply(
                    message.get("id"), ToolReply.fail(self._stop_message, kind="calls"), stop=True
                )
                self._kill_later = asyncio.get_running_loop().call_later(
                    _STOP_GRACE_S, self._stop, None, ""
                )
            return
        if self._waiting or self._running >= self._limits.max_concurrent_calls:
            self._waiting.append(message)
        else:
            self._start_call(message)

    def _start_call(self, message: dict[str, Any]) -> None:
        # A handler that answers without awaiting is answered right here, in the callback
        # that read the call: no task, no extra turn of the event loop.
        call_id, name, arguments = message.get("id"), message.get("name"), message.get("args")
        if not _is_call_id(call_id):
            # Only a forged message has another id: there is nobody to answer, and an
            # answer would copy whatever the script sent.
            return
        if not isinstance(name, str) or name not in self._tools:
            shown = repr(name) if isinstance(name, str) and len(name) <= _MAX_NAME else "given"
            reply = ToolReply.fail(f"there is no tool named {shown}", kind="unknown_tool")
        elif "unreadable" in message:
            reason = message["unreadable"]
            reply = ToolReply.fail(f"the arguments cannot be read: {reason}", kind="validation")
        elif not isinstance(arguments, dict):
            reply = ToolReply.fail("arguments must be a JSON object", kind="validation")
        elif self._handler is None:
            reply = ToolReply.fail(f"no handler serves tool {name!r}", kind="internal")
        else:
            try:
                outcome = self._handler(name, arguments)
            except Exception as exc:
                outcome = _handler_failed(exc)
            if not isinstance(outcome, ToolReply) and inspect.isawaitable(outcome):
                self._running += 1
                key = next(self._task_keys)
                task = _create_task(
                    asyncio.get_running_loop(), self._finish_call(key, call_id, outcome)
                )
                if not task.done():
                    self._call_tasks[key] = (task, outcome)
                return
            reply = _checked(outcome)
        self._send_reply(call_id, reply)

    def _start_waiting(self) -> None:
        if self._starting:
            # A call that finished as it started (an eager task): the loop below goes on.
            return
        self._starting = True
        try:
            while (
                self._waiting
                and self._running < self._limits.max_concurrent_calls
                and not self._closed
            ):
                self._start_call(self._waiting.popleft())
        finally:
            self._starting = False

    async def _finish_call(self, key: int, call_id: object, pending: Awaitable[object]) -> None:
        try:
            try:
                reply = _checked(await pending)
            except Exception as exc:
                reply = _handler_failed(exc)
            self._send_reply(call_id, reply)
        finally:
            self._running -= 1
            # Forgotten here rather than in a done callback, which would cost another turn
            # of the event loop per call.
            self._call_tasks.pop(key, None)
        if self._waiting:
            self._start_waiting()

    def _send_reply(self, call_id: object, reply: ToolReply, *, stop: bool = False) -> None:
        assert self._channel is not None
        self._channel.send(_reply_line(call_id, reply, stop=stop))
        if self._direct is not None:
            with self._lock:
                self._forwarded -= 1

    # -- calls served on the channel thread ---------------------------------------------------

    def _serve_direct(self, message: Message) -> bool | None:
        """On the channel thread: serve a call here if it can be (see `ThreadChannel`)."""
        name, arguments = message.get("name"), message.get("args")
        with self._lock:
            if (
                message.get("w") != 1
                or message.get("t") != "call"
                or name not in self._tools
                or not isinstance(arguments, dict)
                or self._forwarded
                or self._closed
                or self._stop_reason is not None
                or (self._max_calls is not None and self._calls_made >= self._max_calls)
            ):
                # The loop answers it, refuses it, or stops the script; a message that
                # is not a call just passes.
                if message.get("t") == "call":
                    self._forwarded += 1
                return False
            self._calls_made += 1
        assert self._direct is not None and isinstance(name, str)
        try:
            answer = self._direct(name, arguments)
        except Exception as exc:
            answer = _handler_failed(exc)
        if answer is None:
            with self._lock:
                self._calls_made -= 1
                self._forwarded += 1
            return False
        if not isinstance(answer, ToolReply):
            reply = self._run_direct(answer, message.get("id"))
            if reply is None:
                return None
        else:
            reply = answer
        assert self._channel is not None
        self._channel.send(_reply_line(message.get("id"), reply))
        return True

    def _run_direct(self, call: DirectCall, call_id: object) -> ToolReply | None:
        timeout = call.timeout
        deadline = None if timeout is None else time.perf_counter() + timeout
        # Only this thread sets and clears the entry; the loop reads it (`_watch_direct`,
        # and when the run ends), and whichever of run() and abandon() comes first wins.
        entry = self._running_direct = (call, deadline, call_id)
        if self._closed:
            call.abandon("the script was stopped before the call started")
            return None
        try:
            reply = call.run()
        except BaseException as exc:
            # SystemExit and the like, raised by the tool: the loop's to raise.
            assert self._channel is not None
            self._channel.on_loop(_reraise, exc)
            reply = ToolReply.fail(f"{type(exc).__name__}: {exc}", kind="internal")
        if reply is not None and self._running_direct is entry:
            self._running_direct = None
        return reply

    def _watch_direct(self) -> None:
        """On the loop, every few milliseconds: abandon a direct call past its timeout."""
        self._watch = None
        if self._closed:
            return
        running = self._running_direct
        if running is not None and running[1] is not None and time.perf_counter() >= running[1]:
            reply = running[0].abandon(None)
            if reply is not None:
                # The tool ran out of time: answer the script, and read its next messages
                # on a new thread while the old one waits for the tool.
                self._forget_direct(running)
                assert self._channel is not None
                self._channel.send(_reply_line(running[2], reply))
        self._watch = asyncio.get_running_loop().call_later(_WATCH_S, self._watch_direct)

    # -- output ------------------------------------------------------------------------------

    def _on_oversized(self, message: str) -> None:
        self._stop("output", message)

    def _pass_stdout(self, data: bytes) -> None:
        text = self._decoder.decode(data)
        if text and self._on_stdout is not None:
            try:
                self._on_stdout(text)
            except Exception:  # a listener never changes how the script runs
                self._on_stdout = None

    def _on_output(self, capture: OutputCapture, stream: str) -> None:
        if capture.total > self._flood_bytes and self._stop_reason is None:
            self._stop(
                "output",
                f"the script wrote more than {self._limits.flood_limit_mb} MiB to "
                f"{stream} and was stopped; print less (summaries, not raw data).",
            )

    # -- the result --------------------------------------------------------------------------

    def _result(self, duration: float) -> ExecResult:
        status, error, limit = self._classify()
        # Whatever comes back from the script counts against one budget, the error text
        # (which the script writes: an exception's message, a note, an exit message) too.
        error_capture = OutputCapture(self._limits.max_output_bytes)
        if error is not None:
            error_capture.feed(error.encode(errors="replace"))
        captures = (self._stdout, self._stderr, error_capture)
        (stdout, stderr, error_text), cut = fit(captures, self._limits.max_output_bytes)
        return ExecResult(
            status=status,
            stdout=stdout,
            stderr=stderr,
            error=None if error is None else error_text,
            limit=limit,
            truncated=cut,
            calls_made=self._calls_made,
            duration_s=duration,
        )

    def _classify(self) -> tuple[ExecStatus, str | None, LimitName | None]:
        if self._stop_reason == "wall_clock":
            return "timeout", self._stop_message, "wall_clock"
        if self._stop_reason is not None:
            return "killed", self._stop_message, self._stop_reason
        done, exit_ = self._done, self._exit
        passed = None if exit_ is None else exit_.get("limit")
        if passed == "memory":
            return (
                "killed",
                f"memory limit exceeded ({self._limits.memory_mb} MiB, all of the script's "
                "processes together)",
                "memory",
            )
        if passed == "cpu":
            return (
                "killed",
                f"CPU time limit exceeded ({_seconds(self._limits.cpu_seconds)} of CPU time, "
                "all of the script's processes together)",
                "cpu",
            )
        # The outcome the script reports counts only when the worker that sent it went on
        # to exit cleanly: a script can forge that message and then be killed, or exit.
        clean = exit_ is not None and exit_.get("code") == 0 and not exit_.get("signal")
        if done is not None and clean:
            if done.get("ok"):
                return "ok", None, None
            error = str(done.get("error", ""))
            if done.get("kind") == "memory":
                return (
                    "killed",
                    f"memory limit exceeded ({self._limits.memory_mb} MiB)\n{error}",
                    "memory",
                )
            return "error", error, None
        if exit_ is None:
            self._server.mark_broken()
            return (
                "sandbox_error",
                "the sandbox stopped before the script finished; it will be restarted",
                None,
            )
        signum = exit_.get("signal")
        cpu = float(exit_.get("cpu") or 0.0)
        # The kernel enforces RLIMIT_CPU on its own running-time count, while rusage is
        # sampled; on a loaded virtual machine they have been seen more than 20% apart.
        # Nothing else here kills a script that has used half its CPU time: a stop the
        # host asked for is a timeout, and memory and processes fail inside the script.
        if signum in (signal.SIGKILL, signal.SIGXCPU) and cpu >= 0.5 * self._limits.cpu_seconds:
            return (
                "killed",
                f"CPU time limit exceeded ({_seconds(self._limits.cpu_seconds)} of CPU time)",
                "cpu",
            )
        if signum:
            return "killed", f"the script was killed by {_signal_name(signum)}", None
        code = exit_.get("code")
        if code:
            return "error", f"the script exited with status {code}", None
        return "ok", None, None


_encode = json_encoder()


def _is_call_id(value: object) -> bool:
    return type(value) is int and 0 <= value < 1 << 63


def _job_file(job: dict[str, object]) -> int:
    """A memory file holding ``job`` as JSON, positioned at its start."""
    return memory_file("tooluse-job", _encode(job).encode(), os.MFD_CLOEXEC)


def memory_file(name: str, data: bytes, flags: int = 0) -> int:
    """A memory file (``memfd_create`` with `flags`) holding `data`, positioned at its start."""
    fd = os.memfd_create(name, flags)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _status_record(status: _Pipe) -> dict[str, Any] | None:
    """The monitor's report of how the script ended, or None if it died before writing it."""
    try:
        record = json.loads(status.text())
    except ValueError:
        return None
    return record if isinstance(record, dict) and record.get("t") == "exit" else None


def _ignore(capture: OutputCapture, stream: str) -> None:
    pass


def _reply_line(call_id: object, reply: ToolReply, *, stop: bool = False) -> bytes:
    if stop:
        return (
            _encode(
                {
                    "id": call_id,
                    "ok": False,
                    "kind": reply.kind,
                    "message": reply.message,
                    "stop": True,
                }
            ).encode()
            + b"\n"
        )
    if reply.kind is None and type(call_id) is int:
        # The usual reply, written around its value (the slower way below words failures).
        try:
            return b'{"id":%d,"ok":true,"value":%b}\n' % (call_id, _encode(reply.value).encode())
        except (TypeError, ValueError, RecursionError):
            pass
    try:
        if reply.kind is None:
            line = _encode({"id": call_id, "ok": True, "value": reply.value})
        else:
            line = _encode(
                {"id": call_id, "ok": False, "kind": reply.kind, "message": reply.message}
            )
    except (TypeError, ValueError, RecursionError) as exc:
        line = _encode(
            {
                "id": call_id,
                "ok": False,
                "kind": "internal",
                "message": f"the tool's result is not a JSON value: {exc}",
            }
        )
    return line.encode() + b"\n"


def _reraise(exc: BaseException) -> None:
    raise exc


if sys.version_info >= (3, 12):

    def _create_task(
        loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, None]
    ) -> asyncio.Task[None]:
        # Runs at once up to its first await, as a task (so asyncio.timeout() and the
        # like work in the handler); most handlers finish right there.
        return asyncio.Task(coroutine, loop=loop, eager_start=True)

else:

    def _create_task(
        loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, None]
    ) -> asyncio.Task[None]:
        # Before 3.12 a task cannot start eagerly: it runs at the loop's next turn.
        return loop.create_task(coroutine)


def _checked(reply: object) -> ToolReply:
    if isinstance(reply, ToolReply):
        return reply
    return ToolReply.fail(
        f"the handler returned {type(reply).__name__}, not ToolReply", kind="internal"
    )


def _handler_failed(exc: Exception) -> ToolReply:
    return ToolReply.fail(f"{type(exc).__name__}: {exc}", kind="internal")


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@dataclass(eq=False)
class _Pipe:
    """Reads one of the script's output pipes into a capture as data arrives."""

    fd: int
    capture: OutputCapture
    on_data: Callable[[OutputCapture, str], None]
    stream: str
    listen: Callable[[bytes], None] | None = field(default=None, kw_only=True)
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.get_running_loop, init=False)
    eof: asyncio.Future[None] = field(init=False)

    def __post_init__(self) -> None:
        self.eof = self.loop.create_future()
        os.set_blocking(self.fd, False)
        self.loop.add_reader(self.fd, self.read_available)

    def read_available(self, max_reads: int = 16) -> None:
        # Bounded so that a flooding script cannot hold the event loop in one callback.
        for _ in range(max_reads):
            if self.fd < 0 or self.eof.done():
                return
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.loop.remove_reader(self.fd)
                self.eof.set_result(None)
                return
            self.capture.feed(data)
            if self.listen is not None:
                self.listen(data)
            self.on_data(self.capture, self.stream)

    def text(self) -> str:
        return self.capture.text()

    def close(self) -> None:
        if self.fd >= 0:
            self.loop.remove_reader(self.fd)
            os.close(self.fd)
            self.fd = -1
        if not self.eof.done():
            self.eof.cancel()
