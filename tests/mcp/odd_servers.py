"""Small MCP servers, each odd in one way, for the client's tests.

Run as ``python odd_servers.py MODE [ARG]``, speaking over stdio:

- ``refs URL``: tools whose schemas hold ``$ref``s: ``nowhere`` (a pointer to no
  definition), ``remote`` (a schema at ``URL``, which must never be fetched),
  ``gone_output`` (an output schema pointing nowhere), ``not_a_schema`` (a pointer
  to a number), and two usable ones: ``defs`` (a ``$ref`` that resolves inside the
  schema; says its text back) and ``echo``.
- ``banner``: writes a line of text to stdout before it speaks MCP; ``echo`` works,
  and ``chat`` writes a line of text to stdout before it answers.
- ``garbage``: writes lines that are not JSON-RPC to stdout (and one to stderr) and exits.
- ``refuse``: reads the handshake's first request, writes JSON that is not a JSON-RPC
  message to stdout, then answers each request with an error (written by hand).
- ``stall``: its tool ``stall`` blocks the whole process, which then reads nothing
  more from its stdin (a server wedged in a synchronous call).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def ref_tools(url: str) -> list[types.Tool]:
    return [
        types.Tool(
            name="nowhere",
            description="Its input schema points at a definition it does not have.",
            input_schema={"type": "object", "properties": {"x": {"$ref": "#/$defs/Nowhere"}}},
        ),
        types.Tool(
            name="remote",
            description="Its input schema points at a schema on the network.",
            input_schema={"type": "object", "properties": {"x": {"$ref": url}}},
        ),
        types.Tool(
            name="gone_output",
            description="Its output schema points at a definition it does not have.",
            input_schema={"type": "object"},
            output_schema={"type": "object", "properties": {"y": {"$ref": "#/$defs/Gone"}}},
        ),
        types.Tool(
            name="not_a_schema",
            description="Its input schema points at a number.",
            input_schema={
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "default": 5},
                    "m": {"$ref": "#/properties/n/default"},
                },
            },
        ),
        types.Tool(
            name="defs",
            description="Say the text back; its schema holds a $ref that resolves.",
            input_schema={
                "type": "object",
                "$defs": {"Text": {"type": "string"}},
                "properties": {"text": {"$ref": "#/$defs/Text"}},
                "required": ["text"],
            },
        ),
        types.Tool(name="echo", description="Say the text back.", input_schema=TEXT),
    ]


def server(tools: list[types.Tool]) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        if params.name == "stall":
            time.sleep(3600)  # blocks the event loop: the server stops reading its stdin
        if params.name == "chat":
            print("handling chat", flush=True)  # stdout: what the client reads
        text = str(args.get("text", ""))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("odd", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(tools: list[types.Tool]) -> None:
    app = server(tools)
    async with stdio_server() as (read, write):
        await app.run(read, write, app.create_initialization_options())


def main() -> None:
    mode = sys.argv[1]
    if mode == "refs":
        anyio.run(serve, ref_tools(sys.argv[2]))
    elif mode == "banner":
        print("Odd MCP server 1.0 starting, press Ctrl-C to stop", flush=True)
        chat = types.Tool(name="chat", description="Chatty.", input_schema=TEXT)
        anyio.run(serve, [types.Tool(name="echo", description="Say it.", input_schema=TEXT), chat])
    elif mode == "garbage":
        print("Usage: odd-server [--port N]", flush=True)
        print("error: no configuration found", flush=True)
        print('{"not": "a JSON-RPC message"}', flush=True)
        sys.exit("odd-server: giving up")
    elif mode == "refuse":
        error = {"code": -32603, "message": "not ready yet"}
        for number, line in enumerate(sys.stdin):
            if number == 0:
                print('{"status": "listening", "port": 8080}', flush=True)
            request = json.loads(line)
            if "id" in request:
                answer = {"jsonrpc": "2.0", "id": request["id"], "error": error}
                print(json.dumps(answer), flush=True)
    elif mode == "stall":
        stall = types.Tool(
            name="stall",
            description="Blocks the server.",
            input_schema={"type": "object", "properties": {"pad": {"type": "string"}}},
        )
        anyio.run(serve, [stall])
    else:
        sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
