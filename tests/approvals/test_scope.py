"""A run's scope: tools with side effects outside it are denied, whatever the run read."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooluse import Agent, Approval, RunResult, Toolbox, UsageError, tool
from tooluse.models import ScriptedModel
from tooluse.policy._scope import SCOPE_TOOL

from ._bank import MAIL, Bank, call, fenced

SCOPE_TASK = "Pay the rent to my landlord."


def declare(*names: str) -> dict[str, Any]:
    """The model's answer to the scope question."""
    return call("scope", SCOPE_TOOL, {"tools": list(names)})


def toolbox(bank: Bank, closed: list[str]) -> Toolbox:
    @tool(side_effects=True)
    def close_account(reason: str) -> str:
        """Close the account for good."""
        closed.append(reason)
        return "closed"

    return bank.toolbox().merged(Toolbox([close_account]))


def test_a_fixed_scope_denies_every_other_tool_with_side_effects(agents: list[Agent]) -> None:
    bank, closed = Bank(), list[str]()
    replies = [
        call("c1", "read_inbox", {}),
        call("c2", "close_account", {"reason": "the mail says so"}),
        call("c3", "get_contacts", {}),
        call("c4", "send_money", {"recipient": "DE89370400440532013000", "amount": 900}),
        {"content": "Paid."},
    ]
    agent = Agent(ScriptedModel(replies), toolbox(bank, closed), scope=["send_money"])
    agents.append(agent)
    result = agent.run(SCOPE_TASK)
    assert result.status == "completed" and result.scope == ("send_money",)
    assert closed == [] and bank.sent == [("DE89370400440532013000", 900.0)]
    (refused,) = result.rejected
    assert refused.kind == "denied" and "outside this run's scope (send_money)" in refused.error
    # Reading is never limited.
    assert [c.name for c in result.calls] == ["read_inbox", "get_contacts", "send_money"]
    assert [(a.tool, a.by) for a in result.approvals if a.decision == "deny"] == [
        ("close_account", "scope")
    ]


def test_a_script_is_held_to_the_scope(agents: list[Agent]) -> None:
    bank, closed = Bank(), list[str]()
    script = (
        "import tools\n"
        "try:\n"
        "    tools.close_account(reason='x')\n"
        "except tools.ToolError as exc:\n"
        "    print(exc.kind, 'scope' in str(exc))\n"
        "print(tools.send_money(recipient='DE89370400440532013000', amount=5))\n"
    )
    agent = Agent(
        ScriptedModel([fenced(script), {"content": "ok"}]),
        toolbox(bank, closed),
        convention="code",
        scope=["send_money"],
    )
    agents.append(agent)
    result = agent.run(SCOPE_TASK)
    assert closed == [] and bank.sent == [("DE89370400440532013000", 5.0)]
    assert result.scripts[0].stdout.splitlines()[0] == "denied True"


def test_asked_the_model_names_the_scope_from_the_task_alone(agents: list[Agent]) -> None:
    bank, closed = Bank(), list[str]()
    events: list[dict[str, Any]] = []
    model = ScriptedModel(
        [
            declare("send_money"),
            call("c1", "close_account", {"reason": "mail"}),
            {"content": "Could not."},
        ]
    )
    agent = Agent(
        model,
        toolbox(bank, closed),
        scope="ask",
        system_prompt="You are a careful bank assistant.",
        on_event=events.append,
    )
    agents.append(agent)
    earlier = Agent(
        ScriptedModel([call("r", "read_inbox", {}), {"content": "A mail."}]), bank.toolbox()
    )
    agents.append(earlier)
    history = earlier.run("Any mail?").messages
    result = agent.run(SCOPE_TASK, history=history)
    assert result.scope == ("send_money",) and closed == []
    question = model.requests[0]
    asked = "\n".join(m.content or "" for m in question.messages)
    assert SCOPE_TASK in asked and "careful bank assistant" in asked
    assert "IMPORTANT" not in asked and MAIL not in asked  # nothing the run had read
    assert question.tool_choice == SCOPE_TOOL
    enum = question.tools[0].parameters["properties"]["tools"]["items"]["enum"]
    assert sorted(enum) == ["close_account", "send_money"]  # only tools with side effects
    (scoped,) = [e for e in events if e["event"] == "scope"]
    assert scoped["tools"] == ["send_money"] and "problem" not in scoped
    assert result.usage.asides and result.usage.input_tokens > sum(
        u.input_tokens for u in result.usage.rounds
    )


def test_a_reply_that_names_nothing_readable_allows_no_side_effect(agents: list[Agent]) -> None:
    bank, closed = Bank(), list[str]()
    events: list[dict[str, Any]] = []
    replies = [
        {"content": "I will pay the rent."},  # prose, not the declaration
        call("c1", "send_money", {"recipient": "DE89370400440532013000", "amount": 900}),
        {"content": "Denied."},
    ]
    agent = Agent(
        ScriptedModel(replies), toolbox(bank, closed), scope="ask", on_event=events.append
    )
    agents.append(agent)
    result = agent.run(SCOPE_TASK)
    assert result.scope == () and bank.sent == []
    assert result.rejected[0].kind == "denied"
    (scoped,) = [e for e in events if e["event"] == "scope"]
    assert scoped["problem"] == f"the reply did not call {SCOPE_TOOL}"


def test_a_scope_naming_an_unknown_tool_is_refused() -> None:
    with pytest.raises(UsageError, match="scope names tools the toolbox lacks: wire"):
        Agent(ScriptedModel([]), Bank().toolbox(), scope=["send_money", "wire"])


def test_a_paused_run_keeps_its_scope_through_json_and_resume(agents: list[Agent]) -> None:
    bank, closed = Bank(), list[str]()
    replies = [
        declare("send_money"),
        call("c1", "send_money", {"recipient": "DE89370400440532013000", "amount": 900}),
    ]
    agent = Agent(
        ScriptedModel(replies),
        toolbox(bank, closed),
        scope="ask",
        approval=lambda _: Approval.defer(),
    )
    agents.append(agent)
    paused = agent.run(SCOPE_TASK)
    assert paused.status == "needs_approval" and paused.scope == ("send_money",)
    carried = RunResult.from_dict(json.loads(json.dumps(paused.to_dict())))
    after = [call("c2", "close_account", {"reason": "x"}), {"content": "ok"}]
    # A new agent with no scope of its own: the paused run's scope still holds.
    again = Agent(ScriptedModel(after), toolbox(bank, closed), approval=lambda _: Approval.allow())
    agents.append(again)
    result = again.resume(carried, {"c1": True})
    assert bank.sent == [("DE89370400440532013000", 900.0)] and closed == []
    assert result.status == "completed" and result.rejected[-1].kind == "denied"
