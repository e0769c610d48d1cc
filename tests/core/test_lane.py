"""The lane that runs a sync tool the dispatcher waits on: its handoffs held to one CPU,
and what the tool and the caller are left with."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

import pytest

from tooluse import Agent, tool
from tooluse.dispatch._threads import Abandoned, Ended, Lane, Pending, invoke
from tooluse.models import ScriptedModel

SEVERAL_CPUS = hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2


def never_handed_on() -> Pending:
    raise AssertionError("the call was handed on, but the wait was long enough")


@pytest.mark.skipif(not SEVERAL_CPUS, reason="holding threads to a CPU needs Linux and 2 CPUs")
def test_while_the_caller_waits_both_threads_are_held_to_its_cpu_and_the_tool_is_not() -> None:
    caller = threading.get_native_id()
    usual = os.sched_getaffinity(0)
    seen: dict[str, Any] = {}

    def job() -> Ended:
        seen["caller"] = os.sched_getaffinity(caller)
        seen["tool"] = os.sched_getaffinity(0)
        return 1, None

    lane = Lane()
    try:
        # The lane's thread reports its id once it runs: the first call may go unheld.
        for _ in range(50):
            assert lane.run(job, 30.0, never_handed_on) == (1, None)
            if len(seen["caller"]) == 1:
                break
        assert len(seen["caller"]) == 1, "the caller was never held to one CPU"
        assert seen["tool"] == usual  # threads and processes the tool starts inherit these
        assert os.sched_getaffinity(0) == usual  # the caller's own, put back
    finally:
        lane.close()


@pytest.mark.skipif(not SEVERAL_CPUS, reason="holding threads to a CPU needs Linux and 2 CPUs")
def test_a_call_handed_on_gives_the_caller_its_cpus_back_at_once() -> None:
    usual = os.sched_getaffinity(0)
    release = threading.Event()
    after: list[set[int]] = []

    async def main() -> Ended:
        loop = asyncio.get_running_loop()
        lane = Lane()
        try:
            lane.run(lambda: (None, None), 30.0, never_handed_on)  # the lane's thread is up
            ended = lane.run(
                lambda: invoke(release.wait, {"timeout": 30}),
                0.001,
                lambda: Pending(loop, Abandoned(), "slow"),
            )
            assert isinstance(ended, Pending)
            after.append(os.sched_getaffinity(0))  # while the tool still runs
            release.set()
            result = await ended.wait(30)
            assert result == (True, None)
            return result
        finally:
            lane.close()

    asyncio.run(main())
    assert after == [usual]
    assert os.sched_getaffinity(0) == usual


def test_a_sync_tool_in_a_run_sees_the_processes_usual_cpus() -> None:
    usual = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []

    @tool
    def cpus() -> list[int]:
        """The CPUs this tool may run on."""
        return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []

    call = {"id": "c1", "type": "function", "function": {"name": "cpus", "arguments": "{}"}}
    replies: list[dict[str, Any] | str] = [{"tool_calls": [call]}] * 3 + ["done"]
    result = Agent(ScriptedModel(replies), [cpus], max_rounds=5).run("Which CPUs?")
    assert result.status == "completed"
    assert [c.result for c in result.calls] == [usual] * 3
    if hasattr(os, "sched_getaffinity"):
        assert sorted(os.sched_getaffinity(0)) == usual
