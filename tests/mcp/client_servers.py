"""An MCP server that misbehaves on request, for the client's tests.

Run as ``python client_servers.py [--http] [--port-file F] [--port N] [--pid-file F]
[--fail-start]``.
Written on the SDK's low-level ``Server`` so that it can send what a well-made
server never would: a malformed schema, an error result, 10 MB of text.

Tools: ``add`` (structured result with an output schema), ``echo`` (text),
``fail`` (an error result), ``hang`` (never answers), ``die`` (the process exits
mid-call), ``big`` (``megabytes`` of text), ``pid`` (the server's pid), and two
that are refused at load: ``bad_schema`` (a property of type "strnig") and
``bad name!`` (not a usable name).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

NUMBER = {"type": "number"}
TOOLS = [
    types.Tool(
        name="add",
        description="Add two numbers.",
        input_schema={
            "type": "object",
            "properties": {"a": NUMBER, "b": NUMBER},
            "required": ["a", "b"],
        },
        output_schema={
            "type": "object",
            "properties": {"sum": NUMBER, "terms": {"type": "array", "items": NUMBER}},
            "required": ["sum", "terms"],
        },
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="echo",
        description="Say the text back.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    ),
    types.Tool(
        name="fail",
        description="Always fails.",
        input_schema={"type": "object", "properties": {}},
        annotations=types.ToolAnnotations(destructive_hint=True),
    ),
    types.Tool(name="hang", description="Never answers.", input_schema={"type": "object"}),
    types.Tool(name="die", description="Exits mid-call.", input_schema={"type": "object"}),
    types.Tool(
        name="big",
        description="Returns megabytes of text.",
        input_schema={
            "type": "object",
            "properties": {"megabytes": {"type": "integer"}},
            "required": ["megabytes"],
        },
    ),
    types.Tool(name="pid", description="The server's process id.", input_schema={"type": "object"}),
    types.Tool(
        name="bad_schema",
        description="Its schema is not a JSON Schema.",
        input_schema={"type": "object", "properties": {"x": {"type": "strnig"}}},
    ),
    types.Tool(name="bad name!", description="Not a usable name.", input_schema={"type": "object"}),
]


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "add":
        total = args["a"] + args["b"]
        result = {"sum": total, "terms": [args["a"], args["b"]]}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=str(total))], structured_content=result
        )
    if params.name == "echo":
        return _text(args["text"])
    if params.name == "fail":
        return _text("the disk is full", error=True)
    if params.name == "hang":
        await anyio.sleep_forever()
    if params.name == "die":
        print("dying on purpose", file=sys.stderr, flush=True)
        os._exit(3)
    if params.name == "big":
        return _text("x" * (args["megabytes"] * 1_000_000))
    if params.name == "pid":
        return _text(str(os.getpid()))
    raise ValueError(f"no tool {params.name}")


SERVER = Server("misbehaving", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio() -> None:
    async with stdio_server() as (read, write):
        await SERVER.run(read, write, SERVER.create_initialization_options())


def serve_http(port_file: Path, port: int) -> None:
    import uvicorn

    # The socket is bound before the port is told, so a test never races for it.
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)  # connections wait in the backlog until the server accepts them
    config = uvicorn.Config(SERVER.streamable_http_app(), log_level="warning")
    port_file.write_text(str(sock.getsockname()[1]))
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--pid-file", type=Path)
    parser.add_argument("--port-file", type=Path)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fail-start", action="store_true")
    args = parser.parse_args()
    if args.pid_file:
        args.pid_file.write_text(str(os.getpid()))
    if args.fail_start:
        sys.exit("cannot open the configuration file /nonexistent/config.toml")
    if args.http:
        serve_http(args.port_file, args.port)
    else:
        anyio.run(serve_stdio)


if __name__ == "__main__":
    main()
