"""The dispatcher through its own interface: `Dispatcher.run` and `Dispatcher.call`.

Validation comes before execution, a raising tool becomes a failed record, a timeout
returns while the tool still runs, a turn's calls run at once, and every outcome is a
record handed to ``on_ended`` as it is made.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from tooluse import CallRecord, Dispatcher, RejectedCall, Toolbox, ToolCall, tool
from tooluse._records import Outcome


def call(call_id: str, name: str, arguments: dict[str, Any] | str) -> ToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(call_id, name, text)


async def test_invalid_calls_are_refused_before_the_tool_runs() -> None:
    ran: list[int] = []

    @tool
    def record_it(n: int) -> int:
        """Remember n."""
        ran.append(n)
        return n

    dispatcher = Dispatcher(Toolbox([record_it]))
    try:
        outcomes = await dispatcher.run(
            [
                call("1", "record_it", {"n": "seven"}),  # wrong type
                call("2", "record_it", {}),  # missing argument
                call("3", "record_it", "{not json"),  # not JSON
                call("4", "record_itt", {"n": 1}),  # unknown tool
            ],
            round_=4,
        )
    finally:
        dispatcher.close()
    assert ran == []
    refused = [o for o in outcomes if isinstance(o, RejectedCall)]
    assert refused == outcomes
    assert [o.id for o in refused] == ["1", "2", "3", "4"]
    assert all(o.round == 4 and o.kind == "invalid" for o in refused)
    assert "record_it" in refused[3].error  # the refusal names what exists
    assert all(o.content.startswith("Error: ") for o in refused)


async def test_a_valid_sibling_of_refused_calls_still_runs() -> None:
    ran: list[int] = []

    @tool
    def record_it(n: int) -> int:
        """Remember n."""
        ran.append(n)
        return n

    dispatcher = Dispatcher(Toolbox([record_it]))
    try:
        bad, good = await dispatcher.run(
            [call("1", "record_it", {"n": [1]}), call("2", "record_it", {"n": 2})]
        )
    finally:
        dispatcher.close()
    assert isinstance(bad, RejectedCall)
    assert isinstance(good, CallRecord) and good.ok and good.result == 2
    assert ran == [2]


async def test_a_tool_that_raises_becomes_a_failed_record() -> None:
    @tool
    def explode(why: str) -> str:
        """Raise."""
        raise ValueError(why)

    dispatcher = Dispatcher(Toolbox([explode]))
    try:
        (outcome,) = await dispatcher.run([call("x", "explode", {"why": "no fuel"})], round_=2)
        again = await dispatcher.call("explode", {"why": "still none"}, call_id="y")
    finally:
        dispatcher.close()
    assert isinstance(outcome, CallRecord)
    assert not outcome.ok
    assert outcome.error == "explode failed: ValueError: no fuel"
    assert outcome.content == "Error: explode failed: ValueError: no fuel"
    assert outcome.result is None and outcome.round == 2
    assert isinstance(again, CallRecord)
    assert again.error == "explode failed: ValueError: still none"
    assert again.source == "script"


async def test_a_timeout_returns_while_the_tool_still_runs() -> None:
    release = threading.Event()
    finished = threading.Event()

    @tool(timeout=0.1)
    def stuck() -> str:
        """Block until released."""
        release.wait(30)
        finished.set()
        return "late"

    dispatcher = Dispatcher(Toolbox([stuck]))
    try:
        with pytest.warns(RuntimeWarning, match="stuck is still running after its call"):
            (outcome,) = await dispatcher.run([call("t", "stuck", {})])
        # The run came back on the timeout, not on the tool: the tool has not finished.
        assert not finished.is_set()
        assert dispatcher.abandoned == 1
    finally:
        release.set()
        dispatcher.close()
    assert isinstance(outcome, CallRecord)
    assert outcome.error == "stuck timed out after 0.1 s"
    assert outcome.result is None


async def test_the_dispatcher_default_timeout_applies_to_tools_without_their_own() -> None:
    release = threading.Event()

    @tool
    def waits() -> str:
        """Block until released."""
        release.wait(30)
        return "late"

    dispatcher = Dispatcher(Toolbox([waits]), timeout=0.1)
    try:
        with pytest.warns(RuntimeWarning, match="waits is still running after its call"):
            (outcome,) = await dispatcher.run([call("t", "waits", {})])
        assert dispatcher.abandoned == 1
    finally:
        release.set()
        dispatcher.close()
    assert isinstance(outcome, CallRecord)
    assert outcome.error == "waits timed out after 0.1 s"


async def test_a_turn_of_calls_runs_in_parallel() -> None:
    # Three calls meet at a barrier: it only opens if all three run at once.
    barrier = threading.Barrier(3, timeout=10)

    @tool
    def meet(who: str) -> str:
        """Wait for the others."""
        barrier.wait()
        return who

    dispatcher = Dispatcher(Toolbox([meet]))
    try:
        outcomes = await dispatcher.run([call(w, "meet", {"who": w}) for w in "abc"])
    finally:
        dispatcher.close()
    records = [o for o in outcomes if isinstance(o, CallRecord) and o.ok]
    assert [o.content for o in records] == ["a", "b", "c"]


async def test_records_carry_the_call_and_reach_on_ended_as_they_are_made() -> None:
    ended: list[Outcome] = []

    @tool
    def double(x: int) -> int:
        """Double x."""
        return x * 2

    dispatcher = Dispatcher(Toolbox([double]), on_ended=ended.append)
    try:
        outcomes = await dispatcher.run(
            [call("ok", "double", {"x": 21}), call("bad", "double", {"x": "z"})],
            round_=3,
            source="plan",
        )
    finally:
        dispatcher.close()
    record, refused = outcomes
    assert isinstance(record, CallRecord)
    assert (record.id, record.name, record.arguments) == ("ok", "double", {"x": 21})
    assert (record.result, record.error, record.round, record.source) == (42, None, 3, "plan")
    assert record.started_at > 0 and record.duration_s >= 0
    assert record.to_dict()["result"] == 42
    assert isinstance(refused, RejectedCall)
    assert (refused.id, refused.round, refused.source) == ("bad", 3, "plan")
    # The refusal is made during validation, before the valid call has run.
    assert ended == [refused, record]
