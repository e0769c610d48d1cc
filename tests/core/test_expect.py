"""The expected-cardinality check catches a model that silently drops part of a request."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from examples.seed_tools import toolbox as seed_tools
from tooluse import Agent, Expect, Message, UsageError
from tooluse.models import ScriptedModel

CITIES = ["Paris", "London", "Tokyo", "Nairobi", "New York"]


def weather_for(cities: Sequence[str]) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": f"w{i}",
                "type": "function",
                "function": {
                    "name": "get_current_weather",
                    "arguments": json.dumps({"location": c}),
                },
            }
            for i, c in enumerate(cities)
        ]
    }


def test_a_model_that_drops_items_is_flagged_truncated() -> None:
    model = ScriptedModel([weather_for(CITIES[:3]), {"content": "All five cities are mild."}])
    result = Agent(model, seed_tools).run(
        "Weather in all five cities?",
        expect=Expect(tool="get_current_weather", argument="location", values=CITIES),
    )
    assert result.status == "truncated"
    assert result.answer == "All five cities are mild."  # kept, but not trusted
    assert result.error == (
        "2 of 5 expected location values were never covered by calls to "
        "get_current_weather: Nairobi, New York"
    )


def test_a_complete_run_stays_completed() -> None:
    model = ScriptedModel([weather_for(CITIES), {"content": "done"}])
    result = Agent(model, seed_tools).run(
        "x",
        expect=[Expect(calls=5), Expect(argument="location", values=[c.upper() for c in CITIES])],
    )
    assert result.status == "completed" and result.error is None


def test_failed_calls_do_not_count() -> None:
    model = ScriptedModel([weather_for(["Paris", "Atlantis"]), {"content": "done"}])
    result = Agent(model, seed_tools).run("x", expect=Expect(calls=2, tool="get_current_weather"))
    assert result.status == "truncated"
    assert result.error == "expected 2 successful calls to get_current_weather, 1 ran"


def test_a_scripted_responder_counting_down_is_caught() -> None:
    def lazy(messages: Sequence[Message]) -> dict[str, Any]:
        done = sum(1 for m in messages if m.role == "tool")
        return weather_for(CITIES[done : done + 2]) if done < 4 else {"content": "done"}

    result = Agent(ScriptedModel(lazy), seed_tools).run("x", expect=Expect(calls=len(CITIES)))
    assert result.status == "truncated" and "expected 5 successful tool calls, 4 ran" in (
        result.error or ""
    )


def test_expect_needs_something_to_check() -> None:
    with pytest.raises(UsageError):
        Expect()
    with pytest.raises(UsageError):
        Expect(values=["a"])
