"""One approval policy at the dispatcher, for the model's calls and a script's alike."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import mcp_types as types
import pytest

from tooluse import (
    Agent,
    Approval,
    ApprovalPolicy,
    ApprovalRequest,
    Tool,
    Toolbox,
    ToolDefinitionError,
    tool,
)
from tooluse.mcp._client_tools import build_tool
from tooluse.models import ScriptedModel

from ._bank import LANDLORD, Bank, call, calls, fenced


def agent_for(
    agents: list[Agent], bank: Bank, replies: list[dict[str, Any]], approval: Any, **kw: Any
) -> Agent:
    agent = Agent(ScriptedModel(replies), bank.toolbox(), approval=approval, **kw)
    agents.append(agent)
    return agent


def test_a_denied_call_does_not_run_and_the_model_is_told_why(agents: list[Agent]) -> None:
    bank = Bank()
    replies = [call("c1", "send_money", {"recipient": LANDLORD, "amount": 900}), {"content": "ok"}]
    agent = agent_for(agents, bank, replies, lambda r: Approval.deny("the user is away"))
    result = agent.run("pay the rent")
    assert result.status == "completed"
    assert bank.sent == [] and result.calls == []
    (refused,) = result.rejected
    assert refused.kind == "denied" and "the user is away" in refused.error
    tool_message = result.messages[2]
    assert tool_message.role == "tool" and tool_message.is_error
    assert tool_message.content == f"Error: {refused.error}"
    (record,) = result.approvals
    assert (record.decision, record.by, record.caller) == ("deny", "policy", "model")


def test_the_policy_is_asked_about_side_effects_only_unless_it_asks_about_all(
    agents: list[Agent],
) -> None:
    asked: list[str] = []

    def allow(request: ApprovalRequest) -> bool:
        asked.append(request.tool)
        return True

    turn = calls(
        ("c1", "read_inbox", {}),
        ("c2", "send_money", {"recipient": LANDLORD, "amount": 900}),
    )
    bank = Bank()
    result = agent_for(agents, bank, [turn, {"content": "ok"}], allow).run("pay")
    assert asked == ["send_money"] and bank.sent == [(LANDLORD, 900.0)]
    assert len(result.calls) == 2

    asked.clear()
    everything = ApprovalPolicy(allow, asks="all")
    agent_for(agents, Bank(), [turn, {"content": "ok"}], everything).run("pay")
    assert asked == ["read_inbox", "send_money"]


def test_false_denies_and_the_request_shows_the_run_so_far(agents: list[Agent]) -> None:
    seen: list[ApprovalRequest] = []

    def refuse(request: ApprovalRequest) -> bool:
        seen.append(request)
        return False

    bank = Bank()
    replies = [
        call("c1", "get_contacts", {}),
        call("c2", "send_money", {"recipient": LANDLORD, "amount": 900}),
        {"content": "ok"},
    ]
    result = agent_for(agents, bank, replies, refuse).run("pay the landlord")
    assert bank.sent == [] and result.rejected[0].kind == "denied"
    (request,) = seen
    assert request.call_id == "c2" and request.caller == "model" and request.round == 2
    assert request.arguments == {"recipient": LANDLORD, "amount": 900}
    assert request.reason == "send_money has side effects"
    assert request.run is not None and request.run.task == "pay the landlord"
    assert [c.name for c in request.run.calls] == ["get_contacts"]
    assert request.run.messages[0].content == "pay the landlord"


def test_a_denied_script_call_raises_a_denied_tool_error_and_its_retry_is_not_asked_again(
    agents: list[Agent],
) -> None:
    asked: list[ApprovalRequest] = []

    def refuse(request: ApprovalRequest) -> Approval:
        asked.append(request)
        return Approval.deny("no payments today")

    script = (
        "import tools\n"
        "for attempt in range(2):\n"
        "    try:\n"
        f"        tools.send_money({LANDLORD!r}, 900)\n"
        "    except tools.ToolError as exc:\n"
        "        print(attempt, exc.kind, exc)\n"
    )
    bank = Bank()
    agent = agent_for(agents, bank, [fenced(script), {"content": "ok"}], refuse, convention="code")
    result = agent.run("pay the rent")
    assert result.status == "completed" and bank.sent == []
    output = result.scripts[0].stdout.splitlines()
    assert output[0].startswith("0 denied the call to send_money was denied: no payments today")
    assert output[1].startswith("1 denied ")
    assert len(asked) == 1 and asked[0].caller == "script"
    assert [(a.decision, a.by) for a in result.approvals] == [
        ("deny", "policy"),
        ("deny", "memory"),
    ]
    assert [r.kind for r in result.rejected] == ["denied", "denied"]
    assert {r.source for r in result.rejected} == {"script"}


def test_an_allowed_call_may_run_with_edited_arguments(agents: list[Agent]) -> None:
    bank = Bank()
    replies = [call("c1", "send_money", {"recipient": LANDLORD, "amount": 9000}), {"content": "ok"}]
    policy = lambda r: Approval.allow({**r.arguments, "amount": 900})  # noqa: E731
    result = agent_for(agents, bank, replies, policy).run("pay the rent")
    assert bank.sent == [(LANDLORD, 900.0)]
    (record,) = result.calls
    assert record.arguments["amount"] == 900 and record.repairs


def test_a_policy_that_raises_denies_and_the_exception_is_recorded(agents: list[Agent]) -> None:
    def broken(request: ApprovalRequest) -> bool:
        raise ValueError("the rules file is missing")

    bank = Bank()
    replies = [call("c1", "send_money", {"recipient": LANDLORD, "amount": 900}), {"content": "ok"}]
    result = agent_for(agents, bank, replies, broken).run("pay")
    assert result.status == "completed" and bank.sent == []
    (record,) = result.approvals
    assert record.decision == "deny" and record.by == "failure"
    assert record.error == "the approval policy failed: ValueError: the rules file is missing"
    assert "ValueError" in result.rejected[0].error


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_policy_that_hangs_denies_after_its_timeout(agents: list[Agent], kind: str) -> None:
    release = threading.Event()

    def hangs(request: ApprovalRequest) -> bool:
        release.wait()
        return True

    async def hangs_async(request: ApprovalRequest) -> bool:
        await asyncio.Event().wait()
        return True

    policy = ApprovalPolicy(hangs if kind == "sync" else hangs_async, timeout=0.2)
    bank = Bank()
    replies = [call("c1", "send_money", {"recipient": LANDLORD, "amount": 900}), {"content": "ok"}]
    try:
        result = agent_for(agents, bank, replies, policy).run("pay")
    finally:
        release.set()
    assert result.status == "completed" and bank.sent == []
    (record,) = result.approvals
    assert record.by == "failure" and record.error == (
        "the approval policy gave no decision within 0.2 s"
    )


def test_a_policy_answering_something_else_denies(agents: list[Agent]) -> None:
    bank = Bank()
    replies = [call("c1", "send_money", {"recipient": LANDLORD, "amount": 900}), {"content": "ok"}]
    result = agent_for(agents, bank, replies, lambda r: "yes").run("pay")
    assert bank.sent == []
    assert "expected an Approval, True or False, got 'yes'" in (result.approvals[0].error or "")


def test_an_async_policy_is_awaited(agents: list[Agent]) -> None:
    async def allow(request: ApprovalRequest) -> Approval:
        await asyncio.sleep(0)
        return Approval.allow()

    bank = Bank()
    replies = [call("c1", "send_money", {"recipient": LANDLORD, "amount": 900}), {"content": "ok"}]
    agent_for(agents, bank, replies, allow).run("pay")
    assert bank.sent == [(LANDLORD, 900.0)]


def test_a_script_only_tool_is_refused_to_the_model_and_not_shown_to_it(
    agents: list[Agent],
) -> None:
    ran: list[str] = []

    @tool(callers={"script"})
    def bulk_export() -> str:
        """Export everything."""
        ran.append("export")
        return "exported"

    model = ScriptedModel([call("c1", "bulk_export", {}), {"content": "ok"}])
    agent = Agent(model, [bulk_export])
    agents.append(agent)
    result = agent.run("export")
    assert ran == [] and result.rejected[0].kind == "denied"
    assert "may only be called from a script" in result.rejected[0].error
    assert model.requests[0].tools == []

    script = "import tools\nprint(tools.bulk_export())\n"
    coder = Agent(
        ScriptedModel([fenced(script), {"content": "ok"}]), [bulk_export], convention="code"
    )
    agents.append(coder)
    assert coder.run("export").scripts[0].stdout == "exported\n" and ran == ["export"]


def test_a_model_only_tool_is_not_in_the_stubs_and_refused_to_scripts(agents: list[Agent]) -> None:
    @tool(callers={"model"})
    def wire(recipient: str) -> str:
        """Wire money."""
        return "wired"

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    script = "import tools\nprint(hasattr(tools, 'wire'), tools.ping())\n"
    model = ScriptedModel([fenced(script), {"content": "ok"}])
    agent = Agent(model, [wire, ping], convention="code")
    agents.append(agent)
    result = agent.run("go")
    assert result.scripts[0].stdout == "False pong\n"
    system = model.requests[0].messages[0].content or ""
    assert "def ping" in system and "def wire" not in system
    # The dispatcher refuses it too, whatever reaches it.
    from tooluse import Dispatcher

    dispatcher = Dispatcher(Toolbox([wire]))
    try:
        refused = asyncio.run(dispatcher.call("wire", {"recipient": "x"}, call_id="s1"))
    finally:
        dispatcher.close()
    assert refused.kind == "denied" and "may not be called from a script" in refused.error  # type: ignore[union-attr]


def test_annotations_are_checked_and_kept() -> None:
    @tool(trust="untrusted", callers={"script"}, side_effects=True)
    def fetch(url: str) -> str:
        """Fetch a page."""
        return ""

    assert fetch.trust == "untrusted" and fetch.callers == {"script"} and fetch.side_effects
    raw = Tool.from_schema(
        "web", "Search.", {"type": "object"}, lambda: "", trust="untrusted", callers=["model"]
    )
    assert raw.trust == "untrusted" and raw.callers == {"model"}
    with pytest.raises(ToolDefinitionError, match="trust must be"):
        Tool.from_schema("web", "", {"type": "object"}, lambda: "", trust="maybe")  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="callers must be"):
        tool(callers={"user"}, name="odd")(lambda: "")  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="callers must be"):
        Tool.from_schema("web", "", {"type": "object"}, lambda: "", callers=())


@pytest.mark.parametrize(
    ("hints", "side_effects", "trust"),
    [
        ({}, True, "untrusted"),
        ({"readOnlyHint": True}, False, "untrusted"),
        ({"readOnlyHint": True, "openWorldHint": False}, False, "trusted"),
        (
            {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False},
            True,
            "trusted",
        ),
        ({"destructiveHint": True, "openWorldHint": True}, True, "untrusted"),
    ],
)
def test_mcp_hints_map_onto_side_effects_and_trust(
    hints: dict[str, bool], side_effects: bool, trust: str
) -> None:
    remote = types.Tool(
        name="t",
        input_schema={"type": "object"},
        annotations=types.ToolAnnotations(**hints) if hints else None,
    )

    async def never(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        raise AssertionError

    built = build_tool(remote, "t", never, timeout=None)
    assert (built.side_effects, built.trust, built.callers) == (
        side_effects,
        trust,
        {"model", "script"},
    )
    forced = build_tool(
        remote,
        "t",
        never,
        timeout=None,
        side_effects=True,
        trust="trusted",
        callers=frozenset({"script"}),
    )
    assert (forced.side_effects, forced.trust, forced.callers) == (True, "trusted", {"script"})
