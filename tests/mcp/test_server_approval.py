"""Our MCP server keeps what each tool declares, and asks before calls that change things.

Clients here are the official SDK's `Client` (both protocol eras: the elicitation
request of 2025-11-25 and the input-required retry of 2026-07-28), our own
`MCPClient`, and raw JSON-RPC over HTTP where a test plays a client that cheats.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tooluse import Toolbox, tool
from tooluse.mcp import MCPClient, ToolServer
from tooluse.policy import Approval, ApprovalRequest

ROOT = Path(__file__).resolve().parents[2]
TOOLUSE = Path(sys.executable).parent / "tooluse"
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
MODES = ["auto", "legacy"]  # 2026-07-28 (input required) and 2025-11-25 (elicitation)


def finance(paid: list[tuple[str, float]]) -> Toolbox:
    @tool
    def balance(account: str) -> float:
        """The balance of an account, in EUR."""
        return 120.0

    @tool(side_effects=True)
    def pay_bill(payee: str, amount: float) -> str:
        """Pay a bill from the current account."""
        paid.append((payee, amount))
        return f"paid {amount:.2f} EUR to {payee}"

    @tool(trust="untrusted")
    def read_statement(account: str) -> str:
        """The last statement, as the bank's mail sent it."""
        return "3 payments"

    @tool(effects="idempotent")
    def set_autopay(payee: str, enabled: bool) -> str:
        """Turn automatic payment of a payee's bills on or off."""
        return f"autopay for {payee}: {enabled}"

    return Toolbox([balance, pay_bill, read_statement, set_autopay])


#: What the tests' toolbox module serves from a subprocess (`tooluse mcp serve`).
toolbox = finance([])


def asking(request: ApprovalRequest) -> Approval:
    """A policy that leaves every call with side effects to the client's user."""
    return Approval.defer()


@pytest.fixture
def paid() -> list[tuple[str, float]]:
    return []


@pytest.fixture
def events() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def server(paid: list[tuple[str, float]], events: list[dict[str, Any]]) -> Iterator[ToolServer]:
    served = ToolServer(finance(paid), approval=asking, on_event=events.append)
    yield served
    served.close()


def answering(answer: types.ElicitResult, asked: list[str]) -> Any:
    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return answer

    return on_elicit


YES = types.ElicitResult(action="accept", content={"allow": True})


async def test_each_tool_publishes_the_hints_of_what_it_declares(server: ToolServer) -> None:
    async with server.serving_http() as url, Client(url) as client:
        listed = {t.name: t.annotations for t in (await client.list_tools()).tools}

    hints = {
        name: (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
        for name, a in listed.items()
        if a is not None
    }
    assert hints == {
        "balance": (True, False, True, False),
        "pay_bill": (False, True, False, False),
        "read_statement": (True, False, True, True),
        "set_autopay": (False, True, True, False),
    }


async def test_our_client_reads_back_what_our_server_declares(server: ToolServer) -> None:
    async with server.serving_http() as url, MCPClient.http(url) as client:
        read_back = {t.name: (t.side_effects, t.effects, t.trust) for t in client.toolbox()}

    assert read_back == {t.name: (t.side_effects, t.effects, t.trust) for t in server.tools}
    assert read_back["set_autopay"] == (True, "idempotent", "trusted")


@pytest.mark.parametrize("mode", MODES)
async def test_ask_puts_the_call_to_the_clients_user_and_runs_it_on_yes(
    server: ToolServer, paid: list[tuple[str, float]], events: list[dict[str, Any]], mode: str
) -> None:
    asked: list[str] = []
    async with (
        server.serving_http() as url,
        Client(url, mode=mode, elicitation_callback=answering(YES, asked)) as client,  # type: ignore[arg-type]
    ):
        read = await client.call_tool("balance", {"account": "current"})
        result = await client.call_tool("pay_bill", {"payee": "ACME", "amount": 42.5})

    assert not read.is_error and not result.is_error
    assert result.structured_content == {"result": "paid 42.50 EUR to ACME"}
    assert paid == [("ACME", 42.5)]
    # Only the call with side effects was asked about, once, naming its arguments.
    assert len(asked) == 1
    assert "pay_bill" in asked[0] and "42.5" in asked[0] and "ACME" in asked[0]
    assert [(e["event"], e["name"]) for e in events] == [("call", "balance"), ("call", "pay_bill")]


NOT_YES = [
    (types.ElicitResult(action="decline"), "declined"),
    (types.ElicitResult(action="cancel"), "dismissed"),
    (types.ElicitResult(action="accept", content={"allow": False}), "did not allow"),
]


@pytest.mark.parametrize("answered", [(m, *a) for m in MODES for a in NOT_YES])
async def test_anything_but_yes_refuses_the_call_and_the_tool_never_runs(
    server: ToolServer,
    paid: list[tuple[str, float]],
    events: list[dict[str, Any]],
    answered: tuple[str, types.ElicitResult, str],
) -> None:
    mode, answer, reason = answered
    async with (
        server.serving_http() as url,
        Client(url, mode=mode, elicitation_callback=answering(answer, [])) as client,  # type: ignore[arg-type]
    ):
        result = await client.call_tool("pay_bill", {"payee": "ACME", "amount": 42.5})

    assert result.is_error
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert "denied" in text.text and reason in text.text
    assert paid == []
    assert [(e["event"], e["kind"]) for e in events] == [("rejected", "denied")]


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_cannot_ask_its_user_is_refused_with_the_reason(
    server: ToolServer, paid: list[tuple[str, float]], mode: str
) -> None:
    async with server.serving_http() as url, Client(url, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.call_tool("pay_bill", {"payee": "ACME", "amount": 42.5})

    assert result.is_error
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert "cannot ask its user" in text.text
    assert paid == []


async def test_a_no_is_not_remembered_between_calls(
    server: ToolServer, paid: list[tuple[str, float]]
) -> None:
    # The calls of a server belong to no run: the same call asked again is asked again.
    answers = iter([types.ElicitResult(action="decline"), YES])

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return next(answers)

    async with server.serving_http() as url, Client(url, elicitation_callback=on_elicit) as client:
        first = await client.call_tool("pay_bill", {"payee": "ACME", "amount": 10.0})
        second = await client.call_tool("pay_bill", {"payee": "ACME", "amount": 10.0})

    assert (first.is_error, second.is_error) == (True, False)
    assert paid == [("ACME", 10.0)]


META = {
    types.PROTOCOL_VERSION_META_KEY: "2026-07-28",
    types.CLIENT_CAPABILITIES_META_KEY: {"elicitation": {"form": {}}},
    types.CLIENT_INFO_META_KEY: {"name": "raw", "version": "1"},
}
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "pay_bill",
}
ALLOW = {"approve": {"action": "accept", "content": {"allow": True}}}


async def raw_call(
    http: httpx.AsyncClient, url: str, arguments: dict[str, Any], **retry: Any
) -> dict[str, Any]:
    params = {"name": "pay_bill", "arguments": arguments, "_meta": META, **retry}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    reply = await http.post(url, json=body, headers=HEADERS)
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json()["result"]
    return result


async def test_an_answer_is_used_once_and_only_for_the_call_it_was_asked_about(
    server: ToolServer, paid: list[tuple[str, float]]
) -> None:
    async with server.serving_http() as url, httpx.AsyncClient() as http:
        small = {"payee": "ACME", "amount": 5.0}
        question = await raw_call(http, url, small)
        assert question["resultType"] == "input_required"
        state = question["requestState"]
        form = question["inputRequests"]["approve"]
        assert form["method"] == "elicitation/create" and "5.0" in form["params"]["message"]

        # A yes for 5 EUR, replayed on 5,000: asked again, nothing paid.
        swapped = await raw_call(
            http, url, {"payee": "ACME", "amount": 5000.0}, inputResponses=ALLOW, requestState=state
        )
        assert swapped["resultType"] == "input_required"
        assert swapped["requestState"] != state
        # A state the server never issued: asked again.
        forged = await raw_call(
            http, url, small, inputResponses=ALLOW, requestState="made-up-by-the-client"
        )
        assert forged["resultType"] == "input_required"
        assert paid == []

        ran = await raw_call(http, url, small, inputResponses=ALLOW, requestState=state)
        assert ran.get("isError") is not True and ran["structuredContent"] == {
            "result": "paid 5.00 EUR to ACME"
        }
        # The same answer again: used already, so the user is asked again.
        replayed = await raw_call(http, url, small, inputResponses=ALLOW, requestState=state)
        assert replayed["resultType"] == "input_required"

    assert paid == [("ACME", 5.0)]


def test_deny_refuses_every_call_with_side_effects(paid: list[tuple[str, float]]) -> None:
    server = ToolServer(finance(paid), approval=lambda request: False)

    async def calls() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with server.serving_http() as url, Client(url) as client:
            read = await client.call_tool("balance", {"account": "current"})
            pay = await client.call_tool("pay_bill", {"payee": "ACME", "amount": 1.0})
            return read, pay

    try:
        read, pay = asyncio.run(calls())
    finally:
        server.close()
    assert (read.is_error, pay.is_error) == (False, True)
    assert paid == []


def serve_command(*flags: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(TOOLUSE),
        args=["mcp", "serve", "tests.mcp.test_server_approval:toolbox", *flags],
        env=ENV,
        cwd=str(ROOT),
    )


@pytest.mark.parametrize(
    ("flag", "pays"),
    [("ask", True), ("deny", False), ("tests.mcp.test_server_approval:asking", True)],
)
def test_tooluse_mcp_serve_approve_puts_the_gate_before_client_calls(flag: str, pays: bool) -> None:
    asked: list[str] = []

    async def session() -> types.CallToolResult:
        on_elicit = answering(YES, asked)
        async with Client(serve_command("--approve", flag), elicitation_callback=on_elicit) as c:
            return await c.call_tool("pay_bill", {"payee": "ACME", "amount": 3.0})

    result = asyncio.run(asyncio.wait_for(session(), 120))

    assert result.is_error is not pays
    assert len(asked) == (1 if pays else 0)


def test_tooluse_mcp_serve_approve_refuses_what_names_no_policy() -> None:
    done = subprocess.run(
        [str(TOOLUSE), "mcp", "serve", "examples.seed_tools:toolbox", "--approve", "maybe"],
        check=False,
        capture_output=True,
        text=True,
        env=ENV,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode != 0
    assert "--approve takes none, ask, ask-all, deny or MODULE:ATTR" in done.stderr
    assert "Traceback" not in done.stderr
