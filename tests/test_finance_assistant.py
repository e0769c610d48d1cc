"""The finance assistant of `examples/finance`: deps, an MCP server, approval, a conversation.

It runs against the real ``mcp-server-time`` (a subprocess over stdio) and keeps
its conversation in a real SQLite file; the model is scripted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from examples.finance.assistant import SUMMARY, Summary, assistant, turn
from examples.finance.tools import Ledger
from tooluse import ApprovalRequest, Message
from tooluse.models import ScriptedModel

ROOT = Path(__file__).resolve().parents[1]


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


def test_the_documented_session_runs_asking_once_before_the_payment() -> None:
    typed = (
        "Which of my bills are overdue?\n"
        "Pay the Northwind Power bill from checking.\n"
        "y\n"
        "What is left in checking?\n"
        "/summary\n"
        "\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "examples.finance.assistant",
            "--model",
            "scripted:examples/finance/session.jsonl",
        ],
        cwd=ROOT,
        input=typed,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.count("[completed]") == 4
    # The date came from the MCP server, the payment ran once, after the one question.
    assert 'get_current_time({"timezone": "UTC"}) -> {"timezone": "UTC", "datetime": "' in out
    assert out.count("approve pay_bill(") == 1
    assert out.count('"confirmation": "CONF-B1"') == 1
    assert 'balance({"account": "checking"}) -> {"account": "checking", "amount": 1165.8' in out
    # The typed turn: its value was checked against Summary's fields before the run ended.
    assert (
        "[completed] Summary(checking_usd=1165.8, savings_usd=8400.0, "
        "bills_due=['B2', 'B4'], total_due_usd=77.61)"
    ) in out


def test_a_summary_that_does_not_fit_its_type_goes_back_to_the_model() -> None:
    model = ScriptedModel(
        [
            call("c1", "final_result", {"checking_usd": "lots", "bills_due": []}),
            call(
                "c2",
                "final_result",
                {"checking_usd": 1250, "savings_usd": 8400, "bills_due": [], "total_due_usd": 0},
            ),
        ]
    )
    conversation, clock = assistant(model)
    with clock, conversation.agent:
        result = turn(conversation, SUMMARY, Ledger(), lambda request: False, Summary)
    assert result.status == "completed"
    assert result.output == Summary(
        checking_usd=1250, savings_usd=8400, bills_due=[], total_due_usd=0
    )
    refused, _accepted = [m for m in result.messages if m.role == "tool"]
    assert "checking_usd" in (refused.content or "") and "savings_usd" in (refused.content or "")


def test_a_denied_payment_moves_no_money_and_the_conversation_goes_on_another_day(
    tmp_path: Path,
) -> None:
    store = tmp_path / "chats.sqlite"
    ledger = Ledger()
    asked: list[ApprovalRequest] = []

    def refuse(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    model = ScriptedModel(
        [
            call("c1", "pay_bill", {"bill_id": "B2", "account": "checking"}),
            {"content": "I did not pay Fibernet: you declined."},
        ]
    )
    conversation, clock = assistant(model, store=str(store), conversation_id="alice")
    with clock, conversation.agent:
        first = turn(conversation, "Pay Fibernet.", ledger, refuse)
    assert [r.tool for r in asked] == ["pay_bill"]
    assert first.status == "completed"
    assert ledger.balances["checking"] == 1250.0 and not ledger.bills["B2"]["paid"]
    assert first.calls == []  # a denied call never ran
    assert [(a.tool, a.decision, a.by) for a in first.approvals] == [
        ("pay_bill", "defer", "policy"),
        ("pay_bill", "deny", "decision"),
    ]

    seen: list[list[Message]] = []

    def reply(messages: list[Message]) -> dict[str, Any]:
        seen.append(list(messages))
        return {"content": "You declined the Fibernet payment earlier."}

    later, clock = assistant(ScriptedModel(reply), store=str(store), conversation_id="alice")
    with clock, later.agent:
        second = turn(later, "What happened with Fibernet?", ledger, refuse)
    assert second.status == "completed"
    sent = [m.content for m in seen[0] if m.role == "user"]
    assert sent == ["Pay Fibernet.", "What happened with Fibernet?"]
    assert any(m.role == "tool" and "denied" in (m.content or "") for m in seen[0])
