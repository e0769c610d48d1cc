"""Scripts calling a toolbox: every call goes through the dispatcher, like a JSON call."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from typing import Any

import pytest
from pydantic import Field

from tooluse import CallRecord, Dispatcher, RejectedCall, Toolbox, ToolCall, tool
from tooluse.dispatch._scripts import ScriptRunner
from tooluse.sandbox import Sandbox

pytestmark = pytest.mark.usefixtures("no_leftovers")


@tool
def add(a: int, b: int = 0) -> int:
    """Add two numbers."""
    return a + b


@tool
async def shout(text: str) -> str:
    """Upper-case the text, after a pause."""
    await asyncio.sleep(0.001)
    return text.upper()


async def run_with_runner(
    sandbox: Sandbox, code: str, dispatcher: Dispatcher, script_id: str = "s1"
) -> tuple[str, list[CallRecord], list[RejectedCall]]:
    runner = ScriptRunner(dispatcher.tools, dispatcher, sandbox, timeout=20)
    record, outcomes, _ = await runner.run(code, script_id=script_id, round_=3)
    assert record.status == "ok", record.error
    calls = [o for o in outcomes if isinstance(o, CallRecord)]
    rejected = [o for o in outcomes if isinstance(o, RejectedCall)]
    return record.stdout, calls, rejected


def comparable(record: CallRecord) -> dict[str, Any]:
    fields = record.to_dict()
    for varies in ("id", "started_at", "duration_s", "source"):
        del fields[varies]
    return fields


async def test_script_calls_record_what_json_calls_record(sandbox: Sandbox) -> None:
    # Quick sync tools are answered without a task, async tools through one: the records
    # must not tell the paths apart, nor script calls from JSON calls.
    dispatcher = Dispatcher(Toolbox([add, shout]))
    stdout, calls, rejected = await run_with_runner(
        sandbox,
        "import tools\n"
        "print(tools.add(2, b=3), tools.shout('hi'), tools.add(a=1))\n"
        "try:\n"
        "    tools.add('x')\n"
        "except tools.ToolError as exc:\n"
        "    print(exc.kind)\n",
        dispatcher,
    )
    json_calls = [
        ToolCall("j1", "add", json.dumps({"a": 2, "b": 3})),
        ToolCall("j2", "shout", json.dumps({"text": "hi"})),
        ToolCall("j3", "add", json.dumps({"a": 1})),
    ]
    from_json = [await dispatcher.run([c], round_=3) for c in json_calls]
    dispatcher.close()
    assert stdout == "5 HI 1\nvalidation\n"
    assert [c.id for c in calls] == ["s1.1", "s1.2", "s1.3"]
    assert {c.source for c in calls} == {"script"}
    assert [comparable(c) for c in calls] == [
        comparable(o) for (o,) in from_json if isinstance(o, CallRecord)
    ]
    (refused,) = rejected
    assert refused.id == "s1.4" and "argument 'a' must be integer" in refused.error


async def test_a_hung_sync_tool_times_out_and_the_script_goes_on(sandbox: Sandbox) -> None:
    release = threading.Event()

    @tool(timeout=0.3)
    def stuck() -> str:
        """Blocks its thread."""
        release.wait(30)
        return "late"

    dispatcher = Dispatcher(Toolbox([stuck, add]))
    try:
        stdout, calls, _ = await run_with_runner(
            sandbox,
            "import tools\n"
            "try:\n"
            "    tools.stuck()\n"
            "except tools.ToolError as exc:\n"
            "    print(exc.kind, exc)\n"
            "print(tools.add(1, 1))\n",
            dispatcher,
        )
    finally:
        release.set()
        dispatcher.close()
    assert stdout == "tool stuck timed out after 0.3 s\n2\n"
    assert [(c.name, c.error) for c in calls] == [
        ("stuck", "stuck timed out after 0.3 s"),
        ("add", None),
    ]


async def test_parallel_calls_respect_the_dispatchers_concurrency_limit(
    sandbox: Sandbox,
) -> None:
    lock = threading.Lock()
    running = peak = 0

    @tool
    def work(i: int) -> int:
        """Hold a thread for a moment."""
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        threading.Event().wait(0.02)
        with lock:
            running -= 1
        return i

    dispatcher = Dispatcher(Toolbox([work]), max_concurrency=3)
    stdout, calls, _ = await run_with_runner(
        sandbox,
        "import asyncio, tools\n"
        "print(sum(tools.parallel(tools.work, range(12))))\n"
        "print(sum(await asyncio.gather(*(tools.work.aio(i) for i in range(12)))))\n",
        dispatcher,
    )
    dispatcher.close()
    assert stdout == "66\n66\n"
    assert len(calls) == 24 and all(c.ok for c in calls)
    assert peak == 3


@tool
def route(from_: str = Field(alias="from"), to: str = "x") -> str:
    """A route; ``from`` is a keyword in Python, so the stub calls it ``from_``."""
    return f"{from_}->{to}"


async def test_the_proxy_binds_arguments_by_the_signature_the_stub_shows(
    sandbox: Sandbox,
) -> None:
    # The stub puts the aliased required parameter after the optional one, keyword-only:
    # a call binds in the script exactly as Python binds it to the stub, or fails the same.
    box = Toolbox([route, add])
    calls = [
        "route(from_='A')",
        "route('B', from_='A')",
        "route(to='B', from_='A')",
        "route('A', 'B')",
        "route('A', 'B', from_='C')",
        "add(2)",
        "add(2, 3)",
        "add(2, b=3)",
        "add(2, 3, 4)",
    ]
    script = (
        "import tools\n"
        f"for call in {calls!r}:\n"
        "    try:\n"
        "        print(repr(eval('tools.' + call)))\n"
        "    except TypeError:\n"
        "        print('TypeError')\n"
    )
    stubs: dict[str, Any] = {}
    exec(box.stub_module(), stubs)
    functions = {t.name: t.function for t in box}
    expected = []
    for call in calls:
        name, arguments = call.split("(", 1)
        args, kwargs = eval(f"(lambda *a, **k: (a, k))({arguments}")
        try:
            bound = inspect.signature(stubs[name]).bind(*args, **kwargs)
        except TypeError:
            expected.append("TypeError")
            continue
        bound.apply_defaults()
        expected.append(repr(functions[name](**bound.arguments)))
    dispatcher = Dispatcher(box)
    stdout, calls_made, rejected = await run_with_runner(sandbox, script, dispatcher)
    dispatcher.close()
    assert stdout.splitlines() == expected
    assert "TypeError" in expected and not rejected
    assert len(calls_made) == len(calls) - expected.count("TypeError")
