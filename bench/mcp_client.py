"""MCP call overhead: our client and dispatcher against the bare SDK client.

One server (an ``echo`` tool on the SDK's MCPServer, started by this script) is
called N times in a row over stdio and over Streamable HTTP on 127.0.0.1, by the
SDK's own ``Client`` and by `MCPClient` through the `Dispatcher` (validation,
timeout, concurrency slot, CallRecord), alternating rounds in the same run. The
client is measured opened both ways: ``async with`` (the session on the caller's
loop) and ``with`` (on a loop thread of its own, which every call hops to and
back). The goal is at most 1.15x the bare SDK per call.

    python bench/mcp_client.py [--calls 300] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tooluse.mcp import MCPClient

from _options import add_mcp_load
from mcp import Client, StdioServerParameters


def serve(http_port_file: str | None) -> None:
    from mcp.server import MCPServer

    app = MCPServer("bench")

    @app.tool()
    def echo(text: str) -> str:
        """Say the text back."""
        return text

    if http_port_file is None:
        app.run()
        return
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    Path(http_port_file).write_text(str(sock.getsockname()[1]))
    config = uvicorn.Config(app.streamable_http_app(), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


async def timed(n: int, one: Callable[[], Awaitable[object]]) -> float:
    for _ in range(min(20, n)):  # warm up
        await one()
    start = time.perf_counter()
    for _ in range(n):
        await one()
    return (time.perf_counter() - start) / n


async def bare(target: StdioServerParameters | str, n: int) -> float:
    async with Client(target) as client:
        return await timed(n, lambda: client.call_tool("echo", {"text": "hi"}))


async def ours(client: MCPClient, n: int) -> float:
    from tooluse import Dispatcher

    dispatcher = Dispatcher(client.toolbox(), timeout=30)
    try:
        return await timed(
            n, lambda: dispatcher.call("echo", {"text": "hi"}, call_id="c", source="json")
        )
    finally:
        dispatcher.close()


def measure(
    name: str, target: StdioServerParameters | str, calls: int, repeat: int
) -> dict[str, Any]:
    from tooluse.mcp import MCPClient

    async def ours_async() -> float:
        async with MCPClient(target) as client:
            return await ours(client, calls)

    bare_s: list[float] = []
    async_s: list[float] = []
    sync_s: list[float] = []
    with MCPClient(target) as client:  # its own loop thread: each call hops to it
        for _ in range(repeat):
            bare_s.append(asyncio.run(bare(target, calls)))
            async_s.append(asyncio.run(ours_async()))
            sync_s.append(asyncio.run(ours(client, calls)))
    b, a, o = (statistics.median(x) for x in (bare_s, async_s, sync_s))
    return {
        "transport": name,
        "bare_sdk_us": b * 1e6,
        "async_with_us": a * 1e6,
        "with_us": o * 1e6,
        "async_with_ratio": a / b,
        "with_ratio": o / b,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_mcp_load(parser, tools=False)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--http-port-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.http_port_file)
        return
    me = [sys.executable, str(Path(__file__).resolve()), "--serve"]
    rows = [
        measure(
            "stdio",
            StdioServerParameters(command=me[0], args=me[1:]),
            args.calls,
            args.repeat,
        )
    ]
    with tempfile.TemporaryDirectory() as tmp:
        port_file = Path(tmp) / "port"
        server = subprocess.Popen([*me, "--http-port-file", str(port_file)])
        try:
            deadline = time.monotonic() + 60
            while not port_file.exists() or not port_file.read_text():
                if time.monotonic() > deadline or server.poll() is not None:
                    sys.exit("the HTTP server did not start")
                time.sleep(0.05)
            url = f"http://127.0.0.1:{port_file.read_text()}/mcp"
            rows.append(measure("http", url, args.calls, args.repeat))
        finally:
            server.terminate()
            server.wait()
    print(
        f"{'transport':<10}{'bare SDK':>11}{'async with':>13}{'ratio':>7}{'with':>11}{'ratio':>7}"
        "   (per call, median)"
    )
    for row in rows:
        print(
            f"{row['transport']:<10}{row['bare_sdk_us']:>9.0f}µs{row['async_with_us']:>11.0f}µs"
            f"{row['async_with_ratio']:>7.2f}{row['with_us']:>9.0f}µs{row['with_ratio']:>7.2f}"
        )
    print(json.dumps({"bench": "mcp", "calls": args.calls, "repeat": args.repeat, "rows": rows}))


if __name__ == "__main__":
    main()
