"""`MCPClient`: an MCP server's tools as a `Toolbox`, on the official SDK.

The SDK's session lives on an event loop of the client's own, on a daemon thread:
an agent's ``run()`` starts a new event loop each time, and the connection must
outlive it. A tool's function is async and hops to that loop, so the dispatcher's
timeout cancels the call there (the SDK itself would wait forever on stdio).

A connection that is lost (the server exited, or a call found it gone) is opened
again before the next call: a server killed between two runs is started again by
the second. A call is never sent twice: one that was under way when the
connection broke fails with the reason. The one exception never ran: a call an
HTTP server refused because it no longer knows the session (it restarted) is sent
once more in a new session, as the protocol asks.

A stdio server may write only MCP messages to stdout. A line that is not one (a
banner, a usage text) is skipped, and said once per connection in one line on the
``tooluse.mcp`` logger, quoting it; if the handshake then fails, the start error
quotes it instead. The SDK's own report of it, a traceback per line, is silenced.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import logging
import os
import re
import shlex
import tempfile
import threading
import weakref
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import IO, Any, Self, TypeVar

import httpx2
import mcp_types as types
import pydantic
from mcp import Client, StdioServerParameters
from mcp.client import Transport
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError as ProtocolError
from mcp.shared.message import SessionMessage
from mcp_types import CONNECTION_CLOSED

from .._closing import Closing
from .._exceptions import ToolDefinitionError, UsageError
from ..tools import Caller, Tool, Toolbox, Trust
from ._client_errors import MCPCallError, MCPConnectionError, MCPStartError
from ._client_tools import build_tool

__all__ = ["MCPClient", "combine"]

_T = TypeVar("_T")

# Long enough for a server run through npx or a cold Python start on a busy machine.
_CONNECT_TIMEOUT_S = 30.0
# The SDK's own shutdown of a stdio server is bounded (close stdin, then SIGTERM,
# then SIGKILL, about 6 s at worst); this bounds waiting for it from another thread.
_CLOSE_WAIT_S = 15.0
_STDERR_TAIL_BYTES = 1_500
_QUOTE_CHARS = 200

logger = logging.getLogger("tooluse.mcp")

# The connection whose transport the current task serves: the SDK's tasks that read
# a server's stdout inherit it from the task that opened the connection.
_SERVING: contextvars.ContextVar[_Connection | None] = contextvars.ContextVar(
    "tooluse_mcp_serving", default=None
)


class _QuietStrayLines(logging.Filter):
    """Drops the SDK's traceback for a stdout line that is not JSON-RPC, on our connections.

    The line reaches the session too, where the connection notes it and says so
    in one line; the SDK's report is a traceback of many for each such line.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if _SERVING.get() is None or record.exc_info is None:
            return True
        return not isinstance(record.exc_info[1], ValueError)


logging.getLogger("mcp.client.stdio").addFilter(_QuietStrayLines())


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside nested exception groups (the SDK's task groups wrap them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _quoted(exc: ValueError) -> str:
    """The line a parse error is about, quoted (cut if long), from what pydantic kept of it."""
    errors = exc.errors(include_url=False) if isinstance(exc, pydantic.ValidationError) else []
    if errors and errors[0]["type"] == "json_invalid" and isinstance(errors[0]["input"], str):
        line = errors[0]["input"]  # text that is not JSON, as it was
    else:
        # JSON that is not a message: its value as a whole, which the error of a
        # missing field or of the wrong kind of value holds.
        whole = [e["input"] for e in errors if e["type"] == "missing" or len(e["loc"]) <= 1]
        line = (
            json.dumps(whole[0], ensure_ascii=False, default=str)
            if whole
            else str(exc).partition("\n")[0]
        )
    if len(line) > _QUOTE_CHARS:
        line = line[:_QUOTE_CHARS] + "..."
    return repr(line)


class _Watched:
    """The transport's read stream, telling the connection when the server side ended,
    and what it sent that is not a message."""

    def __init__(self, inner: Any, connection: _Connection) -> None:
        self._inner = inner
        self._connection = connection

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        return await self._read(self._inner.receive)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        return await self._read(self._inner.__anext__)

    async def _read(
        self, take: Callable[[], Awaitable[SessionMessage | Exception]]
    ) -> SessionMessage | Exception:
        """The next item by `take`; the stream ending or failing means the server is gone."""
        try:
            item: SessionMessage | Exception = await take()
        except BaseException:
            self._connection.mark_lost()
            raise
        if isinstance(item, ValueError):
            self._connection.note_stray(item)
        return item

    async def aclose(self) -> None:
        self._connection.mark_lost()
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _SessionWatch:
    """Notes an HTTP server refusing the session, which only the HTTP exchange shows.

    The spec's answer to a request in a session the server no longer knows (it
    restarted, or ended the session) is 404, and the client is to open a new one;
    some servers answer 400 and say so in the body. The SDK hands the call back as
    a protocol error that does not tell this apart from others.
    """

    def __init__(self) -> None:
        self.refused = False

    async def observe(self, response: httpx2.Response) -> None:
        request = response.request
        if request.method != "POST" or "mcp-session-id" not in request.headers:
            return
        if response.status_code == 404:
            self.refused = True
        elif response.status_code == 400:
            body = await response.aread()
            self.refused = self.refused or b"session" in body.lower()


@asynccontextmanager
async def _http(url: str, watch: _SessionWatch) -> AsyncIterator[Any]:
    # The SDK's own defaults: a response stream may stay open for minutes.
    hooks = {"response": [watch.observe]}
    http = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=300.0), event_hooks=hooks)
    async with http, streamable_http_client(url, http_client=http) as streams:
        yield streams


@asynccontextmanager
async def _watched(transport: Transport, connection: _Connection) -> AsyncIterator[Any]:
    async with transport as (read, write):
        yield _Watched(read, connection), write


class _Connection:
    """One session with the server, held open by a task on the client's loop."""

    def __init__(
        self, transport: Transport, session: _SessionWatch, label: str, *, stdio: bool
    ) -> None:
        self.client = Client(_watched(transport, self))
        self.session = session
        self.label = label
        self.stdio = stdio
        self.lost = False
        self.tools: list[types.Tool] = []
        self.server_name = ""
        #: The first thing the server sent that is not a JSON-RPC message, quoted.
        self.stray: str | None = None
        self._opened = False
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None

    def mark_lost(self) -> None:
        self.lost = True

    def note_stray(self, exc: ValueError) -> None:
        if self.stray is not None:
            return  # said once per connection
        self.stray = _quoted(exc)
        if self._opened:
            self._warn_stray()
        # Before the handshake ends, it is said by open() or by the start error.

    def stray_said(self) -> str:
        """What the server sent that is not a message, said for an error or a warning."""
        if self.stdio:
            return f"wrote a line to stdout that is not JSON-RPC: {self.stray}"
        return f"sent a message that is not JSON-RPC: {self.stray}"

    def _warn_stray(self) -> None:
        logger.warning("the MCP server %s %s; it was skipped", self.label, self.stray_said())

    async def open(self, timeout: float) -> None:
        ready = self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
            self.tools = await asyncio.wait_for(self._list_tools(), timeout)
        except BaseException:
            await self.close()
            raise
        info = self.client.server_info
        self.server_name = info.name if info is not None else ""
        self._opened = True
        if self.stray is not None:
            self._warn_stray()  # a banner, say: the server works regardless

    async def _list_tools(self) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(1_000):  # a server whose cursors never end cannot hang the client
            page = await self.client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        # The SDK's context must be left by the task that entered it. Its tasks
        # inherit _SERVING, which silences its report of a stray line.
        _SERVING.set(self)
        try:
            async with self.client:
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            self.lost = True
            if isinstance(exc, asyncio.CancelledError):
                ready.cancel()
                raise
            if not ready.done():
                ready.set_exception(exc)
            elif not isinstance(exc, Exception):
                raise
            # After the handshake, an error here is the connection ending; the
            # call that finds it lost reports it.

    async def close(self) -> None:
        self._stop.set()
        self.lost = True
        task = self._task
        if task is not None and not task.done():
            if self._ready is not None and not self._ready.done():
                task.cancel()  # still in the handshake: nothing to wait for
            try:
                await asyncio.wait_for(asyncio.shield(task), _CLOSE_WAIT_S)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()


class _Runtime:
    """The client's state, on the event loop its session lives on; what the finalizer closes.

    That loop is the caller's for a client opened with ``async with`` (its calls need
    no hop between threads), else one of the client's own, on a daemon thread.
    """

    def __init__(
        self,
        target: StdioServerParameters | str,
        connect_timeout: float,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.target = target
        self.label = (
            f"at {target}"
            if isinstance(target, str)
            else f"`{shlex.join([target.command, *target.args])}`"
        )
        self.connect_timeout = connect_timeout
        self.connection: _Connection | None = None
        self._lock: asyncio.Lock | None = None
        self._stderr: IO[str] | None = None
        self._thread: threading.Thread | None = None
        if loop is not None:
            self.loop = loop
            return
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._run, name=f"tooluse-mcp {self.label[:40]}", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    # -- on the loop ------------------------------------------------------------

    def transport(self, session: _SessionWatch) -> Transport:
        if isinstance(self.target, str):
            return _http(self.target, session)
        if self._stderr is not None:
            self._stderr.close()
        # The server's stderr is kept, not shown: it is quoted when the server fails.
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed by close()
        return stdio_client(self.target, errlog=self._stderr)

    def stderr_tail(self) -> str:
        """The end of what a stdio server wrote to stderr, quoted for an error message."""
        log = self._stderr
        if log is None:
            return ""
        try:
            log.flush()
            size = os.fstat(log.fileno()).st_size
            start = max(0, size - _STDERR_TAIL_BYTES)
            data = os.pread(log.fileno(), size - start, start)
        except (OSError, ValueError):
            return ""
        text = data.decode("utf-8", "replace").strip()
        if not text:
            return ""
        lines = text.splitlines()[-8:]
        return "; its stderr ends: " + " | ".join(line.strip() for line in lines)

    async def connect(self) -> _Connection:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            current = self.connection
            if current is not None and not current.lost:
                return current
            if current is not None:
                await current.close()
            session = _SessionWatch()
            connection = _Connection(
                self.transport(session),
                session,
                self.label,
                stdio=not isinstance(self.target, str),
            )
            try:
                await connection.open(self.connect_timeout)
            except TimeoutError:
                raise self.start_error(None, connection) from None
            except Exception as exc:
                raise self.start_error(_leaf(exc), connection) from exc
            self.connection = connection
            return connection

    def start_error(self, exc: BaseException | None, connection: _Connection) -> MCPStartError:
        """Why the connection did not open; `exc` None: the handshake timed out."""
        stray = connection.stray_said() if connection.stray is not None else None
        if exc is None:
            reason = f"did not answer the handshake within {self.connect_timeout:g} s"
        elif isinstance(exc, ProtocolError) and exc.code == CONNECTION_CLOSED:
            reason = (
                "ended before the handshake"
                if stray
                else "closed the connection before the handshake ended"
            )
        elif isinstance(exc, OSError) and not isinstance(self.target, str):
            reason = f"did not start: cannot run it: {exc.strerror or exc}"
        elif isinstance(self.target, str):
            reason = f"cannot be reached: {type(exc).__name__}: {exc}"
        else:
            reason = f"did not start: {type(exc).__name__}: {exc}"
        if stray is not None:
            # What the server sent instead of messages says more than how it ended.
            reason = f"does not speak MCP: it {stray}, and {reason}"
        return MCPStartError(f"the MCP server {self.label} {reason}{self.stderr_tail()}")

    def lost_error(self, what: str, exc: BaseException | None = None) -> MCPConnectionError:
        cause = f": {type(exc).__name__}: {exc}" if exc is not None else ""
        then = (
            "the next call connects again"
            if isinstance(self.target, str)
            else "it exited or crashed, and the next call starts it again"
        )
        return MCPConnectionError(
            f"the MCP server {self.label} {what}{cause}; {then}{self.stderr_tail()}"
        )

    def hop(self, coro: Coroutine[Any, Any, _T]) -> asyncio.Future[_T]:
        """Run `coro` on the client's loop, as a future of the calling loop.

        Cancelling the future cancels the task on the client's loop. Leaner than
        ``run_coroutine_threadsafe`` with ``wrap_future``: no third future between.
        """
        caller = asyncio.get_running_loop()
        outcome: asyncio.Future[_T] = caller.create_future()
        started: list[asyncio.Task[_T]] = []

        def settle(task: asyncio.Task[_T]) -> None:
            if outcome.done():
                return
            if task.cancelled():
                outcome.cancel()
            elif (error := task.exception()) is not None:
                outcome.set_exception(error)
            else:
                outcome.set_result(task.result())

        def done(task: asyncio.Task[_T]) -> None:
            # The caller's loop may close before `settle` runs there, or be closed
            # already: its run ended while this call, given up on at its timeout, was
            # still being cancelled here. Nobody waits for the outcome then, and its
            # error, taken here, is not reported as never retrieved.
            if not task.cancelled():
                task.exception()
            with suppress(RuntimeError):  # the caller's loop is closed
                caller.call_soon_threadsafe(settle, task)

        def start() -> None:
            task = self.loop.create_task(coro)
            started.append(task)
            task.add_done_callback(done)

        def cancel() -> None:
            started[0].cancel()  # `start` ran before: the client's loop runs them in order

        def cancel_there(future: asyncio.Future[_T]) -> None:
            if future.cancelled():
                with suppress(RuntimeError):  # the loop is closed: nothing runs there
                    self.loop.call_soon_threadsafe(cancel)

        try:
            self.loop.call_soon_threadsafe(start)
        except RuntimeError:  # the loop is closed
            coro.close()
            raise MCPConnectionError(
                f"the client of the MCP server {self.label} was closed"
            ) from None
        outcome.add_done_callback(cancel_there)
        return outcome

    async def call(
        self, name: str, arguments: dict[str, Any], *, resent: bool = False
    ) -> types.CallToolResult:
        current = self.connection
        connection = current if current is not None and not current.lost else await self.connect()
        try:
            return await connection.client.call_tool(name, arguments)
        except ProtocolError as exc:
            if exc.code == CONNECTION_CLOSED or connection.lost:
                connection.mark_lost()
                raise self.lost_error("closed the connection during the call") from exc
            again = ""
            if isinstance(self.target, str):
                # Over HTTP a restarted server no longer knows the session and refuses
                # every call in it; a fresh session costs one handshake.
                connection.mark_lost()
                if connection.session.refused and not resent:
                    # Refused before it ran, so sending it again in a new session
                    # (as the protocol asks) cannot run it twice.
                    return await self.call(name, arguments, resent=True)
                again = "; the next call opens a new session"
            raise MCPCallError(
                f"the MCP server answered with an error: {exc.message} (code {exc.code}){again}"
            ) from exc
        except Exception as exc:
            leaf = _leaf(exc)
            if connection.lost or isinstance(leaf, OSError):
                connection.mark_lost()
                raise self.lost_error("could not be reached during the call", leaf) from exc
            raise MCPCallError(f"{type(leaf).__name__}: {leaf}") from exc

    async def disconnect(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            await connection.close()

    # -- from any other thread -------------------------------------------------

    def release(self) -> None:
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def close(self) -> None:
        """End the connection (its server process with it) and the loop's thread.

        From any thread; on the client's own loop (a client of the caller's loop
        collected there) the ending is scheduled, not waited for.
        """
        if self.loop.is_closed():
            self.release()  # the loop's end cancelled the session's task, which stopped the server
            return
        thread = self._thread
        if thread is None or threading.current_thread() is thread:
            with suppress(RuntimeError):  # the loop is closing
                if _running_loop() is self.loop:
                    self.loop.create_task(self.disconnect())
                else:
                    self.submit(self.disconnect())
            return
        if thread.is_alive():
            # A server that cannot be stopped in time is abandoned, not waited for.
            with suppress(concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
                self.submit(self.disconnect()).result(_CLOSE_WAIT_S)
            self.loop.call_soon_threadsafe(self.loop.stop)
            thread.join(_CLOSE_WAIT_S)
        if not thread.is_alive():
            self.loop.close()
        self.release()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class MCPClient(Closing):
    """A connection to one MCP server, whose tools become a `Toolbox`.

    Build one with `MCPClient.stdio` (a command the client starts and stops) or
    `MCPClient.http` (a Streamable HTTP endpoint), and use it as a context
    manager, sync or async; the toolbox's tools call the server while it is open::

        with MCPClient.stdio(["python", "-m", "mcp_server_time"]) as client:
            Agent(model, client.toolbox(), convention="code").run(task)

    Args (of both constructors):
        name: the server's name, put in front of its tools' names where they
            clash with others' (see `combine`); by default the name the server
            gives, or the command's.
        timeout: seconds per call, set on each tool (a tool's own timeout wins
            over the dispatcher's); by default the dispatcher's applies.
        connect_timeout: seconds the server may take to start and answer.
        side_effects: set on every tool; by default a tool has side effects
            unless the server marks it ``readOnlyHint``.
        trust: set on every tool; by default a tool is ``untrusted`` unless the
            server marks it ``openWorldHint: false`` (see `tool`'s ``trust``).
        callers: who may call the server's tools (see `tool`'s ``callers``).
    """

    def __init__(
        self,
        server: StdioServerParameters | str,
        *,
        name: str | None = None,
        timeout: float | None = None,
        connect_timeout: float = _CONNECT_TIMEOUT_S,
        side_effects: bool | None = None,
        trust: Trust | None = None,
        callers: Iterable[Caller] | None = None,
    ) -> None:
        if timeout is not None and timeout <= 0:
            raise UsageError(f"timeout must be positive, got {timeout}")
        if trust not in (None, "trusted", "untrusted"):
            raise UsageError(f"trust must be 'trusted' or 'untrusted', got {trust!r}")
        chosen = (
            None
            if callers is None
            else frozenset((callers,) if isinstance(callers, str) else callers)
        )
        if chosen is not None and (not chosen or not chosen <= {"model", "script"}):
            raise UsageError(
                f"callers must be a non-empty set of 'model' and 'script', got {callers!r}"
            )
        self.server = server
        self.timeout = timeout
        self.side_effects = side_effects
        self.trust: Trust | None = trust
        self.callers: frozenset[Caller] | None = chosen  # type: ignore[assignment]
        self.connect_timeout = connect_timeout
        self._name = name
        self._runtime: _Runtime | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._tools: list[types.Tool] = []
        self._refused: dict[str, str] = {}

    @classmethod
    def stdio(
        cls,
        command: Sequence[str] | str,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        name: str | None = None,
        timeout: float | None = None,
        connect_timeout: float = _CONNECT_TIMEOUT_S,
        side_effects: bool | None = None,
        trust: Trust | None = None,
        callers: Iterable[Caller] | None = None,
    ) -> MCPClient:
        """A server the client runs as a subprocess, speaking over its stdin and stdout.

        `command` is an argument list, or a string split as a shell would. The
        server gets a small environment (PATH, HOME and the like) plus `env`.
        """
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise UsageError("MCPClient.stdio needs a command to run")
        params = StdioServerParameters(
            command=argv[0], args=argv[1:], env=dict(env) if env else None, cwd=cwd
        )
        return cls(
            params,
            name=name,
            timeout=timeout,
            connect_timeout=connect_timeout,
            side_effects=side_effects,
            trust=trust,
            callers=callers,
        )

    @classmethod
    def http(
        cls,
        url: str,
        *,
        name: str | None = None,
        timeout: float | None = None,
        connect_timeout: float = _CONNECT_TIMEOUT_S,
        side_effects: bool | None = None,
        trust: Trust | None = None,
        callers: Iterable[Caller] | None = None,
    ) -> MCPClient:
        """A server already running at `url`, over Streamable HTTP."""
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"MCPClient.http needs an http:// or https:// URL, got {url!r}")
        return cls(
            url,
            name=name,
            timeout=timeout,
            connect_timeout=connect_timeout,
            side_effects=side_effects,
            trust=trust,
            callers=callers,
        )

    def __repr__(self) -> str:
        label = self._runtime.label if self._runtime is not None else repr(self.server)
        return f"MCPClient({label})"

    # -- opening and closing ------------------------------------------------------

    def open(self) -> Self:
        """Start (or reach) the server and list its tools; `close` ends it."""
        if self._runtime is not None:
            return self
        runtime = _Runtime(self.server, self.connect_timeout)
        # Closed however the client ends: closed, collected, or the interpreter exiting.
        self._finalizer = weakref.finalize(self, runtime.close)
        self._runtime = runtime
        try:
            connection = runtime.submit(runtime.connect()).result()
        except BaseException:
            self.close()
            raise
        self._listed(connection)
        return self

    async def aopen(self) -> Self:
        """`open`, for async code: the session lives on the caller's event loop."""
        if self._runtime is not None:
            return self
        runtime = _Runtime(self.server, self.connect_timeout, asyncio.get_running_loop())
        self._finalizer = weakref.finalize(self, runtime.close)
        self._runtime = runtime
        try:
            connection = await runtime.connect()
        except BaseException:
            await self.aclose()
            raise
        self._listed(connection)
        return self

    def close(self) -> None:
        """Stop the server (for stdio) and the client's thread. Safe to call twice."""
        if self._runtime is not None and self._runtime.loop is _running_loop():
            raise UsageError("an MCPClient opened in async code is closed with aclose()")
        finalizer, self._finalizer = self._finalizer, None
        self._runtime = None
        if finalizer is not None:
            finalizer()

    async def aclose(self) -> None:
        """`close`, for async code."""
        runtime = self._runtime
        if runtime is not None and runtime.loop is asyncio.get_running_loop():
            finalizer, self._finalizer = self._finalizer, None
            self._runtime = None
            if finalizer is not None:
                finalizer.detach()
            await runtime.disconnect()
            runtime.release()
            return
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
        return self.open()

    async def __aenter__(self) -> Self:
        return await self.aopen()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- the tools ----------------------------------------------------------------

    def _listed(self, connection: _Connection) -> None:
        if self._name is None:
            fallback = (
                Path(self.server.command).name
                if isinstance(self.server, StdioServerParameters)
                else "mcp"
            )
            self._name = connection.server_name or fallback
        tools: list[types.Tool] = []
        refused: dict[str, str] = {}
        check = Toolbox()
        for remote in connection.tools:
            try:
                check.add(self._tool(remote, remote.name))
            except ToolDefinitionError as exc:
                refused[remote.name] = str(exc)
            else:
                tools.append(remote)
        self._tools, self._refused = tools, refused

    @property
    def name(self) -> str:
        """The server's name: the one given, else the server's own, else the command's."""
        return self._name or "mcp"

    @property
    def connected(self) -> bool:
        """Whether the connection is open and was not found lost (the server exited)."""
        runtime = self._runtime
        if runtime is None:
            return False
        connection = runtime.connection
        return connection is not None and not connection.lost

    @property
    def refused(self) -> dict[str, str]:
        """Tools the server listed that cannot be used, by name, with the reason."""
        return dict(self._refused)

    @property
    def tool_names(self) -> list[str]:
        """The server's usable tools, as it names them."""
        return [remote.name for remote in self._tools]

    def toolbox(self, *, prefix: str | None = None) -> Toolbox:
        """The server's usable tools, each named ``prefix + name`` when a prefix is given."""
        renames = {remote.name: f"{prefix or ''}{remote.name}" for remote in self._tools}
        return self._toolbox(renames)

    def _toolbox(self, renames: Mapping[str, str]) -> Toolbox:
        if self._runtime is None:
            raise UsageError(f"{self!r} is not open: use it as a context manager, or call open()")
        return Toolbox(self._tool(remote, renames[remote.name]) for remote in self._tools)

    def _tool(self, remote: types.Tool, name: str) -> Tool:
        return build_tool(
            remote,
            name,
            self._call,
            timeout=self.timeout,
            side_effects=self.side_effects,
            trust=self.trust,
            callers=self.callers,
        )

    async def _call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        runtime = self._runtime
        if runtime is None:
            raise MCPConnectionError(f"{self!r} was closed; its tools cannot be called")
        if runtime.loop is asyncio.get_running_loop():
            return await runtime.call(name, arguments)
        # Cancelling this (the dispatcher's timeout does) cancels the call on the
        # client's loop, and the SDK tells the server.
        return await runtime.hop(runtime.call(name, arguments))


def _prefix(name: str) -> str:
    return re.sub(r"\W+", "_", name).strip("_") + "_"


def combine(*parts: Toolbox | MCPClient | Iterable[Tool]) -> Toolbox:
    """One toolbox of local tools and open MCP clients' tools.

    A tool name that several parts share stays with the local tools; each server
    that has it puts its name in front (``time_now`` for the ``time`` server's
    ``now``). Two servers of one name get the prefix twice, which still clashes:
    give one a ``name=``.
    """
    local = [t for part in parts if not isinstance(part, MCPClient) for t in part]
    clients = [part for part in parts if isinstance(part, MCPClient)]
    seen: dict[str, int] = {}
    for name in [t.name for t in local] + [n for c in clients for n in c.tool_names]:
        seen[name] = seen.get(name, 0) + 1
    box = Toolbox(local)
    for client in clients:
        renames = {
            name: _prefix(client.name) + name if seen[name] > 1 else name
            for name in client.tool_names
        }
        for tool in client._toolbox(renames):
            box.add(tool)
    return box
