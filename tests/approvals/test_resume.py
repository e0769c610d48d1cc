"""A deferred call stops the run; resuming it, here or in another process, goes on from there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tooluse import (
    Agent,
    Approval,
    CallEndEvent,
    CallStartEvent,
    DoneEvent,
    ResumeError,
    RunResult,
    ScriptOutputEvent,
)
from tooluse.models import ScriptedModel

from ._bank import LANDLORD, Bank, call, calls, defer, fenced

ROOT = Path(__file__).resolve().parents[2]
PAY = {"recipient": LANDLORD, "amount": 900}


def agent_for(agents: list[Agent], bank: Bank, replies: list[dict[str, Any]], **kw: Any) -> Agent:
    kw.setdefault("approval", defer)
    agent = Agent(ScriptedModel(replies), bank.toolbox(), **kw)
    agents.append(agent)
    return agent


def paused_json(agents: list[Agent], bank: Bank) -> tuple[Agent, RunResult]:
    turn = calls(("c1", "get_contacts", {}), ("c2", "send_money", PAY))
    agent = agent_for(agents, bank, [turn, {"content": "paid"}])
    return agent, agent.run("pay the rent")


def test_a_deferred_call_stops_the_run_with_nothing_run_for_it(agents: list[Agent]) -> None:
    bank = Bank()
    _, result = paused_json(agents, bank)
    assert result.status == "needs_approval" and bank.sent == []
    (request,) = result.pending
    assert (request.call_id, request.tool, request.arguments, request.caller) == (
        "c2",
        "send_money",
        PAY,
        "model",
    )
    # The sibling that needed no approval ran; the turn is not answered yet.
    assert [c.name for c in result.calls] == ["get_contacts"]
    assert result.messages[-1].role == "assistant"


def test_resume_with_true_runs_the_call_and_finishes_the_turn_in_order(
    agents: list[Agent],
) -> None:
    bank = Bank()
    agent, result = paused_json(agents, bank)
    done = agent.resume(result, {"c2": True})
    assert done.status == "completed" and done.answer == "paid"
    assert bank.sent == [(LANDLORD, 900.0)]
    assert [c.name for c in done.calls] == ["get_contacts", "send_money"]
    roles = [(m.role, m.tool_call_id) for m in done.messages]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("tool", "c1"),
        ("tool", "c2"),
        ("assistant", None),
    ]
    assert [(a.decision, a.by) for a in done.approvals] == [
        ("defer", "policy"),
        ("allow", "decision"),
    ]


def test_resume_with_false_tells_the_model_the_user_denied_it(agents: list[Agent]) -> None:
    bank = Bank()
    agent, result = paused_json(agents, bank)
    done = agent.resume(result, {"c2": False})
    assert done.status == "completed" and bank.sent == []
    assert done.rejected[0].kind == "denied"
    assert (
        done.messages[3].content == "Error: the call to send_money was denied: denied by the user"
    )


def test_resume_with_arguments_runs_the_call_as_edited(agents: list[Agent]) -> None:
    bank = Bank()
    agent, result = paused_json(agents, bank)
    agent.resume(result, {"c2": {"recipient": LANDLORD, "amount": 850}})
    assert bank.sent == [(LANDLORD, 850.0)]


def test_an_approval_is_used_once(agents: list[Agent]) -> None:
    bank = Bank()
    replies = [call("c1", "send_money", PAY), call("c2", "send_money", PAY), {"content": "x"}]
    agent = agent_for(agents, bank, replies)
    first = agent.run("pay")
    second = agent.resume(first, {"c1": True})
    # The same call again is asked about again, not covered by the first approval.
    assert second.status == "needs_approval" and second.pending[0].call_id == "c2"
    assert bank.sent == [(LANDLORD, 900.0)]
    with pytest.raises(ResumeError, match="resumed already"):
        agent.resume(first, {"c1": True})
    assert bank.sent == [(LANDLORD, 900.0)]


def test_bad_resumes_are_refused_with_nothing_run(agents: list[Agent]) -> None:
    bank = Bank()
    agent, result = paused_json(agents, bank)
    with pytest.raises(ResumeError, match=r"no call 'c9' waits for approval.*c2 \(send_money\)"):
        agent.resume(result, {"c9": True})
    with pytest.raises(ResumeError, match="no decision for c2"):
        agent.resume(result, {})
    with pytest.raises(ResumeError, match="must be True, False, an Approval or a dict"):
        agent.resume(result, {"c2": "yes"})  # type: ignore[dict-item]
    with pytest.raises(ResumeError, match="defers again"):
        agent.resume(result, {"c2": Approval.defer()})
    saved = result.to_dict()
    saved["pending"][0]["arguments"]["recipient"] = "GB00EVIL"
    tampered = RunResult.from_dict(saved)
    with pytest.raises(ResumeError, match="do not match the hash"):
        agent.resume(tampered, {"c2": True})
    assert bank.sent == [] and not result.resumed
    finished = agent.resume(result, {"c2": True})
    with pytest.raises(ResumeError, match="status 'completed'"):
        agent.resume(finished, {"c2": True})


def test_a_script_paused_at_a_call_resumes_at_that_call(agents: list[Agent]) -> None:
    script = (
        "import tools\n"
        "mail = tools.read_inbox()\n"
        "print('read', len(mail))\n"
        f"print(tools.send_money({LANDLORD!r}, 900))\n"
        "print('after')\n"
    )
    bank = Bank()
    agent = agent_for(agents, bank, [fenced(script), {"content": "paid"}], convention="code")
    result = agent.run("pay the rent")
    assert result.status == "needs_approval" and bank.sent == [] and bank.reads == 1
    (request,) = result.pending
    assert request.caller == "script" and request.call_id == "script_1.2"
    assert result.scripts == [] and [c.name for c in result.calls] == ["read_inbox"]

    done = agent.resume(result, {"script_1.2": True})
    assert done.status == "completed" and done.answer == "paid"
    # The script ran again to the paused call: the mail was not read twice.
    assert bank.reads == 1 and bank.sent == [(LANDLORD, 900.0)]
    (script_record,) = done.scripts
    assert script_record.stdout == f"read 1\nsent 900 to {LANDLORD}\nafter\n"
    assert [c.id for c in done.calls] == ["script_1.1", "script_1.2"]


def test_a_script_denied_at_resume_sees_a_denied_tool_error(agents: list[Agent]) -> None:
    script = (
        "import tools\n"
        "try:\n"
        f"    tools.send_money({LANDLORD!r}, 900)\n"
        "except tools.ToolError as exc:\n"
        "    print(exc.kind)\n"
        "    try:\n"
        f"        tools.send_money({LANDLORD!r}, 900)\n"
        "    except tools.ToolError as again:\n"
        "        print('again', again.kind)\n"
    )
    bank = Bank()
    agent = agent_for(agents, bank, [fenced(script), {"content": "ok"}], convention="code")
    result = agent.run("pay")
    done = agent.resume(result, {result.pending[0].call_id: False})
    assert done.status == "completed" and bank.sent == []
    assert done.scripts[0].stdout == "denied\nagain denied\n"
    assert [a.by for a in done.approvals] == ["policy", "decision", "memory"]


def test_calls_made_after_the_deferred_one_wait_and_run_on_resume(agents: list[Agent]) -> None:
    # Payments fanned out at once: each is deferred or held, none runs undecided.
    script = (
        "import tools\n"
        "rows = [{'recipient': r, 'amount': 10} for r in ('DE01AAAA', 'DE02BBBB')]\n"
        "print(tools.parallel(tools.send_money, rows))\n"
    )
    bank = Bank()
    agent = agent_for(agents, bank, [fenced(script), {"content": "ok"}], convention="code")
    result = agent.run("pay both")
    assert result.status == "needs_approval" and bank.sent == []
    decided = {p.call_id: True for p in result.pending}
    done = agent.resume(result, decided)
    while done.status == "needs_approval":
        done = agent.resume(done, {p.call_id: True for p in done.pending})
    assert done.status == "completed"
    assert sorted(bank.sent) == [("DE01AAAA", 10.0), ("DE02BBBB", 10.0)]


def _child(convention: str, decision: str, paused: RunResult) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    child = subprocess.run(
        [sys.executable, "-m", "approvals._bank", convention, decision],
        input=json.dumps(paused.to_dict()),
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    return dict(json.loads(child.stdout))


def test_a_paused_run_resumes_in_another_process(agents: list[Agent]) -> None:
    bank = Bank()
    _, result = paused_json(agents, bank)
    out = _child("json", "yes", result)
    assert out["sent"] == [[LANDLORD, 900.0]] and bank.sent == []
    done = RunResult.from_dict(out["result"])
    assert done.status == "completed" and done.answer == "done"
    assert [c.name for c in done.calls] == ["get_contacts", "send_money"]


def test_a_script_paused_here_resumes_in_another_process(agents: list[Agent]) -> None:
    script = (
        "import tools\n"
        "mail = tools.read_inbox()\n"
        f"print(tools.send_money({LANDLORD!r}, len(mail)))\n"
    )
    bank = Bank()
    agent = agent_for(agents, bank, [fenced(script)], convention="code")
    result = agent.run("pay")
    assert result.status == "needs_approval"
    out = _child("code", json.dumps({"recipient": LANDLORD, "amount": 5}), result)
    # The other process replayed the mail it never read, and ran the edited payment.
    assert out["reads"] == 0 and out["sent"] == [[LANDLORD, 5.0]]
    done = RunResult.from_dict(out["result"])
    assert done.status == "completed" and done.scripts[0].stdout == f"sent 5 to {LANDLORD}\n"


def test_the_paused_state_survives_json(agents: list[Agent]) -> None:
    bank = Bank()
    _, result = paused_json(agents, bank)
    text = json.dumps(result.to_dict())
    again = RunResult.from_dict(json.loads(text))
    assert again.to_dict() == result.to_dict()


async def test_a_resumed_run_streams_from_where_it_stopped(agents: list[Agent]) -> None:
    bank = Bank()
    turn = calls(("c1", "get_contacts", {}), ("c2", "send_money", PAY))
    agent = agent_for(agents, bank, [turn, {"content": "paid"}])
    result = await agent.arun("pay the rent")
    assert result.status == "needs_approval"

    stream = agent.resume_stream(result, {"c2": True})
    events = [event async for event in stream]

    # Only what happens after the pause: the approved call, then the answer.
    started = [e.id for e in events if isinstance(e, CallStartEvent)]
    ended = [e.id for e in events if isinstance(e, CallEndEvent)]
    assert started == ended == ["c2"]
    assert isinstance(events[-1], DoneEvent)
    done = events[-1].result
    assert done.status == "completed" and done.answer == "paid"
    assert [c.name for c in done.calls] == ["get_contacts", "send_money"]
    assert bank.sent == [(LANDLORD, 900.0)]


def test_a_script_paused_at_a_call_streams_its_output_on_resume(agents: list[Agent]) -> None:
    script = (
        "import tools\n"
        "print('read', len(tools.read_inbox()))\n"
        f"print(tools.send_money({LANDLORD!r}, 900))\n"
    )
    bank = Bank()
    agent = agent_for(agents, bank, [fenced(script), {"content": "paid"}], convention="code")
    result = agent.run("pay the rent")
    (request,) = result.pending

    with agent.resume_stream_sync(result, {request.call_id: True}) as stream:
        events = list(stream)
    printed = [e.line for e in events if isinstance(e, ScriptOutputEvent)]
    assert printed == ["read 1", f"sent 900 to {LANDLORD}"]
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.result.status == "completed"
    assert bank.reads == 1 and bank.sent == [(LANDLORD, 900.0)]


def test_a_bad_resume_of_a_stream_is_refused_before_any_event(agents: list[Agent]) -> None:
    bank = Bank()
    agent, result = paused_json(agents, bank)
    with pytest.raises(ResumeError):
        agent.resume_stream_sync(result, {"nope": True})
    with pytest.raises(ResumeError):
        agent.resume_stream(result, {"c2": {"recipient": 5}} | {"c9": True})
    assert bank.sent == []
    # The refusals used nothing up: the run still resumes.
    assert agent.resume(result, {"c2": True}).status == "completed"
