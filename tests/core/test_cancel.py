"""Ending a run from outside: Ctrl-C under `Agent.run`, cancellation of `Agent.arun`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from tooluse import Agent, Limits, RunResult, read_trace, tool
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


# The host again, but the Ctrl-C lands on the tool's thread, as the kernel may hand a
# process's signal to any of its threads, once the main thread sleeps in the event loop's
# wait for I/O (its kernel wait channel says so). The tool then waits to be released,
# which the host does only once `run` has returned.
HOST_OTHER_THREAD = textwrap.dedent(
    """
    import json, signal, sys, threading
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from tooluse import Agent, tool
    from tooluse.models import ScriptedModel

    released = threading.Event()
    waited = []
    done = threading.Event()

    @tool
    def wait_for_operator() -> str:
        '''Wait until an operator answers.'''
        # Bounded: where the kernel names its waits otherwise, the signal goes anyway.
        wchan = f"/proc/self/task/{threading.main_thread().native_id}/wchan"
        for _ in range(10_000):
            if open(wchan).read() in ("do_epoll_wait", "ep_poll"):
                break
            released.wait(0.001)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        waited.append(released.wait(60))
        done.set()
        return "answered"

    call = {"id": "c1", "type": "function",
            "function": {"name": "wait_for_operator", "arguments": "{}"}}
    model = ScriptedModel([{"tool_calls": [call]}, {"content": "never reached"}])
    result = Agent(model, [wait_for_operator]).run("Ask the operator.")
    released.set()
    done.wait(60)
    print(json.dumps({"status": result.status, "released": waited == [True]}))
    """
)


def test_ctrl_c_taken_by_a_tools_thread_ends_the_run_without_waiting_for_the_tool() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    host = subprocess.run(
        [sys.executable, "-c", HOST_OTHER_THREAD],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert host.returncode == 0, host.stderr
    printed = json.loads(host.stdout.strip().splitlines()[-1])
    assert printed["status"] == "cancelled"
    # `run` returned while the tool still waited: it was released, not timed out
    assert printed["released"] is True


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


# --- the calls that finished are kept, whatever stops the run ---------------------------

# One reply per convention: a quick call with side effects, then one that waits for the
# operator. Under json and plan both are in one turn (one wave); with one slot of
# concurrency the quick one ends, its record made, before the waiting one can start.
FINISHED_FIRST: dict[str, Any] = {
    "json": {
        "tool_calls": [
            _call("c1", "note", {"text": "a"}),
            _call("c2", "wait_for_operator", {}),
        ]
    },
    "plan": {"content": "```plan\nn = note(text='a')\nw = wait_for_operator()\n```"},
    "code": {
        "content": "```python\nfrom tools import note, wait_for_operator\n"
        "note(text='a')\nnote(text='b')\nwait_for_operator()\n```"
    },
}


class Operator:
    """A side-effecting note and a call that waits until the test releases it."""

    def __init__(self, *, announce: bool = False) -> None:
        self.announce = announce  # print "waiting" when the call starts (a host process)
        self.noted: list[str] = []
        self.started = threading.Event()
        self.release = threading.Event()

    def agent(self, convention: str, **options: Any) -> Agent:
        noted, started, release, announce = self.noted, self.started, self.release, self.announce

        @tool(side_effects=True)
        def note(text: str) -> str:
            """Keep a note.

            Args:
                text: what to note
            """
            noted.append(text)
            return "noted"

        @tool
        def wait_for_operator() -> str:
            """Wait until an operator answers."""
            started.set()
            if announce:
                print("waiting", flush=True)
            release.wait(60)
            return "answered"

        model = ScriptedModel([FINISHED_FIRST[convention], {"content": "never reached"}])
        return Agent(
            model,
            [note, wait_for_operator],
            convention=convention,
            limits=Limits(max_concurrency=1, tool_timeout=120),
            **options,
        )


def assert_finished_calls_kept(result: RunResult, noted: list[str], trace: Path) -> None:
    """Each note that ran is in the result, and in the trace before its end."""
    assert result.status == "cancelled"
    kept = [c for c in result.calls if c.name == "note"]
    assert [c.arguments["text"] for c in kept] == noted and noted
    assert all(c.ok and c.result == "noted" for c in kept)
    events = list(read_trace(trace))
    traced = [e["id"] for e in events if e["event"] == "call"]
    assert traced == [c.id for c in result.calls]
    assert events[-1]["event"] == "run_end" and events[-1]["calls"] == len(result.calls)


@pytest.mark.filterwarnings("ignore:wait_for_operator is still running")
@pytest.mark.parametrize("convention", ["json", "plan", "code"])
async def test_a_cancelled_arun_keeps_the_calls_that_finished_in_the_cut_turn(
    convention: str, tmp_path: Path, agents: list[Agent]
) -> None:
    operator = Operator()
    agent = operator.agent(convention, trace=tmp_path / "run.jsonl")
    agents.append(agent)
    task = asyncio.create_task(agent.arun("Note, then ask the operator."))
    try:
        await asyncio.to_thread(operator.started.wait, 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError) as raised:
            await task
    finally:
        operator.release.set()
    result = raised.value.result  # type: ignore[attr-defined]
    assert_finished_calls_kept(result, operator.noted, tmp_path / "run.jsonl")


# The host of the Ctrl-C test below, for a turn (json) and a script (code).
HOST_CUT = textwrap.dedent(
    """
    import json, signal, sys
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, sys.argv[3])
    from test_cancel import Operator

    operator = Operator(announce=True)
    agent = operator.agent(sys.argv[2], trace=sys.argv[1])
    result = agent.run("Note, then ask the operator.")
    operator.release.set()
    agent.close()
    print(json.dumps({"result": result.to_dict(), "noted": operator.noted}))
    """
)


@pytest.mark.parametrize("convention", ["json", "code"])
def test_ctrl_c_keeps_the_calls_that_finished_in_the_cut_turn(
    convention: str, tmp_path: Path
) -> None:
    trace = tmp_path / "run.jsonl"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    host = subprocess.Popen(
        [sys.executable, "-c", HOST_CUT, str(trace), convention, str(Path(__file__).parent)],
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
    result = RunResult.from_dict(printed["result"])
    assert_finished_calls_kept(result, printed["noted"], trace)
