"""A `Toolbox` served over MCP, on the official SDK's low-level server.

    tooluse mcp serve MODULE:ATTR                        stdio
    tooluse mcp serve MODULE:ATTR --http 127.0.0.1:8000  streamable HTTP, at /mcp
    tooluse.mcp.serve(toolbox)                           the same, from Python
    async with ToolServer(toolbox).serving_http() as url  in the background, on a free port

A client sees what a model sees from tooluse itself: each tool's input schema is its
rendering for models (the parameters of `Toolbox.to_openai`), and its output schema
comes from its return annotation. A value that is not an object is sent as
``{"result": value}``, since MCP's structured content is an object; a tool annotated
to return `Image`, `Audio` or `Resource` content gets content blocks and no output
schema.

Every call goes through one `Dispatcher`, which validates, runs and records it as it
does in an agent run. A call it refuses or a tool that fails comes back as an
``isError`` result whose text is what a model would have been shown; the server
carries on.

A tool that wants to tell the client something while it runs (log lines, progress)
asks for the request it is answering::

    @tool
    async def index(paths: list[str]) -> int:
        request = current_request()  # None when not called over MCP
        for done, path in enumerate(paths, 1):
            ...
            if request is not None:
                await request.progress(done, len(paths))
        return len(paths)
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import socket
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import TypeAdapter, ValidationError
from starlette.applications import Starlette

from .._exceptions import UsageError
from .._records import CallRecord, Outcome, RejectedCall, render_result
from ..dispatch._dispatch import Dispatcher
from ..media import is_block
from ..policy._approval import ApprovalPolicy, ApprovalRequest, Gate, PolicyFunction, as_policy
from ..run._trace import EventSink
from ..tools import Tool, Toolbox, lean_schema
from ._asking import ClientAsking
from ._content import returns_content

__all__ = ["MCPRequest", "ToolServer", "current_request", "parse_address", "serve"]

# Most severe last, as `logging/setLevel` orders them.
_LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
_BLOCKS: TypeAdapter[types.ContentBlock] = TypeAdapter(types.ContentBlock)
_current: contextvars.ContextVar[MCPRequest | None] = contextvars.ContextVar(
    "tooluse_mcp_request", default=None
)


def current_request() -> MCPRequest | None:
    """The MCP request the running tool call answers; None outside one.

    Available to async tools, which run on the server's event loop. A sync tool runs
    on a worker thread, where this is always None.
    """
    return _current.get()


class MCPRequest:
    """The client's request for one tool call: what the tool may send back before it ends."""

    def __init__(self, context: ServerRequestContext[Any], server: ToolServer) -> None:
        self._context = context
        self._server = server

    async def log(self, message: Any, level: types.LoggingLevel = "info") -> None:
        """Send a log message to the client, if it asked for messages at this level."""
        context = self._context
        if _LEVELS.index(level) < _LEVELS.index(self._server.log_level(context)):
            return
        if level not in allowed_log_levels(context.session.protocol_version, context.meta):
            return  # newer protocol versions: only the levels this very request asked for
        notification = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level=level, data=message)
        )
        await context.session.send_notification(notification, related_request_id=context.request_id)

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress; nothing is sent if the client did not ask to hear it."""
        await self._context.session.report_progress(progress, total, message)


class ToolServer:
    """A toolbox as an MCP server: one dispatcher for every client and transport.

    Args:
        tools: the tools to serve.
        name: the server's name, as clients show it.
        dispatcher: runs the calls; by default one over ``tools`` with its defaults.
        on_event: receives a ``call`` or ``rejected`` event for every call, shaped
            as in an agent's trace.
        approval: asked before each call to a tool with side effects, as an
            agent's is (a policy, a function, or ``"provenance"``). A call it
            defers is put to the calling client's user (see `ClientAsking`);
            a denied call is an error result. Each call is decided alone: the
            calls come from clients, not from one run.
        ask_timeout: seconds the client's user has to answer; then the call is denied.
    """

    def __init__(
        self,
        tools: Toolbox | Iterable[Tool | Callable[..., Any]],
        *,
        name: str = "tooluse",
        dispatcher: Dispatcher | None = None,
        on_event: EventSink | None = None,
        approval: ApprovalPolicy | PolicyFunction | str | None = None,
        ask_timeout: float = 300.0,
    ) -> None:
        self.tools = tools if isinstance(tools, Toolbox) else Toolbox(tools)
        policy = as_policy(approval)
        if policy is not None and dispatcher is not None:
            raise UsageError("give approval= or a dispatcher with its own gate, not both")
        if dispatcher is None:
            gate = Gate(policy, task="", remembers=False) if policy is not None else None
            dispatcher = Dispatcher(self.tools, gate=gate)
        self.dispatcher = dispatcher
        self.on_event = on_event
        self.asking = ClientAsking(ask_timeout)
        self._content = {t.name for t in self.tools if returns_content(t.function)}
        self._outputs = {
            t.name: None if t.name in self._content else _output_schema(t) for t in self.tools
        }
        self._listing = types.ListToolsResult(tools=[self._describe(t) for t in self.tools])
        self._ids = itertools.count(1)
        # Per connection: the HTTP session id, or None for the one stdio client.
        self._log_levels: dict[str | None, types.LoggingLevel] = {}
        self.server: Server[Any] = Server(
            name, on_list_tools=self._list_tools, on_call_tool=self._call_tool
        )
        # Deprecated from protocol 2026-07-28 on, where clients ask per request; the
        # clients of earlier versions still set one level for the connection.
        self.server.add_request_handler(
            "logging/setLevel", types.SetLevelRequestParams, self._set_level
        )

    def log_level(self, context: ServerRequestContext[Any]) -> types.LoggingLevel:
        """The least severe level the client of ``context`` wants log messages at."""
        return self._log_levels.get(_connection(context), "debug")

    def listing(self) -> list[types.Tool]:
        """The tools as clients are shown them."""
        return list(self._listing.tools)

    async def serve_stdio(self) -> None:
        """Serve one client on this process's stdin and stdout until it closes them."""
        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(self, *, host: str = "127.0.0.1", port: int | None = None) -> Starlette:
        """The streamable HTTP endpoint at ``/mcp``, as an ASGI app to mount or run.

        ``host`` and ``port`` are the address it is served at (any port when None).
        A request whose Host or Origin header names another address is refused
        (421, 403): a web page that rebinds its own name to this address gets
        nothing. On a wildcard address (``0.0.0.0``, ``::``) the names the server
        is reached by cannot be known, and none is checked.
        """
        return self.server.streamable_http_app(
            host=host, transport_security=_address_check(host, port)
        )

    async def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        ready: Callable[[str], None] | None = None,
    ) -> None:
        """Serve streamable HTTP until cancelled; port 0 takes a free one.

        ``ready`` is called with the endpoint's URL once connections to it are taken.
        """
        http, listener, url = self._http(host, port)
        if ready is not None:
            ready(url)
        await http.serve(sockets=[listener])

    @contextlib.asynccontextmanager
    async def serving_http(self, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
        """Serve streamable HTTP in the background for an ``async with`` block; its URL.

        For tests, and for applications that run their own event loop.
        """
        http, listener, url = self._http(host, port)
        task = asyncio.get_running_loop().create_task(http.serve(sockets=[listener]))
        try:
            yield url
        finally:
            http.should_exit = True  # closes the connections left open, then returns
            await task

    def _http(self, host: str, port: int) -> tuple[uvicorn.Server, socket.socket, str]:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((host, port))
            # Listening before uvicorn starts: a client that connects as soon as it
            # hears the URL waits in the backlog instead of being refused.
            listener.listen(128)
        except OSError as exc:
            listener.close()
            raise UsageError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from exc
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        url = f"http://{shown}:{listener.getsockname()[1]}/mcp"
        app = self.http_app(host=host, port=listener.getsockname()[1])
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        return uvicorn.Server(config), listener, url

    def close(self) -> None:
        """Stop the dispatcher's threads."""
        self.dispatcher.close()

    def _describe(self, tool: Tool) -> types.Tool:
        input_schema = lean_schema(tool.parameters, inline=False)
        if tool.examples:
            # JSON Schema's own keyword for sample instances: whole argument objects.
            input_schema["examples"] = [dict(e.arguments) for e in tool.examples]
        return types.Tool(
            name=tool.name,
            description=tool.description or None,
            input_schema=input_schema,
            output_schema=self._outputs[tool.name],
            annotations=annotations_of(tool),
        )

    async def _list_tools(
        self, context: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return self._listing

    async def _set_level(
        self, context: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        self._log_levels[_connection(context)] = params.level
        return types.EmptyResult()

    async def _call_tool(
        self, context: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        token = _current.set(MCPRequest(context, self))
        call_id = f"mcp-{next(self._ids)}"
        try:
            outcome: Outcome | ApprovalRequest | types.InputRequiredResult
            outcome = await self.dispatcher.call(
                params.name, params.arguments or {}, call_id=call_id, source="mcp"
            )
            if isinstance(outcome, ApprovalRequest):
                outcome = await self._asked(context, params, outcome, call_id)
        finally:
            _current.reset(token)
        if isinstance(outcome, types.InputRequiredResult):
            return outcome
        if not isinstance(outcome, CallRecord | RejectedCall):
            # The policy deferred again, after the user's decision was granted.
            return types.CallToolResult(
                content=[types.TextContent(text=f"{params.name} waits for an approval")],
                is_error=True,
            )
        if self.on_event is not None:
            kind = "call" if isinstance(outcome, CallRecord) else "rejected"
            self.on_event({"event": kind, **outcome.to_dict()})
        return self._result(outcome)

    async def _asked(
        self,
        context: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        request: ApprovalRequest,
        call_id: str,
    ) -> Outcome | ApprovalRequest | types.InputRequiredResult:
        """A deferred call, decided by the client's user and then run or refused."""
        decision = await self.asking.decide(context, params, request)
        if isinstance(decision, types.InputRequiredResult):
            return decision
        gate = self.dispatcher.gate
        assert gate is not None  # only a gate defers
        # Granted for this call's tool and arguments, once: the dispatcher runs the
        # call or records its refusal as it would any decision.
        gate.grant(request.key, decision)
        return await self.dispatcher.call(
            params.name, params.arguments or {}, call_id=call_id, source="mcp"
        )

    def _result(self, outcome: Outcome) -> types.CallToolResult:
        if not isinstance(outcome, CallRecord) or outcome.error is not None:
            return types.CallToolResult(
                content=[types.TextContent(text=outcome.error or "")], is_error=True
            )
        value = outcome.result
        content: list[types.ContentBlock]
        if outcome.name in self._content or _is_content(value):
            items = value if isinstance(value, list) else [value]
            content = [_block(item) for item in items]
        else:
            content = [types.TextContent(text=render_result(value))]
        tool = self.tools.get(outcome.name)
        if tool is None or self._outputs[tool.name] is None:
            return types.CallToolResult(content=content)
        # A declared output schema needs structured content, media or not.
        structured = value if _is_object(tool.returns) else {"result": value}
        return types.CallToolResult(content=content, structured_content=structured)


def serve(
    tools: Toolbox | Iterable[Tool | Callable[..., Any]],
    *,
    http: str | None = None,
    name: str = "tooluse",
    on_event: EventSink | None = None,
    ready: Callable[[str], None] | None = None,
    approval: ApprovalPolicy | PolicyFunction | str | None = None,
) -> None:
    """Serve ``tools`` over MCP until the client leaves (stdio) or the process is stopped.

    Args:
        tools: the tools to serve.
        http: ``HOST:PORT`` (or just ``PORT``, on loopback) to serve streamable HTTP
            at ``/mcp`` instead of stdio.
        name: the server's name, as clients show it.
        on_event: receives every call's record, as in an agent's trace.
        ready: called with the URL once the HTTP port is taken.
        approval: asked before calls to tools with side effects (see `ToolServer`).
    """
    server = ToolServer(tools, name=name, on_event=on_event, approval=approval)
    try:
        if http is None:
            asyncio.run(server.serve_stdio())
        else:
            host, port = parse_address(http)
            asyncio.run(server.serve_http(host, port, ready=ready))
    finally:
        server.close()


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT`` or ``PORT`` (on 127.0.0.1) as (host, port)."""
    host, colon, port_text = text.rpartition(":")
    if not colon:
        host = "127.0.0.1"
    host = host.removeprefix("[").removesuffix("]")
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not host or not 0 <= port <= 65535:
        raise UsageError(
            f"--http takes HOST:PORT or PORT, e.g. 127.0.0.1:8000 (port 0: any free one); "
            f"got {text!r}"
        )
    return host, port


#: Addresses on which a server listens on every interface.
_WILDCARDS = {"", "0.0.0.0", "::"}
#: Names that reach the loopback interface.
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def _address_check(host: str, port: int | None) -> TransportSecuritySettings:
    """The Host and Origin values that name ``host:port``, the address served.

    A loopback address is also reached as ``localhost``; ``localhost`` also as the
    loopback addresses it resolves to.
    """
    if host in _WILDCARDS:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = {host.lower()}
    if names & _LOOPBACK:
        names |= _LOOPBACK
    shown = sorted(f"[{name}]" if ":" in name else name for name in names)
    ports = [str(port) if port is not None else "*"]
    if port == 80:
        ports.append("")  # a client leaves out the scheme's own port
    hosts = [f"{name}:{p}" if p else name for name in shown for p in ports]
    return TransportSecuritySettings(
        allowed_hosts=hosts, allowed_origins=[f"http://{h}" for h in hosts]
    )


def _connection(context: ServerRequestContext[Any]) -> str | None:
    request = context.request
    headers = getattr(request, "headers", None)
    return headers.get("mcp-session-id") if headers is not None else None


def annotations_of(tool: Tool) -> types.ToolAnnotations:
    """What ``tool`` declares, as MCP's hints; what `MCPClient` reads back.

    ``effects`` decides ``readOnlyHint`` (``read``) and ``idempotentHint`` (``read``
    or ``idempotent``); ``trust`` decides ``openWorldHint`` (an untrusted tool reads
    the open world). A tool that changes nothing destroys nothing; of one that
    changes things, nothing more is known than that it may destroy (MCP's
    default), unless the server it came from said otherwise.
    """
    came_with = tool.annotations
    read_only = tool.effects == "read"
    title = came_with.get("title")
    return types.ToolAnnotations(
        title=title if isinstance(title, str) else None,
        read_only_hint=read_only,
        destructive_hint=False if read_only else came_with.get("destructiveHint", True) is True,
        idempotent_hint=tool.effects in ("read", "idempotent"),
        open_world_hint=tool.trust == "untrusted",
    )


def _is_object(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "object"


def _output_schema(tool: Tool) -> dict[str, Any] | None:
    returns = tool.returns
    if returns is None or returns == {"type": "null"}:
        return None
    if _is_object(returns):
        return returns
    inner = dict(returns)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
    }
    if "$defs" in inner:  # references stay valid from the root they now hang below
        wrapped["$defs"] = inner.pop("$defs")
    return wrapped


def _is_content(value: Any) -> bool:
    """Whether a result not declared as content is media all the same: one media value, or
    a list of media values and text (a tool annotated ``-> Any``, a raw-schema tool)."""
    if is_block(value):
        return True
    return (
        isinstance(value, list)
        and any(is_block(item) for item in value)
        and all(is_block(item) or isinstance(item, str) for item in value)
    )


def _block(item: Any) -> types.ContentBlock:
    if isinstance(item, dict):
        try:
            return _BLOCKS.validate_python(item)
        except ValidationError:
            pass  # a plain mapping among the content: sent as its JSON text
    return types.TextContent(text=render_result(item))
