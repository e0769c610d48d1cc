"""Our MCP server beside a plain server of the official SDK serving the same functions.

    python bench/mcp_server.py [--calls 300] [--repeat 3] [--tools 50]

Throughput: calls per second from the SDK's `Client`, one call after another, to
each server running in its own process, over streamable HTTP on loopback and over
stdio, in both protocol eras the SDK speaks. Both serve the example
`get_exchange_rate`; ours runs every call through the dispatcher (validation,
record), the SDK's through its own argument model.

Prompt size: the tool listing a client receives from a 50-tool server (name,
description, input schema: what reaches a model), counted with o200k_base, beside
the stub module of the same tools that the code convention shows instead. The 50
tools are the five example tools, ten times over under numbered names.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# `examples` ships with the checkout, not with the package: find it beside bench/.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import uvicorn
from _options import add_mcp_load
from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import MCPServer

from examples.seed_tools import toolbox
from tooluse import Tool, Toolbox
from tooluse._tokens import count_tokens
from tooluse.mcp import ToolServer

ROOT = Path(__file__).resolve().parent.parent
SERVERS = ("tooluse", "sdk")
ARGUMENTS = {"base": "USD", "target": "EUR"}
# The SDK client's connection modes: the 2026-07-28 protocol when the server offers
# it (both do), or the initialize handshake of the versions before.
MODES = {"auto": "2026-07-28", "legacy": "handshake"}


def numbered_tools(count: int) -> list[tuple[str, Tool]]:
    seeds = list(toolbox)
    return [
        (f"{seeds[n % len(seeds)].name}_{n // len(seeds)}", seeds[n % len(seeds)])
        for n in range(count)
    ]


def ours(tools: list[tuple[str, Tool]]) -> ToolServer:
    return ToolServer(
        Toolbox(Tool.from_function(t.function, name=name) for name, t in tools), name="bench"
    )


def plain(tools: list[tuple[str, Tool]]) -> MCPServer:
    server = MCPServer("bench")
    for name, t in tools:
        server.add_tool(t.function, name=name)
    return server


def serve(which: str, transport: str) -> None:
    """Run one server in this process (the benchmark starts two of these)."""
    rate = toolbox.get("get_exchange_rate")
    assert rate is not None
    tools = [(rate.name, rate)]
    if which == "tooluse":
        server = ours(tools)
        if transport == "stdio":
            asyncio.run(server.serve_stdio())
        else:
            asyncio.run(server.serve_http("127.0.0.1", 0, ready=announce))
        return
    sdk = plain(tools)
    if transport == "stdio":
        sdk.run("stdio")
        return
    # The SDK's own app, on a port taken here so that the URL can be announced.
    config = uvicorn.Config(sdk.streamable_http_app(), log_level="warning")
    http = uvicorn.Server(config)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    announce(f"http://127.0.0.1:{listener.getsockname()[1]}/mcp")
    asyncio.run(http.serve(sockets=[listener]))


def announce(url: str) -> None:
    print(url, file=sys.stderr, flush=True)


async def calls_per_second(client: Client, calls: int) -> float:
    result = await client.call_tool("get_exchange_rate", ARGUMENTS)
    assert not result.is_error, result.content
    started = time.perf_counter()
    for _ in range(calls):
        await client.call_tool("get_exchange_rate", ARGUMENTS)
    return calls / (time.perf_counter() - started)


def throughput(which: str, transport: str, mode: str, calls: int, repeat: int) -> float:
    command = [sys.executable, __file__, "--serve", which, "--transport", transport]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}

    async def best(connect: Callable[[], Client]) -> float:
        rates = []
        for _ in range(repeat):
            async with connect() as client:
                rates.append(await calls_per_second(client, calls))
        return max(rates)

    if transport == "stdio":
        params = StdioServerParameters(command=command[0], args=command[1:], env=env)
        return asyncio.run(best(lambda: Client(params, mode=mode)))
    server = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        url = server.stderr.readline().strip()
        if not url.startswith("http://"):
            raise SystemExit(f"the {which} server did not start: {url}")
        # Drained, so that a server that logs never blocks on a full pipe.
        threading.Thread(target=server.stderr.read, daemon=True).start()
        return asyncio.run(best(lambda: Client(url, mode=mode)))
    finally:
        server.terminate()
        server.wait(timeout=30)


async def listing_tokens(server: Any) -> int:
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    shown = [
        {"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in tools
    ]
    return count_tokens(json.dumps(shown, separators=(",", ":"), ensure_ascii=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_mcp_load(parser)
    parser.add_argument("--serve", choices=SERVERS, help=argparse.SUPPRESS)
    parser.add_argument("--transport", choices=("http", "stdio"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.transport)
        return

    rows: list[dict[str, Any]] = []
    print(f"{'server':<10}{'transport':<11}{'protocol':<11}{'calls/s':>10}")
    print("-" * 42)
    for transport in ("http", "stdio"):
        for mode, protocol in MODES.items():
            for which in SERVERS:
                rate = throughput(which, transport, mode, args.calls, args.repeat)
                print(f"{which:<10}{transport:<11}{protocol:<11}{rate:>10,.0f}")
                rows.append(
                    {"server": which, "transport": transport, "protocol": protocol}
                    | {"calls_per_s": rate}
                )

    tools = numbered_tools(args.tools)
    sizes = {
        "tooluse listing": asyncio.run(listing_tokens(ours(tools).server)),
        "sdk listing": asyncio.run(listing_tokens(plain(tools))),
        "stub module": count_tokens(
            Toolbox(Tool.from_function(t.function, name=n) for n, t in tools).stub_module()
        ),
    }
    print(f"\n{args.tools} tools{'':<14}{'o200k tokens':>13}")
    print("-" * 35)
    for what, tokens in sizes.items():
        print(f"{what:<22}{tokens:>13,}")
    print(
        json.dumps(
            {
                "bench": "mcp_server",
                "calls": args.calls,
                "throughput": rows,
                "tools": args.tools,
                "tokenizer": "o200k_base",
                "prompt_tokens": sizes,
            }
        )
    )


if __name__ == "__main__":
    main()
