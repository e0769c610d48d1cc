"""Ending a run from outside: Ctrl-C under `Agent.run`, cancellation of `Agent.arun`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tooluse import Agent, RunResult, read_trace, tool
from tooluse.models import ScriptedModel

SRC = Path(__file__).resolve().parents[2] / "src"

# The host: an agent whose second call blocks until the run is over. It says
# when the call has started, and prints what `run` returned.
HOST = textwrap.dedent(
    """
    import json, signal, sys, threading
    # Ctrl-C as a terminal sends it: a shell that started this test in the background
    # (CI, nohup) may have left SIGINT ignored, and Python then keeps ignoring it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from tooluse import Agent, tool
    from tooluse.models import ScriptedModel

    released = threading.Event()

    @tool
    def note(text: str) -> str:
        '''Keep a note.

        Args:
            text: what to note
        '''
        return "noted"

    @tool
    def wait_for_operator() -> str:
        '''Wait until an operator answers.'''
        print("waiting", flush=True)
        released.wait()
        return "answered"

    def call(call_id, name, arguments):
        function = {"name": name, "arguments": json.dumps(arguments)}
        return {"tool_calls": [{"id": call_id, "type": "function", "function": function}]}

    model = ScriptedModel([
        call("c1", "note", {"text": "start"}),
        call("c2", "wait_for_operator", {}),
        {"content": "never reached"},
    ])
    agent = Agent(model, [note, wait_for_operator], trace=sys.argv[1])
    result = agent.run("Ask the operator.")
    released.set()
    print(json.dumps({
        "status": result.status,
        "error": result.error,
        "calls": [c.name for c in result.calls],
        "roles": [m.role for m in result.messages],
    }))
    """
)


def test_ctrl_c_on_the_host_ends_the_run_cancelled_and_returns_what_was_recorded(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "run.jsonl"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    host = subprocess.Popen(
        [sys.executable, "-c", HOST, str(trace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert host.stdout is not None
        assert host.stdout.readline() == "waiting\n"
        host.send_signal(signal.SIGINT)
        out, err = host.communicate(timeout=120)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()

    assert host.returncode == 0, err
    printed = json.loads(out.strip().splitlines()[-1])
    assert printed["status"] == "cancelled"
    assert printed["error"] == "the run was cancelled"
    # the call that finished is kept; the one cut short is not recorded
    assert printed["calls"] == ["note"]
    assert printed["roles"] == ["user", "assistant", "tool", "assistant"]
    events = list(read_trace(trace))
    assert [e["event"] for e in events if e["event"] in ("call", "run_end")] == [
        "call",
        "run_end",
    ]
    assert events[-1]["status"] == "cancelled"


@tool
def note(text: str) -> str:
    """Keep a note.

    Args:
        text: what to note
    """
    return "noted"


def waiting_agent(started: asyncio.Event, **options: Any) -> Agent:
    @tool
    async def wait_for_operator() -> str:
        """Wait until an operator answers."""
        started.set()
        await asyncio.Event().wait()
        return "answered"

    model = ScriptedModel(
        [
            {"tool_calls": [_call("c1", "note", {"text": "start"})]},
            {"tool_calls": [_call("c2", "wait_for_operator", {})]},
            {"content": "never reached"},
        ]
    )
    return Agent(model, [note, wait_for_operator], **options)


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def assert_partial(result: RunResult) -> None:
    assert result.status == "cancelled" and not result.ok
    assert [c.name for c in result.calls] == ["note"]
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]


async def test_cancelled_arun_propagates_and_carries_its_partial_result(tmp_path: Path) -> None:
    started = asyncio.Event()
    events: list[dict[str, Any]] = []
    agent = waiting_agent(started, trace=tmp_path / "run.jsonl", on_event=events.append)
    task = asyncio.create_task(agent.arun("Ask the operator."))
    await started.wait()

    task.cancel()
    with pytest.raises(asyncio.CancelledError) as raised:
        await task

    assert task.cancelled()
    assert_partial(raised.value.result)  # type: ignore[attr-defined]
    assert events[-1]["event"] == "run_end" and events[-1]["status"] == "cancelled"
    assert list(read_trace(tmp_path / "run.jsonl"))[-1]["status"] == "cancelled"


async def test_a_timeout_around_arun_still_raises_timeout_error() -> None:
    started = asyncio.Event()
    agent = waiting_agent(started)

    async def operator_gives_up() -> None:
        await started.wait()
        timeout.reschedule(asyncio.get_running_loop().time())

    giving_up = asyncio.create_task(operator_gives_up())
    with pytest.raises(TimeoutError) as raised:
        async with asyncio.timeout(None) as timeout:
            await agent.arun("Ask the operator.")
    await giving_up

    assert_partial(raised.value.__cause__.result)  # type: ignore[union-attr]
