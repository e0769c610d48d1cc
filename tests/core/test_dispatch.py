"""The dispatcher: validation, concurrent execution, timeouts, failures, the ledger."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import time
import warnings
from typing import Any

from tooluse import (
    CallRecord,
    Dispatcher,
    Ledger,
    ModelRetry,
    RejectedCall,
    Toolbox,
    ToolCall,
    tool,
)


def call(name: str, arguments: dict[str, Any] | str, call_id: str = "c") -> ToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(call_id, name, text)


async def test_sync_tools_run_concurrently_in_threads() -> None:
    barrier = threading.Barrier(2, timeout=10)

    @tool
    def meet(who: str) -> str:
        """Wait until the other call arrives too."""
        barrier.wait()  # only passes if both calls run at the same time
        return who

    dispatcher = Dispatcher(Toolbox([meet]))
    outcomes = await dispatcher.run(
        [call("meet", {"who": "a"}, "1"), call("meet", {"who": "b"}, "2")]
    )
    dispatcher.close()
    assert [o.result for o in outcomes if isinstance(o, CallRecord)] == ["a", "b"]


async def test_async_tools_run_concurrently_on_the_loop() -> None:
    ready = asyncio.Event()

    @tool
    async def waiter() -> str:
        """Wait for the signal."""
        await asyncio.wait_for(ready.wait(), 10)
        return "woke"

    @tool
    async def signal() -> str:
        """Send the signal."""
        ready.set()
        return "sent"

    outcomes = await Dispatcher(Toolbox([waiter, signal])).run(
        [call("waiter", {}, "1"), call("signal", {}, "2")]
    )
    assert [o.content for o in outcomes] == ["woke", "sent"]


async def test_failures_never_lose_sibling_results() -> None:
    @tool(timeout=0.2)
    async def hang() -> str:
        """Never answers."""
        await asyncio.sleep(3600)
        return "never"

    @tool
    def boom(x: int) -> int:
        """Raises."""
        raise RuntimeError(f"exploded on {x}")

    @tool
    def fine(x: int) -> int:
        """Works."""
        return x * 2

    outcomes = await Dispatcher(Toolbox([hang, boom, fine])).run(
        [
            call("hang", {}, "1"),
            call("boom", {"x": 1}, "2"),
            call("fine", {"x": "no"}, "3"),
            call("fine", {"x": 21}, "4"),
        ]
    )
    assert [o.id for o in outcomes] == ["1", "2", "3", "4"]
    hang_rec, boom_rec, rejected, ok = outcomes
    assert isinstance(hang_rec, CallRecord) and hang_rec.error == "hang timed out after 0.2 s"
    assert isinstance(boom_rec, CallRecord)
    assert boom_rec.error == "boom failed: RuntimeError: exploded on 1"
    assert isinstance(rejected, RejectedCall) and "must be integer" in rejected.error
    assert isinstance(ok, CallRecord) and ok.result == 42 and ok.content == "42"


async def test_hung_sync_tool_is_abandoned_after_its_timeout() -> None:
    release = threading.Event()

    @tool(timeout=0.2)
    def stuck() -> str:
        """Blocks a thread."""
        release.wait(30)
        return "late"

    dispatcher = Dispatcher(Toolbox([stuck]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (outcome,) = await dispatcher.run([call("stuck", {})])
        (again,) = await dispatcher.run([call("stuck", {})])
    dispatcher.close()  # must not wait for the stuck thread
    assert dispatcher.abandoned == 2
    release.set()
    assert isinstance(outcome, CallRecord) and outcome.error == "stuck timed out after 0.2 s"
    assert isinstance(again, CallRecord) and again.error == outcome.error
    assert [str(w.message).split(";")[0] for w in caught] == [
        "stuck is still running after its call was given up on"
    ]
    deadline = time.monotonic() + 10
    while dispatcher.abandoned and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert dispatcher.abandoned == 0


async def test_model_retry_message_goes_to_the_model_verbatim() -> None:
    @tool
    def find(order_id: str) -> str:
        """Find an order."""
        raise ModelRetry("order ids look like 'A-1234'; check the id and call again")

    (outcome,) = await Dispatcher(Toolbox([find])).run([call("find", {"order_id": "1234"})])
    assert outcome.content == "Error: order ids look like 'A-1234'; check the id and call again"


async def test_result_that_is_not_json_is_an_error_not_a_crash() -> None:
    @tool
    def weird() -> Any:
        """Returns something unserializable."""
        return threading.Lock()

    (outcome,) = await Dispatcher(Toolbox([weird])).run([call("weird", {})])
    assert isinstance(outcome, CallRecord) and "cannot be sent as JSON" in (outcome.error or "")


async def test_unknown_and_nameless_calls_list_what_exists() -> None:
    @tool
    def get_weather(city: str) -> str:
        """Weather."""
        return city

    dispatcher = Dispatcher(Toolbox([get_weather]))
    unknown, nameless = await dispatcher.run(
        [call("get_wether", {"city": "x"}, "1"), call("", {}, "2")]
    )
    assert isinstance(unknown, RejectedCall)
    assert "no tool named 'get_wether'; did you mean 'get_weather'?" in unknown.error
    assert isinstance(nameless, RejectedCall) and "has no tool name" in nameless.error
    assert "Available tools: get_weather" in nameless.error


async def test_calls_beyond_the_turn_limit_are_refused_with_a_reason() -> None:
    ran: list[int] = []

    @tool
    def count(i: int) -> int:
        """Count."""
        ran.append(i)
        return i

    outcomes = await Dispatcher(Toolbox([count]), max_calls_per_turn=3).run(
        [call("count", {"i": i}, str(i)) for i in range(5)]
    )
    assert sorted(ran) == [0, 1, 2]
    refused = [o for o in outcomes if isinstance(o, RejectedCall)]
    assert len(refused) == 2 and "at most 3 run per turn" in refused[0].error


async def test_concurrency_limit_is_respected() -> None:
    running = peak = 0

    @tool
    async def work() -> int:
        """Work a little."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return peak

    await Dispatcher(Toolbox([work]), max_concurrency=2).run(
        [call("work", {}, str(i)) for i in range(8)]
    )
    assert peak == 2


async def test_a_ledger_replays_the_successes_of_a_failed_script_in_order() -> None:
    sent: list[str] = []

    @tool(side_effects=True)
    def send_email(to: str) -> str:
        """Send an e-mail."""
        sent.append(to)
        return f"sent to {to}"

    dispatcher = Dispatcher(Toolbox([send_email]))
    ledger = Ledger()

    async def script(*recipients: str) -> list[CallRecord]:
        outcomes = [
            await dispatcher.call("send_email", {"to": to}, call_id=str(i), ledger=ledger)
            for i, to in enumerate(recipients)
        ]
        return [o for o in outcomes if isinstance(o, CallRecord)]

    await script("a@x", "b@x")
    ledger.script_ended(ok=False)
    retried = await script("a@x", "c@x", "b@x")
    ledger.script_ended(ok=True)
    after_success = await script("a@x")
    dispatcher.close()
    assert sent == ["a@x", "b@x", "c@x", "b@x", "a@x"]
    assert [(c.result, c.replayed) for c in retried] == [
        ("sent to a@x", True),
        ("sent to c@x", False),
        ("sent to b@x", False),
    ]
    assert [c.replayed for c in after_success] == [False]


async def test_repairs_are_recorded_on_the_call() -> None:
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    (outcome,) = await Dispatcher(Toolbox([echo])).run([call("echo", '{"text": "hi",}')])
    assert isinstance(outcome, CallRecord) and outcome.result == "hi"
    assert outcome.repairs == ("removed trailing commas",)


async def test_a_tool_mutating_its_arguments_does_not_rewrite_the_record() -> None:
    from tooluse import Tool

    def append(items: list[str]) -> int:
        items.append("added by the tool")
        return len(items)

    raw = Tool.from_schema(
        "append",
        "Append.",
        {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}}},
        append,
    )

    @tool
    def typed_append(items: list[str]) -> int:
        """Append."""
        items.append("added")
        return len(items)

    outcomes = await Dispatcher(Toolbox([raw, typed_append])).run(
        [call("append", {"items": ["a"]}, "1"), call("typed_append", {"items": ["a"]}, "2")]
    )
    assert [o.arguments for o in outcomes] == [{"items": ["a"]}, {"items": ["a"]}]
    assert [o.content for o in outcomes] == ["2", "2"]


async def test_call_nowait_refuses_at_once_and_records_as_run_does() -> None:
    @tool
    def double(x: int) -> int:
        """Double."""
        return x * 2

    dispatcher = Dispatcher(Toolbox([double]))
    # A quick sync tool is usually answered at once, but how quick is up to the
    # machine's load: an outcome not ready yet comes back as an awaitable.
    outcome = dispatcher.call_nowait("double", {"x": 21}, call_id="1")
    ready = outcome if isinstance(outcome, CallRecord | RejectedCall) else await outcome
    refused = dispatcher.call_nowait("double", {"x": "no"}, call_id="2")
    (from_json,) = await dispatcher.run([call("double", {"x": 21}, "1")])
    dispatcher.close()
    assert isinstance(ready, CallRecord) and ready.result == 42
    assert isinstance(refused, RejectedCall) and "must be integer" in refused.error
    assert isinstance(from_json, CallRecord)
    fields = ready.to_dict(), from_json.to_dict()
    for record in fields:
        for varies in ("started_at", "duration_s", "source"):
            del record[varies]
    assert fields[0] == fields[1]


async def test_a_slow_sync_call_comes_back_as_an_awaitable_and_still_times_out() -> None:
    release = threading.Event()

    @tool(timeout=0.2)
    def stuck() -> str:
        """Blocks a thread."""
        release.wait(30)
        return "late"

    @tool
    def double(x: int) -> int:
        """Double."""
        return x * 2

    dispatcher = Dispatcher(Toolbox([stuck, double]))
    pending = dispatcher.call_nowait("stuck", {}, call_id="1")
    assert not isinstance(pending, CallRecord | RejectedCall)
    outcome = await pending
    # The thread the stuck call holds is not needed for the next calls.
    after = [
        await dispatcher.call(name, args, call_id="2")
        for name, args in [("double", {"x": 2}), ("stuck", {}), ("double", {"x": 3})]
    ]
    dispatcher.close()
    release.set()
    assert isinstance(outcome, CallRecord) and outcome.error == "stuck timed out after 0.2 s"
    assert [o.content for o in after] == ["4", "Error: stuck timed out after 0.2 s", "6"]


async def test_an_abandoned_slow_call_gives_its_concurrency_slot_back() -> None:
    release = threading.Event()

    @tool
    def slow() -> str:
        """Blocks until released."""
        release.wait(30)
        return "done"

    @tool
    async def quick() -> str:
        """Answers at once."""
        return "quick"

    dispatcher = Dispatcher(Toolbox([slow, quick]), max_concurrency=1)
    pending = dispatcher.call_nowait("slow", {}, call_id="1")
    assert not isinstance(pending, CallRecord | RejectedCall)
    asyncio.ensure_future(pending).cancel()  # before it ever ran: nobody awaits it
    outcome = await asyncio.wait_for(dispatcher.call("quick", {}, call_id="2"), 5)
    dispatcher.close()
    release.set()
    assert isinstance(outcome, CallRecord) and outcome.result == "quick"


async def test_concurrency_limit_holds_for_sync_tools_called_one_by_one() -> None:
    lock = threading.Lock()
    running = peak = 0

    @tool
    def work() -> int:
        """Hold a thread for a moment."""
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        threading.Event().wait(0.02)
        with lock:
            running -= 1
        return 1

    dispatcher = Dispatcher(Toolbox([work]), max_concurrency=2)
    outcomes = await asyncio.gather(
        *(dispatcher.call("work", {}, call_id=str(i)) for i in range(8))
    )
    dispatcher.close()
    assert all(isinstance(o, CallRecord) and o.result == 1 for o in outcomes)
    assert peak == 2


async def test_a_tool_raising_timeout_error_without_a_timeout_is_a_failure() -> None:
    @tool
    def flaky() -> str:
        """Its own connection timed out."""
        raise TimeoutError("connect timed out")

    (outcome,) = await Dispatcher(Toolbox([flaky]), timeout=None).run([call("flaky", {})])
    assert isinstance(outcome, CallRecord)
    assert outcome.error == "flaky failed: TimeoutError: connect timed out"


async def test_decoded_arguments_are_refused_like_their_text() -> None:
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    dispatcher = Dispatcher(Toolbox([echo]), max_argument_bytes=100)
    for name, arguments in [("ecko", {"text": "hi"}), ("echo", {"text": "x" * 200})]:
        decoded = dispatcher.call_nowait(name, arguments, call_id="1")
        text = dispatcher.call_nowait(name, json.dumps(arguments), call_id="1")
        assert isinstance(decoded, RejectedCall) and decoded == text


async def test_a_call_cancelled_while_waiting_for_a_slot_gives_way() -> None:
    gate = asyncio.Event()
    holding = asyncio.Event()

    @tool
    async def hold() -> str:
        """Hold the only slot until the gate opens."""
        holding.set()
        await gate.wait()
        return "held"

    @tool
    async def quick() -> str:
        """Answer at once."""
        return "quick"

    dispatcher = Dispatcher(Toolbox([hold, quick]), timeout=None, max_concurrency=1)
    holder = asyncio.ensure_future(dispatcher.call("hold", {}, call_id="1"))
    await asyncio.wait_for(holding.wait(), 10)
    # Started while the holder runs, both wait for the slot.
    first = asyncio.ensure_future(dispatcher.call("quick", {}, call_id="2"))
    second = asyncio.ensure_future(dispatcher.call("quick", {}, call_id="3"))
    await asyncio.sleep(0)
    assert not first.done() and not second.done()
    gate.set()
    first.cancel()  # after the holder is woken: its slot skips the cancelled waiter
    held, answered = await holder, await asyncio.wait_for(second, 5)
    assert isinstance(held, CallRecord) and held.result == "held"
    assert isinstance(answered, CallRecord) and answered.result == "quick"
    assert first.cancelled()


async def test_running_and_waiting_count_the_calls_holding_and_awaiting_a_slot() -> None:
    gate = asyncio.Event()
    holding = asyncio.Event()

    @tool
    async def hold() -> str:
        """Hold the only slot until the gate opens."""
        holding.set()
        await gate.wait()
        return "held"

    @tool
    def quick() -> str:
        """Answer at once."""
        return "quick"

    dispatcher = Dispatcher(Toolbox([hold, quick]), timeout=None, max_concurrency=1)
    assert (dispatcher.running, dispatcher.waiting) == (0, 0)
    holder = asyncio.ensure_future(dispatcher.call("hold", {}, call_id="1"))
    await asyncio.wait_for(holding.wait(), 10)
    queued = [asyncio.ensure_future(dispatcher.call("quick", {}, call_id=str(i))) for i in (2, 3)]
    deadline = time.monotonic() + 10
    while dispatcher.waiting < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert (dispatcher.running, dispatcher.waiting) == (1, 2)
    gate.set()
    outcomes = await asyncio.wait_for(asyncio.gather(holder, *queued), 10)
    dispatcher.close()
    assert [o.content for o in outcomes] == ["held", "quick", "quick"]
    assert (dispatcher.running, dispatcher.waiting) == (0, 0)


async def test_the_threads_of_a_closed_or_dropped_dispatcher_end() -> None:
    @tool
    def double(x: int) -> int:
        """Double."""
        return x * 2

    for close in (True, False):
        before = set(threading.enumerate())
        dispatcher = Dispatcher(Toolbox([double]))
        outcome = await dispatcher.call("double", {"x": 2}, call_id="1")
        assert isinstance(outcome, CallRecord) and outcome.result == 4
        started = set(threading.enumerate()) - before
        if close:
            dispatcher.close()
        del dispatcher
        gc.collect()
        for thread in started:
            thread.join(5)
        assert started and not any(t.is_alive() for t in started)


async def test_a_call_nobody_awaits_leaves_no_coroutine_behind() -> None:
    @tool
    async def later() -> str:
        """Answer after a pause."""
        await asyncio.sleep(0.01)
        return "later"

    dispatcher = Dispatcher(Toolbox([later]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pending = dispatcher.call_nowait("later", {}, call_id="1")
        assert not isinstance(pending, CallRecord | RejectedCall)
        del pending  # a script that ended before its call was started
        gc.collect()
    assert [str(w.message) for w in caught] == []
    outcome = await dispatcher.call("later", {}, call_id="2")
    assert isinstance(outcome, CallRecord) and outcome.result == "later"
