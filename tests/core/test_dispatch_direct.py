"""Direct calls: a sync tool run on the caller's own thread, and what makes them cheap."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, TypeVar

import pydantic
from pydantic import AfterValidator, Field

from tooluse import CallRecord, Dispatcher, Ledger, RejectedCall, Toolbox, ToolCall, tool
from tooluse.dispatch._dispatch import DirectRun

T = TypeVar("T")


def on_thread(job: Callable[[], T], name: str = "direct-caller") -> T:
    """Run ``job`` on a new thread named ``name`` and return what it returns."""
    results: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            results.append(job())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "the job did not end within 10 s"
    if errors:
        raise errors[0]
    return results[0]


def json_call(name: str, arguments: dict[str, Any], call_id: str = "j") -> ToolCall:
    return ToolCall(call_id, name, json.dumps(arguments))


def comparable(record: CallRecord) -> dict[str, Any]:
    fields = record.to_dict()
    for varies in ("id", "started_at", "duration_s", "source"):
        del fields[varies]
    return fields


class Ids:
    """A call id factory that remembers how often it was asked."""

    def __init__(self) -> None:
        self.given: list[str] = []

    def __call__(self) -> str:
        self.given.append(f"s1.{len(self.given) + 1}")
        return self.given[-1]


@tool
def add(a: int, b: int = 0) -> int:
    """Add two numbers."""
    return a + b


@tool
async def shout(text: str) -> str:
    """Upper-case the text."""
    await asyncio.sleep(0)
    return text.upper()


def run_direct(dispatcher: Dispatcher, name: str, arguments: dict[str, Any]) -> CallRecord:
    run = dispatcher.call_direct(name, arguments, call_id="d")
    assert isinstance(run, DirectRun)
    record = run.run()
    assert record is not None
    return record


async def test_call_direct_runs_on_the_calling_thread_and_records_what_json_does() -> None:
    threads: list[str] = []

    @tool
    def scale(x: float, times: int = 2) -> float:
        """Multiply x."""
        threads.append(threading.current_thread().name)
        return x * times

    dispatcher = Dispatcher(Toolbox([scale]))
    # The first call checks the arguments the full way; later ones valid as sent take the
    # quick path. Both must record what a JSON call records.
    arguments: list[dict[str, Any]] = [{"x": 1.5}, {"x": 2, "times": 3}, {"x": 0.5, "times": 4.0}]
    direct = [on_thread(partial(run_direct, dispatcher, "scale", a)) for a in arguments]
    assert threads == ["direct-caller"] * 3
    from_json = [await dispatcher.run([json_call("scale", a)]) for a in arguments]
    dispatcher.close()
    assert [r.result for r in direct] == [3.0, 6.0, 2.0]
    assert [comparable(r) for r in direct] == [
        comparable(o) for (o,) in from_json if isinstance(o, CallRecord)
    ]
    assert {r.source for r in direct} == {"script"}
    assert dispatcher.running == 0


def test_call_direct_leaves_async_and_unknown_tools_alone() -> None:
    dispatcher = Dispatcher(Toolbox([add, shout]))
    ids = Ids()
    assert dispatcher.call_direct("shout", {"text": "hi"}, call_id=ids) is None
    assert dispatcher.call_direct("nope", {"a": 1}, call_id=ids) is None
    assert ids.given == []
    assert dispatcher.running == 0


def test_call_direct_leaves_the_call_alone_when_no_slot_is_free() -> None:
    dispatcher = Dispatcher(Toolbox([add]), max_concurrency=1)
    held = dispatcher.call_direct("add", {"a": 2}, call_id="held")
    assert isinstance(held, DirectRun)
    ids = Ids()
    assert dispatcher.call_direct("add", {"a": 1}, call_id=ids) is None
    assert ids.given == []
    assert dispatcher.running == 1
    record = on_thread(held.run)
    assert record is not None and record.result == 2
    assert dispatcher.running == 0


def test_refused_arguments_come_back_refused_and_give_the_slot_back() -> None:
    dispatcher = Dispatcher(Toolbox([add]), max_concurrency=1)
    ids = Ids()
    refused = [
        dispatcher.call_direct("add", {"a": "x"}, call_id=ids),
        dispatcher.call_direct("add", {"a": 1, "c": 2}, call_id=ids),
        dispatcher.call_direct("add", {}, call_id=ids),
    ]
    assert all(isinstance(r, RejectedCall) for r in refused)
    assert [r.id for r in refused if isinstance(r, RejectedCall)] == ["s1.1", "s1.2", "s1.3"]
    first = refused[0]
    assert isinstance(first, RejectedCall)
    assert "argument 'a' must be integer" in first.error
    assert first.source == "script"
    assert dispatcher.running == 0


def test_a_side_effect_already_made_is_replayed_without_a_slot() -> None:
    sent: list[str] = []

    @tool(side_effects=True)
    def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        return f"sent to {to}"

    dispatcher = Dispatcher(Toolbox([send]))
    ledger = Ledger()
    run = dispatcher.call_direct("send", {"to": "ann"}, call_id="d1", ledger=ledger)
    assert isinstance(run, DirectRun)
    first = run.run()
    assert first is not None
    ledger.script_ended(ok=False)
    again = dispatcher.call_direct("send", {"to": "ann"}, call_id="d2", ledger=ledger)
    assert isinstance(again, CallRecord)
    assert again.replayed and again.result == first.result == "sent to ann"
    assert sent == ["ann"]
    assert dispatcher.running == 0


async def test_a_direct_run_holds_the_only_slot_until_it_runs() -> None:
    @tool
    def first() -> str:
        """Runs directly."""
        return "direct"

    @tool
    def second() -> str:
        """Runs from JSON."""
        return "json"

    dispatcher = Dispatcher(Toolbox([first, second]), max_concurrency=1)
    try:
        run = dispatcher.call_direct("first", {}, call_id="d1")
        assert isinstance(run, DirectRun)
        assert dispatcher.running == 1
        waiting = asyncio.ensure_future(dispatcher.run([json_call("second", {})]))
        deadline = time.monotonic() + 10
        while not dispatcher.waiting and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert dispatcher.waiting == 1, "the JSON call never queued for the slot"
        assert not waiting.done()
        record = await asyncio.wait_for(asyncio.to_thread(run.run), 10)
        (outcome,) = await asyncio.wait_for(waiting, 10)
    finally:
        dispatcher.close()
    assert record is not None and record.result == "direct"
    assert isinstance(outcome, CallRecord) and outcome.result == "json"
    assert dispatcher.running == 0


def test_abandoning_before_the_run_records_a_call_not_started_and_never_starts_it() -> None:
    ran: list[int] = []

    @tool(timeout=0.5)
    def quick(n: int) -> int:
        """Answers at once."""
        ran.append(n)
        return n

    dispatcher = Dispatcher(Toolbox([quick]))
    run = dispatcher.call_direct("quick", {"n": 1}, call_id="d1")
    assert isinstance(run, DirectRun)
    assert run.timeout == 0.5
    record = run.abandon()
    assert record is not None
    assert record.error == "quick was not started: its 0.5 s ran out first"
    assert record.result is None
    assert dispatcher.running == 0
    assert on_thread(run.run) is None
    assert ran == []
    assert record.error == "quick was not started: its 0.5 s ran out first"
    assert dispatcher.running == 0


def test_abandoning_a_running_call_records_a_timeout_and_drops_its_result() -> None:
    started = threading.Event()
    release = threading.Event()

    @tool(timeout=0.2)
    def stuck() -> str:
        """Blocks until released."""
        started.set()
        release.wait(10)
        return "late"

    dispatcher = Dispatcher(Toolbox([stuck]))
    run = dispatcher.call_direct("stuck", {}, call_id="d1")
    assert isinstance(run, DirectRun)
    outcome: list[CallRecord | None] = []
    runner = threading.Thread(target=lambda: outcome.append(run.run()), daemon=True)
    runner.start()
    try:
        assert started.wait(10)
        time.sleep(0.2)
        record = run.abandon()
    finally:
        release.set()
        runner.join(10)
    assert not runner.is_alive()
    assert outcome == [None]
    assert record is not None
    assert record.error == "stuck timed out after 0.2 s"
    assert record.result is None and record.duration_s >= 0.2
    assert dispatcher.running == 0


def test_abandoning_after_the_run_changes_nothing() -> None:
    dispatcher = Dispatcher(Toolbox([add]))
    run = dispatcher.call_direct("add", {"a": 2, "b": 2}, call_id="d1")
    assert isinstance(run, DirectRun)
    record = on_thread(run.run)
    assert record is not None
    assert run.abandon() is None
    assert run.abandon("the script was stopped") is None
    assert (record.result, record.error) == (4, None)
    assert dispatcher.running == 0


def test_abandoning_with_a_reason_or_without_a_timeout_says_so() -> None:
    dispatcher = Dispatcher(Toolbox([add]), timeout=None)
    stopped = dispatcher.call_direct("add", {"a": 1}, call_id="d1")
    untimed = dispatcher.call_direct("add", {"a": 1}, call_id="d2")
    assert isinstance(stopped, DirectRun) and isinstance(untimed, DirectRun)
    assert untimed.timeout is None
    stopped_record = stopped.abandon("the script was stopped")
    untimed_record = untimed.abandon()
    assert stopped_record is not None and untimed_record is not None
    assert stopped_record.error == "add was not started: the script was stopped"
    assert untimed_record.error == "add was not started: it was abandoned"
    assert dispatcher.running == 0


def test_a_tool_raising_on_the_direct_path_records_its_error() -> None:
    @tool
    def picky(x: int) -> int:
        """Refuse odd numbers."""
        if x % 2:
            raise ValueError(f"{x} is odd")
        return x

    dispatcher = Dispatcher(Toolbox([picky]))
    record = on_thread(lambda: run_direct(dispatcher, "picky", {"x": 3}))
    assert record.error == "picky failed: ValueError: 3 is odd"
    assert record.result is None
    assert dispatcher.running == 0


@tool
def kinds(a: int, b: float = 1.0, c: str | None = None) -> list[str]:
    """The types the arguments arrive as."""
    return [type(a).__name__, type(b).__name__, type(c).__name__]


async def test_plain_scalar_parameters_get_json_numbers_as_their_own_types() -> None:
    dispatcher = Dispatcher(Toolbox([kinds]))
    (outcome,) = await dispatcher.run([json_call("kinds", {"a": 3.0, "b": 2})])
    direct = [
        on_thread(lambda: run_direct(dispatcher, "kinds", {"a": 3.0, "b": 2, "c": "x"}))
        for _ in range(2)
    ]
    dispatcher.close()
    assert isinstance(outcome, CallRecord) and outcome.result == ["int", "float", "NoneType"]
    assert [r.result for r in direct] == [["int", "float", "str"]] * 2
    converted = kinds.convert_arguments({"a": 3.0, "b": 2})
    assert converted == {"a": 3, "b": 2.0}
    assert [type(v) for v in converted.values()] == [int, float]


@tool
def half(x: float) -> float:
    """Half of x."""
    return x / 2


async def test_an_integer_beyond_a_float_is_refused_not_raised() -> None:
    dispatcher = Dispatcher(Toolbox([half]))
    huge = "1" + "0" * 400
    (refused, fine) = await dispatcher.run(
        [ToolCall("j1", "half", f'{{"x": {huge}}}'), ToolCall("j2", "half", '{"x": 4}')]
    )
    direct = on_thread(lambda: dispatcher.call_direct("half", {"x": int(huge)}, call_id="s1"))
    dispatcher.close()
    assert isinstance(refused, RejectedCall) and "valid number" in refused.error
    assert isinstance(fine, CallRecord) and fine.result == 2.0
    assert isinstance(direct, RejectedCall) and "valid number" in direct.error
    assert dispatcher.running == 0


class Point(pydantic.BaseModel):
    x: int
    y: int


def _double(value: int) -> int:
    return 2 * value


@tool
def place(p: Point, scale: int = 1) -> str:
    """Where the point lands."""
    return f"{type(p).__name__} {p.x * scale},{p.y * scale}"


@tool
def doubled(n: Annotated[int, AfterValidator(_double)]) -> int:
    """Return n, as the validator left it."""
    return n


@tool
def positive(n: Annotated[int, Field(ge=1)]) -> str:
    """The type n arrives as."""
    return type(n).__name__


@tool
def floats(xs: list[float]) -> list[str]:
    """The types the items arrive as."""
    return [type(x).__name__ for x in xs]


async def test_other_parameters_still_convert_through_pydantic() -> None:
    dispatcher = Dispatcher(Toolbox([place, doubled, positive, floats]))
    outcomes = await dispatcher.run(
        [
            json_call("place", {"p": {"x": 1, "y": 2}, "scale": 3}, "1"),
            json_call("doubled", {"n": 3}, "2"),
            json_call("positive", {"n": 2.0}, "3"),
            json_call("positive", {"n": 0}, "4"),
            json_call("floats", {"xs": [1, 2.5]}, "5"),
        ]
    )
    direct = [on_thread(lambda: run_direct(dispatcher, "doubled", {"n": 3})) for _ in range(2)] + [
        on_thread(lambda: run_direct(dispatcher, "place", {"p": {"x": 1, "y": 2}}))
    ]
    dispatcher.close()
    assert [o.result for o in outcomes if isinstance(o, CallRecord)] == [
        "Point 3,6",
        6,
        "int",
        ["float", "float"],
    ]
    (refused,) = [o for o in outcomes if isinstance(o, RejectedCall)]
    assert refused.id == "4"
    assert [r.result for r in direct] == [6, 6, "Point 1,2"]


def test_is_async_follows_a_reassigned_function() -> None:
    @tool
    def flip() -> str:
        """Sync at first."""
        return "sync"

    async def flip_async() -> str:
        return "async"

    def flip_sync() -> str:
        return "sync again"

    assert not flip.is_async
    flip.function = flip_async
    assert flip.is_async
    flip.function = flip_sync
    assert not flip.is_async
    assert flip() == "sync again"
