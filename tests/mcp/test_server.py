"""Our MCP server, seen from clients nobody here wrote: the official SDK's `Client`.

Each test serves a toolbox on a free loopback HTTP port (`ToolServer.serving_http`),
or over stdio from the `tooluse` command, and talks to it with `mcp.Client`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pydantic
import pytest
from mcp import Client, StdioServerParameters

from examples.seed_tools import toolbox
from tooluse import Toolbox, tool
from tooluse.mcp import Image, Resource, ToolServer, current_request
from tooluse.tools._schema import inline_refs

ROOT = Path(__file__).resolve().parents[2]
TOOLUSE = Path(sys.executable).parent / "tooluse"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
# A real 1x1 PNG: an Image checks that its bytes are one.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


class Money(pydantic.BaseModel):
    amount: float
    currency: str


class Quote(pydantic.BaseModel):
    base: str
    target: str
    rate: float


def make_toolbox(ran: list[str]) -> Toolbox:
    @tool
    def get_exchange_rate(base: str, target: str) -> float:
        """Return the exchange rate from base to target currency.

        Args:
            base: ISO 4217 code of the currency to convert from
            target: ISO 4217 code of the currency to convert to
        """
        ran.append(f"rate {base}->{target}")
        return 0.92

    @tool
    def quote(base: str, target: str, note: str | None = None) -> Quote:
        """Quote a rate.

        Args:
            base: currency to convert from
            target: currency to convert to
            note: shown to nobody
        """
        ran.append("quote")
        return Quote(base=base, target=target, rate=0.92)

    @tool
    def fail(reason: str) -> str:
        """Always fail."""
        ran.append("fail")
        raise ValueError(reason)

    @tool
    def chart(title: str) -> list[str | Image | Resource]:
        """Draw a chart."""
        return [title, Image(PIXEL, "image/png"), Resource("chart://1", blob=PIXEL)]

    @tool
    def snapshot(title: str) -> Any:
        """A picture, not declared as one."""
        return [title, Image(PIXEL, "image/png")]

    @tool
    async def slow_count(to: int) -> int:
        """Count, telling the client how far it got."""
        request = current_request()
        assert request is not None
        for n in range(1, to + 1):
            await request.log(f"counted {n}", "info")
            await request.progress(n, to)
        await request.log("done counting", "warning")
        return to

    @tool
    def convert(money: Money, target: str) -> float:
        """Convert an amount of money.

        Args:
            money: the amount and its currency
            target: currency to convert to
        """
        ran.append(f"convert {money.amount} {money.currency}->{target}")
        return money.amount * 0.92

    return Toolbox([get_exchange_rate, quote, fail, chart, snapshot, slow_count, convert])


@pytest.fixture
def ran() -> list[str]:
    return []


@pytest.fixture
def events() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def server(ran: list[str], events: list[dict[str, Any]]) -> Iterator[ToolServer]:
    served = ToolServer(make_toolbox(ran), name="rates", on_event=events.append)
    yield served
    served.close()


async def test_each_input_schema_is_our_rendering(server: ToolServer) -> None:
    async with server.serving_http() as url, Client(url) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}

    assert list(listed) == server.tools.names
    for rendered in server.tools.to_openai():
        function = rendered["function"]
        # the same schema, with references kept for clients that resolve them
        assert inline_refs(listed[function["name"]].input_schema) == function["parameters"]
        assert listed[function["name"]].description == function["description"]
    # lean: an optional parameter is shown as its plain type
    assert listed["quote"].input_schema["properties"]["note"] == {
        "type": "string",
        "description": "shown to nobody",
    }


async def test_a_nested_model_keeps_its_defs_and_validates(
    server: ToolServer, ran: list[str]
) -> None:
    async with server.serving_http() as url, Client(url) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        good = await client.call_tool(
            "convert", {"money": {"amount": 100, "currency": "USD"}, "target": "EUR"}
        )
        bad = await client.call_tool("convert", {"money": {"amount": 100}, "target": "EUR"})

    schema = listed["convert"].input_schema
    assert schema["properties"]["money"] == {
        "$ref": "#/$defs/Money",
        "description": "the amount and its currency",
    }
    assert set(schema["$defs"]["Money"]["properties"]) == {"amount", "currency"}
    assert not good.is_error and good.structured_content == {"result": 92.0}
    assert bad.is_error and "currency" in str(bad.content[0])
    assert ran == ["convert 100.0 USD->EUR"]


async def test_each_output_schema_comes_from_the_return_annotation(server: ToolServer) -> None:
    async with server.serving_http() as url, Client(url) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        rate = await client.call_tool("get_exchange_rate", {"base": "USD", "target": "EUR"})
        quoted = await client.call_tool("quote", {"base": "USD", "target": "EUR"})

    quote_tool = server.tools.get("quote")
    assert quote_tool is not None
    assert listed["quote"].output_schema == quote_tool.returns
    assert quoted.structured_content == {"base": "USD", "target": "EUR", "rate": 0.92}
    assert json.loads(quoted.content[0].text) == quoted.structured_content  # type: ignore[union-attr]
    # A value that is not an object is wrapped: structured content is always an object.
    assert listed["get_exchange_rate"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "number"}},
        "required": ["result"],
    }
    assert rate.structured_content == {"result": 0.92}
    assert not rate.is_error
    # A content tool declares no output schema: its result is content blocks.
    assert listed["chart"].output_schema is None


async def test_a_failing_tool_is_an_error_result_and_the_server_carries_on(
    server: ToolServer, ran: list[str]
) -> None:
    async with server.serving_http() as url, Client(url) as client:
        failed = await client.call_tool("fail", {"reason": "the bank is closed"})
        after = await client.call_tool("get_exchange_rate", {"base": "USD", "target": "EUR"})

    assert failed.is_error
    assert failed.content == [types.TextContent(text="fail failed: ValueError: the bank is closed")]
    assert not after.is_error
    assert ran == ["fail", "rate USD->EUR"]


async def test_the_dispatcher_refuses_bad_calls_before_the_tool_runs(
    server: ToolServer, ran: list[str]
) -> None:
    async with server.serving_http() as url, Client(url) as client:
        unknown = await client.call_tool("get_exchange_rates", {"base": "USD", "target": "EUR"})
        missing = await client.call_tool("get_exchange_rate", {"base": "USD"})
        wrong = await client.call_tool("slow_count", {"to": "three"})

    for result in (unknown, missing, wrong):
        assert result.is_error
    text = [r.content[0].text for r in (unknown, missing, wrong)]  # type: ignore[union-attr]
    assert "get_exchange_rate" in text[0]  # did you mean
    assert "target" in text[1]
    assert "to" in text[2]
    assert ran == []


async def test_every_call_is_recorded_as_in_an_agent_trace(
    server: ToolServer, events: list[dict[str, Any]]
) -> None:
    async with server.serving_http() as url, Client(url) as client:
        await client.call_tool("get_exchange_rate", {"base": "USD", "target": "EUR"})
        await client.call_tool("fail", {"reason": "closed"})
        await client.call_tool("nope", {})

    assert [(e["event"], e["name"], e["error"]) for e in events] == [
        ("call", "get_exchange_rate", None),
        ("call", "fail", "fail failed: ValueError: closed"),
        ("rejected", "nope", events[2]["error"]),
    ]
    assert events[0]["arguments"] == {"base": "USD", "target": "EUR"}
    assert events[0]["result"] == 0.92
    assert events[0]["source"] == "mcp"
    assert len({e["id"] for e in events}) == 3


async def test_content_tools_return_content_blocks(server: ToolServer) -> None:
    async with server.serving_http() as url, Client(url) as client:
        result = await client.call_tool("chart", {"title": "EUR/USD"})

    text, image, resource = result.content
    assert text == types.TextContent(text="EUR/USD")
    assert isinstance(image, types.ImageContent)
    assert (base64.b64decode(image.data), image.mime_type) == (PIXEL, "image/png")
    assert isinstance(resource, types.EmbeddedResource)
    assert isinstance(resource.resource, types.BlobResourceContents)
    assert str(resource.resource.uri) == "chart://1"
    assert base64.b64decode(resource.resource.blob) == PIXEL
    assert result.structured_content is None


async def test_media_a_tool_did_not_declare_is_still_sent_as_content(server: ToolServer) -> None:
    async with server.serving_http() as url, Client(url) as client:
        result = await client.call_tool("snapshot", {"title": "now"})

    text, image = result.content
    assert text == types.TextContent(text="now")
    assert isinstance(image, types.ImageContent)
    assert (base64.b64decode(image.data), image.mime_type) == (PIXEL, "image/png")


async def test_a_tool_logs_and_reports_progress_to_the_client(server: ToolServer) -> None:
    logs: list[tuple[str, Any]] = []
    progress: list[tuple[float, float | None]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data))

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total))

    async with (
        server.serving_http() as url,
        Client(url, logging_callback=on_log, log_level="debug") as client,
    ):
        result = await client.call_tool("slow_count", {"to": 3}, progress_callback=on_progress)

    assert result.structured_content == {"result": 3}
    assert logs == [
        ("info", "counted 1"),
        ("info", "counted 2"),
        ("info", "counted 3"),
        ("warning", "done counting"),
    ]
    assert progress == [(1, 3), (2, 3), (3, 3)]


# Setting a level for the connection is deprecated from protocol 2026-07-28 on; the
# clients of earlier versions, the suite's among them, still do it.
@pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")
async def test_log_messages_below_the_level_the_client_set_are_not_sent(
    server: ToolServer,
) -> None:
    logs: list[tuple[str, Any]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data))

    # The handshake era, where a client sets one level for its connection.
    async with (
        server.serving_http() as url,
        Client(url, mode="legacy", logging_callback=on_log) as c,
    ):
        await c.set_logging_level("warning")
        await c.call_tool("slow_count", {"to": 2})

    assert logs == [("warning", "done counting")]


async def test_outside_an_mcp_call_there_is_no_request(ran: list[str]) -> None:
    slow_count = make_toolbox(ran).get("slow_count")
    assert slow_count is not None
    assert current_request() is None
    with pytest.raises(AssertionError):
        await slow_count.function(to=1)


def test_tooluse_mcp_serve_speaks_stdio_and_traces_every_call(tmp_path: Path) -> None:
    trace = tmp_path / "calls.jsonl"

    async def session() -> tuple[list[str], types.CallToolResult]:
        command = StdioServerParameters(
            command=str(TOOLUSE),
            args=["mcp", "serve", "examples.seed_tools:toolbox", "--trace", str(trace)],
            env=ENV,
            cwd=str(ROOT),
        )
        async with Client(command) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            called = await client.call_tool("calculator", {"expression": "2 * (3 + 4)"})
            return names, called

    names, called = asyncio.run(asyncio.wait_for(session(), 120))

    assert names == toolbox.names
    assert called.structured_content == {"result": 14}
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(e["event"], e["name"], e["result"]) for e in events] == [("call", "calculator", 14)]


def test_tooluse_mcp_serve_says_when_the_port_is_taken() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = tooluse("mcp", "serve", "examples.seed_tools:toolbox", "--http", f"127.0.0.1:{port}")

    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: cannot serve on 127.0.0.1:{port}: "), line


def test_tooluse_mcp_serve_refuses_an_address_it_cannot_read() -> None:
    proc = tooluse("mcp", "serve", "examples.seed_tools:toolbox", "--http", "localhost:eighty")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: --http takes HOST:PORT or PORT, e.g. 127.0.0.1:8000 (port 0: any free one); "
        "got 'localhost:eighty'"
    ]


def tooluse(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLUSE), *args],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_bare_port_binds_loopback() -> None:
    from tooluse.mcp._server import parse_address

    assert parse_address("0") == ("127.0.0.1", 0)
    assert parse_address("[::1]:8000") == ("::1", 8000)
    assert parse_address("0.0.0.0:80") == ("0.0.0.0", 80)


# -- DNS rebinding: only requests addressed to the served address are answered ----------

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}


def post_initialize(url: str, **headers: str) -> int:
    """The status of an initialize request to ``url`` sent with ``headers``."""
    import httpx

    sent = {"accept": "application/json, text/event-stream", **headers}
    with httpx.Client(timeout=30) as http:
        return http.post(url, json=INITIALIZE, headers=sent).status_code


def foreign_addresses(url: str) -> list[str]:
    """Host values a browser tricked by DNS rebinding, or another port, would send."""
    served = url.split("/")[2]
    port = int(served.rpartition(":")[2])
    return ["evil.example:" + str(port), "evil.example", served.rpartition(":")[0] + f":{port + 1}"]


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1"])
async def test_an_http_server_answers_only_at_the_address_it_serves(
    server: ToolServer, host: str
) -> None:
    async with server.serving_http(host=host) as url:
        served = url.split("/")[2]
        async with Client(url) as client:  # a client that reached it by its address is served
            assert [t.name for t in (await client.list_tools()).tools] == server.tools.names
        statuses = await asyncio.to_thread(
            lambda: (
                [post_initialize(url, host=h) for h in foreign_addresses(url)],
                post_initialize(url, origin="http://evil.example"),
                post_initialize(url, origin=f"http://{served}"),
            )
        )
    refused_hosts, foreign_origin, own_origin = statuses
    assert refused_hosts == [421, 421, 421]
    assert foreign_origin == 403
    assert own_origin == 200


def test_tooluse_mcp_serve_on_another_loopback_address_refuses_other_hosts() -> None:
    import re

    proc = subprocess.Popen(
        [str(TOOLUSE), "mcp", "serve", "examples.seed_tools:toolbox", "--http", "127.0.0.2:0"],
        cwd=ROOT,
        env=ENV,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        banner = proc.stderr.readline()
        found = re.search(r"http://127\.0\.0\.2:\d+/mcp", banner)
        assert found is not None, banner
        url = found.group(0)
        assert [post_initialize(url, host=h) for h in foreign_addresses(url)] == [421, 421, 421]
        assert post_initialize(url, origin="http://evil.example") == 403
        assert post_initialize(url) == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
