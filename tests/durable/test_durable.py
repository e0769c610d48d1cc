"""Durable runs in the fast tier: an id's result kept, a kill recovered, `tooluse runs`,
and one clear error for each bad input, with nothing recorded lost."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tooluse.durable import (
    DurableStoreError,
    NotPendingError,
    UnknownRunError,
    approve,
    list_runs,
    show_run,
)

from ._children import ENV, Child, executions

EACH_ONCE = {"lookup:a": 1, "lookup:bb": 1, "lookup:ccc": 1, "send:bob": 1}


def url(work: Path) -> str:
    return f"sqlite:///{work / 'runs.sqlite'}"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from tooluse.cli import main; main()", *args],
        env={**ENV, "COLUMNS": "400", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


def test_a_killed_run_is_finished_by_the_next_process_and_an_ended_id_keeps_its_result(
    tmp_path: Path,
) -> None:
    first = Child(tmp_path, "first", url=url(tmp_path), run_id="r", convention="json",
                  block="lookup:bb")  # fmt: skip
    assert first.until("AT ") == "AT lookup:bb"
    first.kill()
    shown = cli("runs", "show", "r", "--db", url(tmp_path))
    assert shown.returncode == 0, shown.stderr
    assert "run r: PENDING" in shown.stdout
    assert "lookup({'key': 'a'}) -> 10" in shown.stdout  # the call that ended is recorded
    again = Child(tmp_path, "again", url=url(tmp_path), run_id="r", convention="json").result()
    assert again["answer"] == "done after 4 calls"
    assert Counter(executions(tmp_path)) == {**EACH_ONCE, "lookup:bb": 2}
    # The id of an ended run gives its result: nothing is asked or run again.
    third = Child(tmp_path, "third", url=url(tmp_path), run_id="r", convention="json").result()
    assert third == again
    assert Counter(executions(tmp_path)) == {**EACH_ONCE, "lookup:bb": 2}
    [run] = list_runs(url(tmp_path))
    assert (run.id, run.status, run.answer) == ("r", "SUCCESS", "done after 4 calls")
    listed = cli("runs", "list", "--db", url(tmp_path))
    assert listed.stdout.split() == ["r", "SUCCESS", "local", "done", "after", "4", "calls"]


def test_a_run_started_with_other_tools_is_refused_and_kept(tmp_path: Path) -> None:
    first = Child(tmp_path, "first", url=url(tmp_path), run_id="r", convention="json",
                  block="lookup:bb")  # fmt: skip
    first.until("AT ")
    first.kill()
    changed = Child(tmp_path, "changed", url=url(tmp_path), run_id="r", convention="json",
                    changed_tools=True)  # fmt: skip
    changed.proc.wait()
    assert changed.proc.returncode != 0
    error = changed.stderr.read_text().strip().splitlines()[-1]
    assert error.startswith("tooluse._exceptions.RunVersionError: run 'r' was started by an")
    assert executions(tmp_path) == ["lookup:a", "lookup:bb"]  # the changed agent ran nothing
    assert show_run("r", url(tmp_path)).status == "PENDING"
    again = Child(tmp_path, "again", url=url(tmp_path), run_id="r", convention="json").result()
    assert again["answer"] == "done after 4 calls"


def test_an_unknown_run_and_a_call_not_pending_get_one_clear_error(tmp_path: Path) -> None:
    Child(tmp_path, "run", url=url(tmp_path), run_id="r", convention="json").result()
    with pytest.raises(UnknownRunError, match="no durable run 'nope'"):
        show_run("nope", url(tmp_path))
    with pytest.raises(UnknownRunError, match="no durable run 'nope'"):
        approve("nope", "c9", allow=True, url=url(tmp_path))
    with pytest.raises(NotPendingError, match="no call 'c9' of run 'r' waits for a decision"):
        approve("r", "c9", allow=True, url=url(tmp_path))
    proc = cli("runs", "approve", "r", "c9", "--deny", "--db", url(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: no call 'c9' of run 'r' waits for a decision; those that do: none"
    ]
    proc = cli("runs", "show", "nope", "--db", url(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: no durable run 'nope' in {url(tmp_path)}"


def test_a_database_that_cannot_be_opened_is_one_error(tmp_path: Path) -> None:
    missing = f"sqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'runs.sqlite'}"
    with pytest.raises(DurableStoreError, match="no database of durable runs at"):
        list_runs(missing)
    proc = python(
        "from tooluse import Agent\nfrom tooluse.durable import DurableStoreError\n"
        "from tooluse.models import ScriptedModel\n"
        "try:\n"
        f"    Agent(ScriptedModel(['hi']), durable={missing!r})\n"
        "except DurableStoreError as exc:\n"
        "    print(exc)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"the database of durable runs at {missing} cannot be used: ")


def test_a_postgres_that_is_down_is_one_error() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = f"postgresql://tooluse:secret@127.0.0.1:{port}/runs"
    with pytest.raises(DurableStoreError) as raised:
        list_runs(down)
    assert "secret" not in str(raised.value)
    proc = python(
        "from tooluse import Agent\nfrom tooluse.durable import DurableStoreError\n"
        "from tooluse.models import ScriptedModel\n"
        "try:\n"
        f"    Agent(ScriptedModel(['hi']), durable={down!r})\n"
        "except DurableStoreError as exc:\n"
        "    print(exc)\n"
    )
    assert proc.returncode == 0, proc.stderr
    shown = f"postgresql://tooluse:***@127.0.0.1:{port}/runs"
    assert proc.stdout.startswith(f"the database of durable runs at {shown} cannot be used: ")


def test_a_database_of_a_newer_schema_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    Child(tmp_path, "run", url=url(tmp_path), run_id="r", convention="json").result()
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:
        db.execute("UPDATE dbos_migrations SET version = version + 100")
    with pytest.raises(DurableStoreError, match="written by a newer release of DBOS"):
        list_runs(url(tmp_path))
    proc = python(
        "from tooluse import Agent\nfrom tooluse.durable import DurableStoreError\n"
        "from tooluse.models import ScriptedModel\n"
        "try:\n"
        f"    Agent(ScriptedModel(['hi']), durable={url(tmp_path)!r})\n"
        "except DurableStoreError as exc:\n"
        "    print(exc)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert "written by a newer release of DBOS" in proc.stdout
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:
        [(status,)] = db.execute("SELECT status FROM workflow_status WHERE workflow_uuid = 'r'")
    assert status == "SUCCESS"  # nothing recorded was touched


def test_the_agent_s_start_recovers_its_worker_s_pending_runs(tmp_path: Path) -> None:
    first = Child(tmp_path, "first", url=url(tmp_path), run_id="r", convention="json",
                  block="lookup:ccc")  # fmt: skip
    first.until("AT ")
    first.kill()
    # This process only makes the agent and waits: the run goes on because DBOS's launch
    # recovered it.
    again = Child(tmp_path, "again", url=url(tmp_path), run_id="r", convention="json",
                  only_wait=True)  # fmt: skip
    assert again.result() == {"answer": "done after 4 calls", "status": "completed"}
    assert Counter(executions(tmp_path)) == {**EACH_ONCE, "lookup:ccc": 2}


def test_a_recovered_run_that_asks_for_another_call_is_stopped_not_answered(
    tmp_path: Path,
) -> None:
    first = Child(tmp_path, "first", url=url(tmp_path), run_id="r", convention="json",
                  block="model:4")  # fmt: skip
    first.until("AT ")
    first.kill()
    assert Counter(executions(tmp_path)) == EACH_ONCE
    # The policy now edits the recorded send(amount=60) into send(amount=61): the record
    # at that place holds another call, so the run stops there instead of answering it.
    again = Child(tmp_path, "again", url=url(tmp_path), run_id="r", convention="json",
                  edit=True).result()  # fmt: skip
    assert again["status"] == "error"
    assert again["error"].startswith("RunDivergedError: run 'r' recorded another call")
    assert Counter(executions(tmp_path)) == EACH_ONCE


def test_a_durable_run_gives_its_output_typed_and_so_does_its_id_later(tmp_path: Path) -> None:
    code = f"""
import json
from pydantic import BaseModel
from tooluse import Agent
from tooluse.models import ScriptedModel

class Count(BaseModel):
    n: int

final = {{"id": "c1", "type": "function",
          "function": {{"name": "final_result", "arguments": json.dumps({{"n": 3}})}}}}
with Agent(ScriptedModel([{{"tool_calls": [final]}}]), durable={url(tmp_path)!r}) as agent:
    for _ in range(2):  # the second time, the id's recorded result: the model is not asked
        result = agent.run("count", run_id="typed", output_type=Count)
        print(result.status, type(result.output).__name__, result.output.n)
"""
    done = python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["completed Count 3", "completed Count 3"]


def test_tooluse_runs_recover_takes_over_a_dead_workers_run(tmp_path: Path) -> None:
    first = Child(tmp_path, "first", url=url(tmp_path), worker="w1", run_id="r",
                  convention="json", block="lookup:bb")  # fmt: skip
    assert first.until("AT ") == "AT lookup:bb"
    first.kill()
    # The recovering process makes the same agent through the driver's factory.
    config = tmp_path / "recover.json"
    config.write_text(json.dumps({"work": str(tmp_path), "url": "unused", "convention": "json"}))
    env = {**ENV, "PYTHONPATH": f"{ENV['PYTHONPATH']}:{Path(__file__).parent}"}
    proc = subprocess.run(
        [sys.executable, "-c", "from tooluse.cli import main; main()", "runs", "recover",
         "driver:make", "--worker", "w1", "--db", url(tmp_path), "--as", "w2"],
        env={**env, "DRIVER_CONFIG": str(config), "COLUMNS": "400", "NO_COLOR": "1"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == ["took over 1 run(s): r", "r: completed: done after 4 calls"]
    # The read call that never ended ran again; the calls that ended did not.
    assert Counter(executions(tmp_path)) == {**EACH_ONCE, "lookup:bb": 2}
    [run] = list_runs(url(tmp_path))
    assert (run.id, run.status, run.worker) == ("r", "SUCCESS", "w2")


def test_tooluse_runs_recover_refuses_what_is_not_an_agent_factory(tmp_path: Path) -> None:
    proc = cli("runs", "recover", "json:__name__", "--db", url(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: json:__name__ is a str: name a function that makes")
    proc = cli("runs", "recover", "builtins:repr", "--db", url(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: builtins:repr made a str, not an Agent with durable=")
    assert not (tmp_path / "runs.sqlite").exists()  # nothing was opened


class Together(Child):
    """`together.py`: a run whose two calls must run side by side."""

    driver = Path(__file__).with_name("together.py")


@pytest.mark.parametrize("convention", ["json", "plan"])
def test_calls_made_together_run_side_by_side_and_recover_in_their_places(
    tmp_path: Path, convention: str
) -> None:
    # Run one after the other, wait_for would wait for a release that comes after it.
    reference = Together(tmp_path / "ref", "run", url=url(tmp_path / "ref"), convention=convention)
    expected = reference.result()
    assert expected["status"] == "completed"
    assert [c[:2] for c in expected["calls"]] == [["wait_for", "met"], ["release", "released"]]
    # Killed after both ended, the run is recovered with both answered from the record.
    first = Together(tmp_path, "first", url=url(tmp_path), convention=convention, block=True)
    assert first.until("AT ") == "AT model"
    first.kill()
    again = Together(tmp_path, "again", url=url(tmp_path), convention=convention).result()
    assert again == expected
    assert Counter(executions(tmp_path)) == {"wait_for": 1, "release": 1}
