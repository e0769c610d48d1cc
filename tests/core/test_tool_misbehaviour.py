"""Tools that misbehave: every call is still recorded, and the run ends with a result."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest

from tooluse import Agent, CallRecord, DoneEvent, Limits, RunResult, Toolbox, run_script, tool
from tooluse.models import ScriptedModel
from tooluse.sandbox import Sandbox

# A deadline for runs that must end; a run that hangs fails the test instead of the suite.
DEADLINE_S = 60


def json_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


def fenced(code: str) -> dict[str, str]:
    return {"content": f"```python\nimport tools\n{code}\n```"}


async def run_json(toolbox: Toolbox, name: str, **settings: Any) -> RunResult:
    model = ScriptedModel([json_call(name, {}), {"content": "done"}])
    agent = Agent(model, toolbox, **settings)
    return await asyncio.wait_for(agent.arun("go"), DEADLINE_S)


async def run_code(
    agents: list[Agent], toolbox: Toolbox, code: str, tool_timeout: float | None = 60.0
) -> RunResult:
    model = ScriptedModel([fenced(code), {"content": "done"}])
    limits = Limits(script_timeout=30, tool_timeout=tool_timeout)
    agent = Agent(model, toolbox, convention="code", limits=limits)
    agents.append(agent)
    return await asyncio.wait_for(agent.arun("go"), DEADLINE_S)


def only_call(result: RunResult) -> CallRecord:
    assert result.status == "completed", result.error
    (call,) = result.calls
    return call


@tool
def huge() -> int:
    """A number too long for the usual encoding."""
    return 7**9000


@tool
def nested_huge() -> dict[str, Any]:
    """A structure holding such a number."""
    return {"n": 7**9000, "small": 1}


async def test_a_result_too_long_for_json_is_recorded_as_text() -> None:
    result = await run_json(Toolbox([huge]), "huge")
    call = only_call(result)
    assert call.ok and call.result == _decimal(7**9000)
    assert any("as text" in note for note in call.repairs)
    # Over the result limit: the model is shown the text's handle, the record keeps it whole.
    shown = result.messages[2].content
    assert shown.startswith("[stored as @r1-")
    assert f": text of {len(call.result):,} characters, 1 line]" in shown


async def test_a_nested_result_too_long_for_json_keeps_its_shape(agents: list[Agent]) -> None:
    result = await run_code(
        agents, Toolbox([nested_huge]), "r = tools.nested_huge()\nprint(len(r['n']), r['small'])"
    )
    call = only_call(result)
    assert call.ok and call.result == {"n": _decimal(7**9000), "small": 1}
    assert result.scripts[0].stdout == f"{len(_decimal(7**9000))} 1\n"


def _decimal(value: int) -> str:
    import decimal

    with decimal.localcontext() as context:
        context.prec = decimal.MAX_PREC
        return str(decimal.Decimal(value))


@tool
def exits() -> str:
    """Parse arguments the way a command line does, and give up."""
    raise SystemExit(2)


@tool
def interrupts() -> str:
    """Raise what a Ctrl-C raises."""
    raise KeyboardInterrupt


@tool
async def cancels() -> str:
    """Raise CancelledError without being cancelled."""
    raise asyncio.CancelledError


@tool
def stops() -> str:
    """Raise StopIteration, as next() on an empty iterator does."""
    return next(iter([]))


@pytest.mark.parametrize(
    ("tool_name", "error"),
    [
        ("exits", "exits failed: SystemExit: 2"),
        ("interrupts", "interrupts failed: KeyboardInterrupt: "),
        ("cancels", "cancels failed: CancelledError: "),
        ("stops", "stops failed: StopIteration: "),
    ],
)
async def test_a_tool_raising_a_base_exception_gets_an_error_result(
    tool_name: str, error: str
) -> None:
    result = await run_json(
        Toolbox([exits, interrupts, cancels, stops]), tool_name, limits=Limits(tool_timeout=None)
    )
    assert only_call(result).error == error


@pytest.mark.parametrize("tool_name", ["exits", "interrupts", "stops"])
async def test_a_script_calling_a_tool_raising_a_base_exception_goes_on(
    agents: list[Agent], tool_name: str
) -> None:
    result = await run_code(
        agents,
        Toolbox([exits, interrupts, stops]),
        f"try:\n    tools.{tool_name}()\nexcept tools.ToolError as exc:\n    print(exc.kind)",
        tool_timeout=None,
    )
    call = only_call(result)
    assert call.error is not None and call.error.startswith(f"{tool_name} failed: ")
    assert result.scripts[0].stdout == "tool\n"


async def test_an_async_tool_ignoring_its_timeout_is_recorded_as_timed_out(
    agents: list[Agent],
) -> None:
    release = asyncio.Event()
    outlived: list[str] = []

    @tool
    async def stubborn() -> str:
        """Ignore cancellation until released."""
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                outlived.append("cancelled, went on")
        return "finished late"

    try:
        from_json = await run_json(Toolbox([stubborn]), "stubborn", limits=Limits(tool_timeout=0.2))
        from_code = await run_code(
            agents,
            Toolbox([stubborn]),
            "try:\n    tools.stubborn()\nexcept tools.ToolError as exc:\n    print(exc)",
            tool_timeout=0.2,
        )
    finally:
        release.set()
    for result in (from_json, from_code):
        assert only_call(result).error == "stubborn timed out after 0.2 s"
    assert from_code.scripts[0].stdout == "stubborn timed out after 0.2 s\n"
    assert outlived


class Stubborn:
    """An async tool that goes on when cancelled, until the test releases it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.finished = threading.Event()
        # A runtime that waited for the tool would never return: released after the
        # deadline, the test fails instead of hanging.
        self.watchdog = threading.Timer(DEADLINE_S, self.release.set)

    def tool(self, timeout: float | None = None) -> Any:
        release, started, cancelled, finished = (
            self.release,
            self.started,
            self.cancelled,
            self.finished,
        )

        @tool(timeout=timeout)
        async def stubborn() -> str:
            """Ignore cancellation until released."""
            started.set()
            while not release.is_set():
                try:
                    await asyncio.sleep(0.01)
                except asyncio.CancelledError:
                    cancelled.set()
            finished.set()
            return "finished late"

        return stubborn

    def __enter__(self) -> Stubborn:
        self.watchdog.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release.set()
        self.watchdog.cancel()


def _stubborn_run(driver: str, stubborn: Any) -> list[CallRecord]:
    """The calls of a run of `stubborn`, driven by ``driver``, once the driver returned."""
    if driver == "run_script":
        with Sandbox() as sandbox:
            return run_script(
                sandbox, "import tools\ntools.stubborn()", [stubborn], timeout=30
            ).calls
    if driver == "code":
        reply: Any = fenced(
            "try:\n    tools.stubborn()\nexcept tools.ToolError as exc:\n    print(exc)"
        )
    else:
        reply = json_call("stubborn", {})
    model = ScriptedModel([reply, {"content": "done"}])
    convention = "code" if driver == "code" else "json"
    with Agent(model, [stubborn], convention=convention, limits=Limits(tool_timeout=0.2)) as agent:
        if driver != "stream_sync":
            result = agent.run("go")
        else:
            done = list(agent.stream_sync("go"))[-1]
            assert isinstance(done, DoneEvent)
            result = done.result
    assert result.status == "completed", result.error
    return result.calls


@pytest.mark.parametrize("driver", ["json", "code", "stream_sync", "run_script"])
def test_run_returns_at_the_timeout_leaving_an_async_tool_that_ignores_it_behind(
    driver: str,
) -> None:
    with Stubborn() as stubborn:
        with pytest.warns(RuntimeWarning, match="stubborn is still running"):
            calls = _stubborn_run(driver, stubborn.tool(timeout=0.2))
        # run() has returned while the tool still runs: it was left behind, not awaited
        blocked = not stubborn.finished.is_set()
    assert blocked
    assert stubborn.cancelled.is_set()
    assert [c.error for c in calls] == ["stubborn timed out after 0.2 s"]
    # left behind on its own, it still goes on to its end once released
    assert stubborn.finished.wait(DEADLINE_S)


async def test_a_cancelled_arun_does_not_wait_for_an_async_tool_that_ignores_it() -> None:
    with Stubborn() as stubborn:
        model = ScriptedModel([json_call("stubborn", {}), {"content": "done"}])
        agent = Agent(model, [stubborn.tool()], limits=Limits(tool_timeout=None))
        task = asyncio.create_task(agent.arun("go"))
        await asyncio.to_thread(stubborn.started.wait, DEADLINE_S)
        task.cancel()
        with pytest.raises(asyncio.CancelledError) as raised:
            await task
        blocked = not stubborn.finished.is_set()
    assert blocked
    assert raised.value.result.status == "cancelled"  # type: ignore[attr-defined]
    # left behind on this event loop, it goes on to its end once released
    assert await asyncio.to_thread(stubborn.finished.wait, DEADLINE_S)


def test_sync_tools_that_never_return_do_not_block_exit() -> None:
    program = textwrap.dedent(
        """
        import json, threading, warnings
        from tooluse import Agent, Limits, tool
        from tooluse.models import ScriptedModel

        @tool
        def forever() -> str:
            '''Never returns.'''
            threading.Event().wait()
            return "never"

        @tool
        def quick() -> str:
            '''Answers at once.'''
            return "quick"

        def calls(*names):
            return {"tool_calls": [
                {"id": f"c{i}", "type": "function",
                 "function": {"name": name, "arguments": "{}"}}
                for i, name in enumerate(names)]}

        model = ScriptedModel([
            calls("forever", "forever"), calls("forever"), calls("quick"), {"content": "done"}
        ])
        agent = Agent(model, [forever, quick], limits=Limits(tool_timeout=0.2, max_concurrency=2))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = agent.run("go")
        print(json.dumps({
            "status": result.status,
            "errors": [c.error for c in result.calls],
            "warnings": [str(w.message) for w in caught],
        }))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "completed"
    assert report["errors"] == ["forever timed out after 0.2 s"] * 3 + [None]
    assert len([w for w in report["warnings"] if "still running" in w]) == 1, report


def test_threads_started_here_are_not_left_running() -> None:
    before = set(threading.enumerate())
    result = Agent(ScriptedModel([json_call("stops", {}), {"content": "done"}]), [stops]).run("go")
    assert only_call(result).error == "stops failed: StopIteration: "
    for thread in set(threading.enumerate()) - before:
        thread.join(DEADLINE_S)
        assert not thread.is_alive()


async def test_sync_tools_raising_stop_iteration_side_by_side_do_not_hang(
    agents: list[Agent],
) -> None:
    both = {
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "stops", "arguments": "{}"}}
            for i in range(2)
        ]
    }
    agent = Agent(
        ScriptedModel([both, {"content": "done"}]), [stops], limits=Limits(tool_timeout=None)
    )
    from_json = await asyncio.wait_for(agent.arun("go"), DEADLINE_S)
    from_code = await run_code(
        agents,
        Toolbox([stops]),
        "try:\n    tools.parallel(tools.stops, [{}, {}])\nexcept tools.ToolError as exc:\n"
        "    print(exc.kind)",
        tool_timeout=None,
    )
    for result in (from_json, from_code):
        assert result.status == "completed", result.error
        assert [c.error for c in result.calls] == ["stops failed: StopIteration: "] * 2
