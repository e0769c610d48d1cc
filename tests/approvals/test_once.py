"""An approval is used once: no copy of a paused state, here or elsewhere, runs it twice."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tooluse import (
    Agent,
    AlreadyResumedError,
    ApprovalStore,
    ResumeError,
    RunResult,
    UsageError,
)
from tooluse.models import ScriptedModel

from ._bank import LANDLORD, Bank, call, defer, fenced

ROOT = Path(__file__).resolve().parents[2]
PAY = {"recipient": LANDLORD, "amount": 900}


def paused_run(agents: list[Agent], bank: Bank, **kw: Any) -> tuple[Agent, RunResult]:
    """An agent whose run stopped at a payment, and the paused result."""
    replies = [call("c1", "send_money", PAY), {"content": "paid"}]
    agent = Agent(ScriptedModel(replies), bank.toolbox(), approval=defer, **kw)
    agents.append(agent)
    result = agent.run("pay the rent")
    assert result.status == "needs_approval"
    return agent, result


def read_back(result: RunResult) -> RunResult:
    return RunResult.from_dict(json.loads(json.dumps(result.to_dict())))


def test_the_same_saved_state_read_back_twice_pays_once(agents: list[Agent]) -> None:
    bank = Bank()
    agent, result = paused_run(agents, bank)
    saved = result.to_dict()
    done = agent.resume(RunResult.from_dict(saved), {"c1": True})
    assert done.status == "completed" and bank.sent == [(LANDLORD, 900.0)]
    with pytest.raises(AlreadyResumedError, match="resumed already"):
        agent.resume(RunResult.from_dict(saved), {"c1": True})
    assert bank.sent == [(LANDLORD, 900.0)]


COPIES: dict[str, Callable[[RunResult], RunResult]] = {
    "deepcopy": copy.deepcopy,
    "to_dict/from_dict": lambda r: RunResult.from_dict(r.to_dict()),
    "json": read_back,
}


@pytest.mark.parametrize("how", sorted(COPIES))
def test_a_copy_and_its_original_resume_once_whichever_goes_first(
    agents: list[Agent], how: str
) -> None:
    make = COPIES[how]
    bank = Bank()
    agent, result = paused_run(agents, bank)
    agent.resume(make(result), {"c1": True})
    with pytest.raises(AlreadyResumedError):
        agent.resume(result, {"c1": True})
    bank = Bank()
    agent, result = paused_run(agents, bank)
    twin = make(result)
    agent.resume(result, {"c1": True})
    with pytest.raises(AlreadyResumedError):
        agent.resume(twin, {"c1": True})
    assert bank.sent == [(LANDLORD, 900.0)]


def test_another_agent_in_the_same_process_refuses_a_used_state(agents: list[Agent]) -> None:
    # A service that builds an agent per request still pays once.
    bank = Bank()
    agent, result = paused_run(agents, bank)
    saved = json.dumps(result.to_dict())
    agent.resume(RunResult.from_dict(json.loads(saved)), {"c1": True})
    other = Agent(ScriptedModel([{"content": "paid"}]), bank.toolbox(), approval=defer)
    agents.append(other)
    with pytest.raises(AlreadyResumedError):
        other.resume(RunResult.from_dict(json.loads(saved)), {"c1": True})
    assert bank.sent == [(LANDLORD, 900.0)]


@pytest.mark.parametrize("driver", ["resume", "aresume", "resume_stream_sync"])
def test_every_way_to_resume_refuses_a_used_state(agents: list[Agent], driver: str) -> None:
    bank = Bank()
    agent, result = paused_run(agents, bank)
    twin = read_back(result)
    agent.resume(result, {"c1": True})
    drivers: dict[str, Callable[[], object]] = {
        "resume": lambda: agent.resume(twin, {"c1": True}),
        "aresume": lambda: asyncio.run(agent.aresume(twin, {"c1": True})),
        "resume_stream_sync": lambda: agent.resume_stream_sync(twin, {"c1": True}),
    }
    with pytest.raises(AlreadyResumedError):
        drivers[driver]()
    assert bank.sent == [(LANDLORD, 900.0)]


def test_a_state_resumed_already_is_refused_and_the_one_after_it_resumes(
    agents: list[Agent],
) -> None:
    bank = Bank()
    replies = [call("c1", "send_money", PAY), call("c2", "send_money", PAY), {"content": "x"}]
    agent = Agent(ScriptedModel(replies), bank.toolbox(), approval=defer)
    agents.append(agent)
    first = agent.run("pay twice")
    saved_first = read_back(first)
    second = agent.resume(first, {"c1": True})
    assert second.status == "needs_approval"
    with pytest.raises(AlreadyResumedError):
        agent.resume(saved_first, {"c1": True})
    # The pause the resumed run reached is a new one, resumable once.
    assert second.paused is not None and first.paused is not None
    assert second.paused.id != first.paused.id
    saved_second = read_back(second)
    assert agent.resume(second, {"c2": True}).status == "completed"
    with pytest.raises(AlreadyResumedError):
        agent.resume(saved_second, {"c2": True})
    assert bank.sent == [(LANDLORD, 900.0), (LANDLORD, 900.0)]


def test_a_paused_script_resumes_once(agents: list[Agent]) -> None:
    script = f"import tools\nprint(tools.send_money({LANDLORD!r}, 900))\n"
    bank = Bank()
    agent = Agent(
        ScriptedModel([fenced(script), {"content": "paid"}]),
        bank.toolbox(),
        convention="code",
        approval=defer,
    )
    agents.append(agent)
    result = agent.run("pay")
    decided = {p.call_id: True for p in result.pending}
    twin = read_back(result)
    assert agent.resume(result, decided).status == "completed"
    with pytest.raises(AlreadyResumedError):
        agent.resume(twin, decided)
    assert bank.sent == [(LANDLORD, 900.0)]


def test_a_state_saved_without_a_pause_id_resumes_once(agents: list[Agent]) -> None:
    # A state written before pauses had ids: its copies still share one identity.
    bank = Bank()
    agent, result = paused_run(agents, bank)
    saved = result.to_dict()
    del saved["paused"]["id"]
    saved["paused"]["task"] = saved["paused"]["task"] + " (saved by an older version)"
    agent.resume(RunResult.from_dict(copy.deepcopy(saved)), {"c1": True})
    with pytest.raises(AlreadyResumedError):
        agent.resume(RunResult.from_dict(copy.deepcopy(saved)), {"c1": True})
    assert bank.sent == [(LANDLORD, 900.0)]


def test_a_refused_resume_loses_nothing(agents: list[Agent], tmp_path: Path) -> None:
    store = tmp_path / "approvals.db"
    bank = Bank()
    agent, result = paused_run(agents, bank, approval_store=store)
    twin = read_back(result)
    # Decisions that do not fit are refused without using the pause up.
    with pytest.raises(ResumeError, match="no decision for c1"):
        agent.resume(twin, {})
    done = agent.resume(twin, {"c1": True})
    before = done.to_dict()
    with pytest.raises(AlreadyResumedError) as refused:
        agent.resume(result, {"c1": True})
    # One clear error naming the pause and when it was used; the run that used it is whole.
    assert result.paused is not None and result.paused.id in str(refused.value)
    assert "each approval is used once" in str(refused.value)
    assert done.to_dict() == before and done.status == "completed"
    assert not result.resumed and result.status == "needs_approval"
    assert bank.sent == [(LANDLORD, 900.0)]
    # The store still holds the resume, for the next process to see.
    with ApprovalStore(store) as shared:
        assert shared.resumed(result.paused.id) is not None


def test_a_store_file_that_cannot_be_one_is_refused_at_once(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database, " * 100)
    with pytest.raises(UsageError, match=r"junk\.db"):
        ApprovalStore(junk)
    with pytest.raises(UsageError, match="missing"):
        ApprovalStore(tmp_path / "missing" / "approvals.db")
    # A file that is a database of something else: its own tables are left alone.
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
        db.execute("INSERT INTO notes VALUES ('kept')")
    ApprovalStore(other).close()
    with sqlite3.connect(other) as db:
        assert db.execute("SELECT text FROM notes").fetchall() == [("kept",)]


def _resumer(saved: Path, store: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    return subprocess.Popen(
        [sys.executable, "-m", "approvals._resumer", str(saved), str(store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def test_processes_sharing_a_store_resume_a_saved_state_once(
    agents: list[Agent], tmp_path: Path
) -> None:
    store = tmp_path / "approvals.db"
    bank = Bank()
    agent, result = paused_run(agents, bank, approval_store=store)
    saved = tmp_path / "paused.json"
    saved.write_text(json.dumps(result.to_dict()))
    # Two processes given the same saved state at once: one pays, the other is refused.
    children = [_resumer(saved, store), _resumer(saved, store)]
    outs = []
    for child in children:
        stdout, stderr = child.communicate(timeout=120)
        assert child.returncode == 0, stderr
        outs.append(json.loads(stdout))
    paid = [o for o in outs if "status" in o]
    refused = [o for o in outs if "refused" in o]
    assert len(paid) == 1 and len(refused) == 1
    assert paid[0] == {"sent": [[LANDLORD, 900.0]], "status": "completed"}
    assert refused[0]["sent"] == [] and "resumed already" in refused[0]["refused"]
    # And this process, sharing the file, is refused too.
    with pytest.raises(AlreadyResumedError):
        agent.resume(RunResult.from_dict(json.loads(saved.read_text())), {"c1": True})
    assert bank.sent == []
