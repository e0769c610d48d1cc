"""The kill matrix: a durable run's process is SIGKILLed at each point, and started again.

The driver stops at the point named (a tool or the model prints ``AT point`` and blocks
on a fifo), the test kills it there, and a second process with the same agent and run
id finishes the run: with the answer a run never killed gives, and with no call that
ended executed again (every execution is counted in a file). A write call caught
mid-way is in doubt: it waits for a person's decision and is not run again unasked.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tooluse.durable import approve, show_run

from ._children import Child, executions

CONVENTIONS = ["json", "code", "plan"]
EACH_ONCE = {"lookup:a": 1, "lookup:bb": 1, "lookup:ccc": 1, "send:bob": 1}


def url(work: Path) -> str:
    return f"sqlite:///{work / 'runs.sqlite'}"


_REFERENCE: dict[str, dict[str, Any]] = {}


def reference(tmp_path_factory: pytest.TempPathFactory, convention: str) -> dict[str, Any]:
    """The result of the same run never killed."""
    if convention not in _REFERENCE:
        work = tmp_path_factory.mktemp(f"reference-{convention}")
        child = Child(work, "run", url=url(work), run_id="r", convention=convention)
        _REFERENCE[convention] = child.result()
        assert Counter(executions(work)) == EACH_ONCE
    return _REFERENCE[convention]


def killed_at(
    work: Path, point: str, convention: str, *, after: tuple[str, ...] = (), **config: Any
) -> None:
    """Kill the run at ``point``, once the calls named in ``after`` are recorded as ended."""
    child = Child(work, "first", url=url(work), run_id="r", convention=convention, block=point,
                  **config)  # fmt: skip
    assert child.until("AT ") == f"AT {point}"
    give_up = time.monotonic() + 120  # a bound on a hang, not a measure of speed
    while not all(recorded(work, call) for call in after):
        if time.monotonic() > give_up:
            child.kill()
            raise AssertionError(f"{after} never recorded as ended while {point} waited")
        time.sleep(0.05)  # polling the database, not waiting a fixed time
    child.kill()


def recorded(work: Path, call: str) -> bool:
    """Whether the run's record holds ``call`` (e.g. ``lookup({'key': 'a'})``) as ended."""
    steps = show_run("r", url(work)).steps
    return any(s.kind == "call" and s.ended and s.summary.startswith(call) for s in steps)


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_killed_during_a_model_request(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, convention: str
) -> None:
    expected = reference(tmp_path_factory, convention)
    killed_at(tmp_path, "model:1", convention)
    before = Counter(executions(tmp_path))
    assert before  # the run had executed calls before its second model request
    result = Child(tmp_path, "again", url=url(tmp_path), run_id="r", convention=convention).result()
    assert result == expected
    assert Counter(executions(tmp_path)) == EACH_ONCE


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_killed_in_the_middle_of_a_read_call(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, convention: str
) -> None:
    # For the code convention this is the middle of the script's loop of calls.
    expected = reference(tmp_path_factory, convention)
    # The plan's three lookups run side by side: it is killed once the two beside
    # lookup:bb have ended and been recorded.
    beside = ("lookup({'key': 'a'})", "lookup({'key': 'ccc'})") if convention == "plan" else ()
    killed_at(tmp_path, "lookup:bb", convention, after=beside)
    result = Child(tmp_path, "again", url=url(tmp_path), run_id="r", convention=convention).result()
    assert result == expected
    # The read call that never ended ran again; the ones that ended did not.
    assert Counter(executions(tmp_path)) == {**EACH_ONCE, "lookup:bb": 2}


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_a_write_call_killed_mid_way_is_in_doubt_and_not_run_again(
    tmp_path: Path, convention: str
) -> None:
    # No approval policy: the default asks a person about a call in doubt.
    killed_at(tmp_path, "send-after:bob", convention, policy=False)
    assert Counter(executions(tmp_path)) == EACH_ONCE
    again = Child(tmp_path, "again", url=url(tmp_path), run_id="r", convention=convention,
                  policy=False)  # fmt: skip
    _, call_id, in_doubt = again.until("PENDING ").split()
    assert in_doubt == "True"
    shown = show_run("r", url(tmp_path))
    assert shown.status == "PENDING"
    assert shown.pending[call_id]["in_doubt"] is True
    assert shown.pending[call_id]["tool"] == "send"
    approve("r", call_id, allow=False, url=url(tmp_path))
    result = again.result()
    assert result["status"] == "completed"
    assert [r[0] for r in result["rejected"]] == ["send"]
    assert "denied by the user" in result["rejected"][0][1]
    assert Counter(executions(tmp_path)) == EACH_ONCE  # never sent twice


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_killed_while_waiting_for_an_approval(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, convention: str
) -> None:
    expected = reference(tmp_path_factory, convention)
    first = Child(tmp_path, "first", url=url(tmp_path), run_id="r", convention=convention,
                  ask=True)  # fmt: skip
    _, call_id, in_doubt = first.until("PENDING ").split()
    assert in_doubt == "False"
    first.kill()
    assert show_run("r", url(tmp_path)).pending[call_id]["tool"] == "send"
    again = Child(tmp_path, "again", url=url(tmp_path), run_id="r", convention=convention,
                  ask=True)  # fmt: skip
    assert again.until("PENDING ").split()[1] == call_id
    approve("r", call_id, allow=True, url=url(tmp_path))
    assert again.result() == expected
    assert Counter(executions(tmp_path)) == EACH_ONCE


def test_a_scripts_call_waiting_for_approval_pauses_the_script_not_bounded_by_its_timeout(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    expected = reference(tmp_path_factory, "code")
    # A script timeout far shorter than a person takes: the wait is the run's, not the
    # script's, so it does not count.
    first = Child(tmp_path, "first", url=url(tmp_path), run_id="r", convention="code",
                  ask=True, script_timeout=1)  # fmt: skip
    # The script has ended, paused at the call, before the call is published as pending.
    assert first.until("SCRIPT ") == "SCRIPT paused"
    _, call_id, _ = first.until("PENDING ").split()
    assert show_run("r", url(tmp_path)).pending[call_id]["tool"] == "send"
    approve("r", call_id, allow=True, url=url(tmp_path))
    # The script runs again: its lookups answered from the record, the send allowed.
    assert first.until("SCRIPT ") == "SCRIPT ok"
    assert first.result() == expected
    assert Counter(executions(tmp_path)) == EACH_ONCE


def test_a_paused_script_killed_while_it_waits_is_recovered_paused(tmp_path: Path) -> None:
    first = Child(tmp_path, "first", url=url(tmp_path), run_id="r", convention="code",
                  ask=True, script_timeout=1)  # fmt: skip
    assert first.until("SCRIPT ") == "SCRIPT paused"
    _, call_id, _ = first.until("PENDING ").split()
    first.kill()
    again = Child(tmp_path, "again", url=url(tmp_path), run_id="r", convention="code",
                  ask=True, script_timeout=1)  # fmt: skip
    assert again.until("PENDING ").split()[1] == call_id
    approve("r", call_id, allow=False, url=url(tmp_path))
    result = again.result()
    assert result["status"] == "completed"
    assert [r[0] for r in result["rejected"]] == ["send"]
    assert "denied by the user" in result["rejected"][0][1]
    # The lookups ran once, before the kill; the send never.
    assert Counter(executions(tmp_path)) == {"lookup:a": 1, "lookup:bb": 1, "lookup:ccc": 1}
