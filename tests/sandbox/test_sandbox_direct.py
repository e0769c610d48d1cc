"""Plain calls a script waits on alone are served on the tool channel's own thread."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tooluse import CallRecord, Dispatcher, RejectedCall, Toolbox, ToolCall, tool
from tooluse._records import Outcome, ScriptRecord
from tooluse.dispatch._scripts import ScriptRunner
from tooluse.sandbox import DirectCall, ProxySpec, Sandbox, ToolReply

pytestmark = pytest.mark.usefixtures("no_leftovers")

CHANNEL_THREAD = "tooluse-sandbox-calls"


class Threads:
    """Where each tool call ran: (tool, thread name, thread ident), in call order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int]] = []

    def note(self, name: str) -> None:
        thread = threading.current_thread()
        self.seen.append((name, thread.name, threading.get_ident()))

    def names(self, tool_name: str | None = None) -> list[str]:
        return [t for n, t, _ in self.seen if tool_name is None or n == tool_name]

    def idents(self, tool_name: str | None = None) -> list[int]:
        return [i for n, _, i in self.seen if tool_name is None or n == tool_name]


async def run_script(
    sandbox: Sandbox,
    code: str,
    dispatcher: Dispatcher,
    *,
    script_id: str = "s1",
    timeout: float = 20,
) -> tuple[ScriptRecord, list[Outcome]]:
    runner = ScriptRunner(dispatcher.tools, dispatcher, sandbox, timeout=timeout)
    record, outcomes, _ = await asyncio.wait_for(
        runner.run(code, script_id=script_id), timeout + 10
    )
    return record, [o for o in outcomes if isinstance(o, CallRecord | RejectedCall)]


async def run_ok(
    sandbox: Sandbox, code: str, dispatcher: Dispatcher
) -> tuple[str, list[CallRecord]]:
    record, outcomes = await run_script(sandbox, code, dispatcher)
    assert record.status == "ok", record.error
    assert not [o for o in outcomes if isinstance(o, RejectedCall)]
    return record.stdout, [o for o in outcomes if isinstance(o, CallRecord)]


async def test_sequential_sync_calls_run_on_the_channel_thread(sandbox: Sandbox) -> None:
    threads = Threads()

    @tool
    def add(a: int, b: int = 0) -> int:
        """Add two numbers."""
        threads.note("add")
        return a + b

    loop_thread = threading.get_ident()
    dispatcher = Dispatcher(Toolbox([add]))
    try:
        stdout, calls = await run_ok(
            sandbox, "import tools\nprint([tools.add(i, b=1) for i in range(5)])\n", dispatcher
        )
    finally:
        dispatcher.close()
    assert stdout == "[1, 2, 3, 4, 5]\n"
    assert threads.names() == [CHANNEL_THREAD] * 5
    assert loop_thread not in threads.idents()
    assert [c.id for c in calls] == ["s1.1", "s1.2", "s1.3", "s1.4", "s1.5"]
    assert {c.source for c in calls} == {"script"}
    assert [(c.arguments, c.result, c.error) for c in calls] == [
        ({"a": i, "b": 1}, i + 1, None) for i in range(5)
    ]


async def test_parallel_and_aio_calls_do_not_run_on_the_channel_thread(sandbox: Sandbox) -> None:
    threads = Threads()

    @tool
    def tenfold(i: int) -> int:
        """Multiply by ten."""
        threads.note("tenfold")
        return i * 10

    loop_thread = threading.get_ident()
    dispatcher = Dispatcher(Toolbox([tenfold]))
    try:
        stdout, calls = await run_ok(
            sandbox,
            "import asyncio, tools\n"
            "print(tools.parallel(tools.tenfold, range(4)))\n"
            "print(await asyncio.gather(*(tools.tenfold.aio(i) for i in range(4))))\n",
            dispatcher,
        )
    finally:
        dispatcher.close()
    assert stdout == "[0, 10, 20, 30]\n[0, 10, 20, 30]\n"
    assert len(threads.seen) == 8
    assert CHANNEL_THREAD not in threads.names()
    assert loop_thread not in threads.idents()
    assert sorted(c.result for c in calls) == sorted([0, 10, 20, 30] * 2)
    assert all(c.ok and c.source == "script" for c in calls)


async def test_a_plain_call_made_while_an_aio_call_is_pending_goes_to_the_loop(
    sandbox: Sandbox,
) -> None:
    threads = Threads()
    signalled = threading.Event()

    @tool
    def wait_signal() -> str:
        """Wait until signal() is called."""
        threads.note("wait_signal")
        return "signalled" if signalled.wait(10) else "never signalled"

    @tool
    def signal() -> str:
        """Wake wait_signal()."""
        threads.note("signal")
        signalled.set()
        return "sent"

    dispatcher = Dispatcher(Toolbox([wait_signal, signal]))
    try:
        stdout, calls = await run_ok(
            sandbox,
            "import asyncio, tools\n"
            "pending = asyncio.ensure_future(tools.wait_signal.aio())\n"
            "await asyncio.sleep(0)\n"
            "print(tools.signal())\n"
            "print(await pending)\n",
            dispatcher,
        )
    finally:
        signalled.set()
        dispatcher.close()
    assert stdout == "sent\nsignalled\n"
    assert CHANNEL_THREAD not in threads.names()
    assert sorted((c.name, c.result) for c in calls) == [
        ("signal", "sent"),
        ("wait_signal", "signalled"),
    ]


async def test_an_async_tool_called_plainly_is_handed_to_the_loop(sandbox: Sandbox) -> None:
    threads = Threads()

    @tool
    async def shout(text: str) -> str:
        """Upper-case the text, after a pause."""
        threads.note("shout")
        await asyncio.sleep(0.001)
        return text.upper()

    @tool
    def add(a: int, b: int = 0) -> int:
        """Add two numbers."""
        threads.note("add")
        return a + b

    loop_thread = threading.get_ident()
    dispatcher = Dispatcher(Toolbox([shout, add]))
    try:
        stdout, calls = await run_ok(
            sandbox,
            "import tools\nprint(tools.shout('hi'), tools.add(1, 2), tools.shout(text='yo'))\n",
            dispatcher,
        )
    finally:
        dispatcher.close()
    assert stdout == "HI 3 YO\n"
    assert threads.idents("shout") == [loop_thread, loop_thread]
    assert threads.names("add") == [CHANNEL_THREAD]
    assert [(c.id, c.name, c.arguments, c.result, c.error) for c in calls] == [
        ("s1.1", "shout", {"text": "hi"}, "HI", None),
        ("s1.2", "add", {"a": 1, "b": 2}, 3, None),
        ("s1.3", "shout", {"text": "yo"}, "YO", None),
    ]


async def test_a_hung_direct_call_times_out_and_the_next_call_runs_on_a_new_thread(
    sandbox: Sandbox,
) -> None:
    threads = Threads()
    release = threading.Event()

    @tool(timeout=0.3)
    def stuck() -> str:
        """Blocks its thread."""
        threads.note("stuck")
        release.wait(30)
        return "late"

    @tool
    def after() -> str:
        """Answers at once."""
        threads.note("after")
        return "fine"

    dispatcher = Dispatcher(Toolbox([stuck, after]))
    try:
        stdout, calls = await run_ok(
            sandbox,
            "import tools\n"
            "try:\n"
            "    tools.stuck()\n"
            "except tools.ToolError as exc:\n"
            "    print(exc.kind, exc)\n"
            "print(tools.after())\n",
            dispatcher,
        )
    finally:
        release.set()
        dispatcher.close()
    error, answer = stdout.splitlines()
    assert error == "tool stuck timed out after 0.3 s"
    assert answer == "fine"
    assert threads.names() == [CHANNEL_THREAD, CHANNEL_THREAD]
    assert threads.idents("stuck") != threads.idents("after")
    assert [(c.name, c.error) for c in calls] == [
        ("stuck", "stuck timed out after 0.3 s"),
        ("after", None),
    ]


async def test_the_script_timeout_cuts_short_a_hung_direct_call(sandbox: Sandbox) -> None:
    release = threading.Event()
    started = threading.Event()

    @tool(timeout=30)
    def hang() -> str:
        """Blocks its thread."""
        started.set()
        release.wait(30)
        return "late"

    @tool
    def add(a: int, b: int = 0) -> int:
        """Add two numbers."""
        return a + b

    dispatcher = Dispatcher(Toolbox([hang, add]))
    try:
        record, outcomes = await run_script(
            sandbox,
            "import tools\nprint('before', flush=True)\ntools.hang()\n",
            dispatcher,
            timeout=1,
        )
        release.set()
        stdout, calls = await run_ok(sandbox, "import tools\nprint(tools.add(2, 3))\n", dispatcher)
    finally:
        release.set()
        dispatcher.close()
    assert started.is_set()
    assert record.status == "timeout", record.error
    assert record.stdout == "before\n"
    assert [(o.name, o.error) for o in outcomes] == [
        ("hang", "the script was stopped before the call ended")
    ]
    assert stdout == "5\n" and [c.result for c in calls] == [5]


@pytest.fixture
def five_call_sandbox(
    sandbox: Sandbox, count_after: Callable[[int, int], int]
) -> Iterator[Sandbox]:
    sb = Sandbox(isolation="required", limits=dataclasses.replace(sandbox.limits, max_calls=5))
    sb.start()
    yield sb
    uid = sb.uid
    sb.close()
    if uid is not None:
        assert count_after(uid, 0) == 0, "processes left behind after close()"


async def test_the_call_limit_stops_a_script_making_direct_calls(
    five_call_sandbox: Sandbox,
) -> None:
    threads = Threads()

    @tool
    def add(a: int, b: int = 0) -> int:
        """Add two numbers."""
        threads.note("add")
        return a + b

    dispatcher = Dispatcher(Toolbox([add]))
    try:
        record, outcomes = await run_script(
            five_call_sandbox, "import tools\nfor i in range(10):\n    tools.add(i)\n", dispatcher
        )
    finally:
        dispatcher.close()
    assert record.status == "killed"
    assert record.error is not None and "more than 5 tool calls" in record.error
    assert len(outcomes) == 5 and all(isinstance(o, CallRecord) and o.ok for o in outcomes)
    assert threads.names() == [CHANNEL_THREAD] * 5


async def test_a_plain_call_waits_for_a_slot_held_by_a_json_call(sandbox: Sandbox) -> None:
    threads = Threads()
    holding = threading.Event()
    gate = threading.Event()
    gate_open_when_other_ran: list[bool] = []

    @tool
    def hold() -> str:
        """Hold the only slot until the gate opens."""
        holding.set()
        return "held" if gate.wait(10) else "gate never opened"

    @tool
    def other(x: int) -> int:
        """Double x."""
        threads.note("other")
        gate_open_when_other_ran.append(gate.is_set())
        return 2 * x

    dispatcher = Dispatcher(Toolbox([hold, other]), max_concurrency=1)
    try:
        json_call = asyncio.ensure_future(dispatcher.run([ToolCall("j1", "hold", "{}")]))
        assert await asyncio.to_thread(holding.wait, 10)
        script = asyncio.ensure_future(
            run_script(sandbox, "import tools\nprint(tools.other(21))\n", dispatcher)
        )
        deadline = time.monotonic() + 10
        while not dispatcher.waiting and time.monotonic() < deadline:
            assert not script.done()
            await asyncio.sleep(0.01)
        assert dispatcher.waiting, "the script's call never queued for the slot"
        assert not gate_open_when_other_ran
        gate.set()
        (json_outcome,) = await asyncio.wait_for(json_call, 10)
        record, outcomes = await asyncio.wait_for(script, 30)
    finally:
        gate.set()
        dispatcher.close()
    assert isinstance(json_outcome, CallRecord) and json_outcome.result == "held"
    assert record.status == "ok", record.error
    assert record.stdout == "42\n"
    assert gate_open_when_other_ran == [True]
    assert CHANNEL_THREAD not in threads.names()
    assert [(o.name, o.error) for o in outcomes] == [("other", None)]
    assert [o.result for o in outcomes if isinstance(o, CallRecord)] == [42]
    assert dispatcher.running == 0


class Hanging:
    """A direct call that blocks past its timeout until released; the first end wins."""

    timeout: float | None = 0.2

    def __init__(self) -> None:
        self.release = threading.Event()
        self.ended = threading.Event()
        self.abandoned: list[str | None] = []
        self.ran: list[ToolReply | None] = []
        self._lock = threading.Lock()
        self._over = False

    def _end(self) -> bool:
        with self._lock:
            first, self._over = not self._over, True
            return first

    def run(self) -> ToolReply | None:
        self.release.wait(10)
        reply = ToolReply.ok("too late") if self._end() else None
        self.ran.append(reply)
        self.ended.set()
        return reply

    def abandon(self, reason: str | None) -> ToolReply | None:
        self.abandoned.append(reason)
        if not self._end():
            return None
        return ToolReply.fail("hang gave up after 0.2 s", kind="timeout")


async def test_a_hand_written_direct_handler_answers_falls_back_and_is_abandoned(
    sandbox: Sandbox,
) -> None:
    hanging = Hanging()
    handled: list[tuple[str, dict[str, object]]] = []
    direct_threads: list[str] = []

    def direct(name: str, arguments: dict[str, object]) -> DirectCall | ToolReply | None:
        direct_threads.append(threading.current_thread().name)
        if name == "quick":
            return ToolReply.ok("direct")
        if name == "hang":
            return hanging
        return None

    async def handler(name: str, arguments: dict[str, object]) -> ToolReply:
        handled.append((name, arguments))
        return ToolReply.ok(2 * int(str(arguments["x"])))

    try:
        result = await sandbox.execute(
            "import tools\n"
            "print(tools.quick())\n"
            "print(tools.later(21))\n"
            "try:\n"
            "    tools.hang()\n"
            "except tools.ToolError as exc:\n"
            "    print(exc.kind, exc)\n"
            "print(tools.quick())\n",
            tools=[ProxySpec("quick"), ProxySpec("later", ["x"]), ProxySpec("hang")],
            handler=handler,
            direct=direct,
            timeout=10,
        )
    finally:
        hanging.release.set()
    assert result.status == "ok", result.error
    assert result.stdout == "direct\n42\ntimeout hang gave up after 0.2 s\ndirect\n"
    assert result.calls_made == 4
    assert handled == [("later", {"x": 21})]
    assert direct_threads == [CHANNEL_THREAD] * 4
    assert hanging.abandoned == [None]  # once: an abandoned call is no longer watched
    assert await asyncio.to_thread(hanging.ended.wait, 10)
    assert hanging.ran == [None]


async def test_a_sync_tool_raising_on_the_direct_path_fails_the_call_not_the_script(
    sandbox: Sandbox,
) -> None:
    threads = Threads()

    @tool
    def picky(x: int) -> int:
        """Refuse odd numbers."""
        threads.note("picky")
        if x % 2:
            raise ValueError(f"{x} is odd")
        return x

    dispatcher = Dispatcher(Toolbox([picky]))
    try:
        stdout, calls = await run_ok(
            sandbox,
            "import tools\n"
            "try:\n"
            "    tools.picky(3)\n"
            "except tools.ToolError as exc:\n"
            "    print(exc.kind, exc.tool, '|', exc)\n"
            "print(tools.picky(4))\n",
            dispatcher,
        )
    finally:
        dispatcher.close()
    assert stdout == "tool picky | picky failed: ValueError: 3 is odd\n4\n"
    assert threads.names() == [CHANNEL_THREAD, CHANNEL_THREAD]
    assert [(c.id, c.result, c.error) for c in calls] == [
        ("s1.1", None, "picky failed: ValueError: 3 is odd"),
        ("s1.2", 4, None),
    ]
