"""Paused states written down: the current form, the one earlier releases wrote, and others."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tooluse import Agent, ApprovalStore, ResumeError, RunResult, UsageError
from tooluse.models import ScriptedModel

from ._bank import LANDLORD, Bank, calls, defer, fenced

DATA = Path(__file__).resolve().parents[1] / "data"
PAY = {"recipient": LANDLORD, "amount": 900}
PLAN = 'payees = get_contacts()\npaid = send_money(recipient=payees["landlord"], amount=900)'
SCRIPT = 'payees = get_contacts()\nprint(send_money(recipient=payees["landlord"], amount=900))'
#: Each shape of pause, the convention that makes it and the reply that does.
SHAPES = {
    "turn": ("json", calls(("c1", "get_contacts", {}), ("c2", "send_money", PAY))),
    "script": ("code", fenced(SCRIPT)),
    "plan": ("plan", fenced(PLAN)),
}


def saved(shape: str) -> dict[str, Any]:
    """A paused run as the release before the versioned form wrote it."""
    data: dict[str, Any] = json.loads((DATA / f"paused_{shape}_v0.json").read_text())
    return data


def agent_for(agents: list[Agent], bank: Bank, convention: str, *replies: Any) -> Agent:
    agent = Agent(
        ScriptedModel([*replies, {"content": "paid"}]),
        bank.toolbox(),
        convention=convention,
        approval=defer,
        approval_store=ApprovalStore(),
    )
    agents.append(agent)
    return agent


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_pause_written_by_the_earlier_release_resumes(agents: list[Agent], shape: str) -> None:
    bank = Bank()
    result = RunResult.from_dict(saved(shape))
    (request,) = result.pending
    done = agent_for(agents, bank, SHAPES[shape][0]).resume(result, {request.call_id: True})
    assert done.status == "completed" and done.answer == "paid"
    # The approved call ran once; the call that had ended before the pause did not run again.
    assert bank.sent == [(LANDLORD, 900)]
    assert sorted(c.name for c in done.calls) == ["get_contacts", "send_money"]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_is_tagged_and_its_written_form_resumes(agents: list[Agent], shape: str) -> None:
    convention, reply = SHAPES[shape]
    paused = agent_for(agents, Bank(), convention, reply).run("pay the rent")
    assert paused.paused is not None and paused.paused.kind == shape
    written = json.loads(json.dumps(paused.to_dict()))
    assert written["version"] == 1
    assert (written["paused"]["version"], written["paused"]["kind"]) == (1, shape)
    # A shape holds only its own fields: no flags telling the others apart.
    assert "plan" not in written["paused"]
    if shape != "script":
        assert "script_id" not in written["paused"] and "answered" not in written["paused"]

    bank = Bank()
    read = RunResult.from_dict(written)
    assert read.paused == paused.paused
    (request,) = read.pending
    done = agent_for(agents, bank, convention).resume(read, {request.call_id: True})
    assert done.status == "completed" and bank.sent == [(LANDLORD, 900)]


def test_a_pause_in_an_unknown_version_is_refused_by_name(agents: list[Agent]) -> None:
    data = saved("turn")
    data["paused"]["version"] = 7
    with pytest.raises(ResumeError) as refused:
        RunResult.from_dict(data)
    assert "version 7" in str(refused.value)
    assert "reads versions 0, 1" in str(refused.value)


def test_a_result_in_an_unknown_version_is_refused_by_name() -> None:
    data = saved("turn")
    data["version"] = 2
    with pytest.raises(UsageError) as refused:
        RunResult.from_dict(data)
    assert "version 2" in str(refused.value)


def test_a_pause_that_is_not_one_gets_one_clear_error() -> None:
    data = saved("turn")
    data["paused"] = {"version": 1, "kind": "turn", "task": "pay", "round": "soon"}
    with pytest.raises(ResumeError) as refused:
        RunResult.from_dict(data)
    assert "cannot be read" in str(refused.value) and "round" in str(refused.value)


def test_resume_leaves_the_result_it_was_given_unchanged(agents: list[Agent]) -> None:
    convention, reply = SHAPES["turn"]
    paused = agent_for(agents, Bank(), convention, reply).run("pay the rent")
    before = json.dumps(paused.to_dict(), sort_keys=True)
    agent = agent_for(agents, Bank(), convention)
    done = agent.resume(paused, {"c2": True})
    assert done.status == "completed"
    assert json.dumps(paused.to_dict(), sort_keys=True) == before
    assert paused.status == "needs_approval" and not paused.resumed


def test_a_paused_plan_resumed_by_an_agent_without_plans_ends_saying_so(
    agents: list[Agent],
) -> None:
    bank = Bank()
    result = RunResult.from_dict(saved("plan"))
    (request,) = result.pending
    done = agent_for(agents, bank, "json").resume(result, {request.call_id: True})
    assert done.status == "error" and bank.sent == []
    assert done.error is not None and "does not run plans" in done.error
