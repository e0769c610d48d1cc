"""`Limits`: an agent's bounds besides its rounds, given as one value."""

from __future__ import annotations

from typing import Any

import pytest

from examples.seed_tools import toolbox as seed_tools
from tooluse import Agent, Limits, UsageError
from tooluse.models import ScriptedModel


@pytest.mark.parametrize(
    ("bound", "message"),
    [
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"max_calls_per_turn": 0}, "max_calls_per_turn"),
        ({"tool_timeout": -1.0}, "tool_timeout"),
        ({"script_timeout": 0.0}, "script_timeout"),
        ({"cycle_limit": 0}, "cycle_limit"),
    ],
)
def test_a_bound_that_could_never_hold_is_refused_when_made(
    bound: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        Limits(**bound)


def test_an_agent_without_limits_has_the_defaults() -> None:
    agent = Agent(ScriptedModel([]), seed_tools)
    assert agent.limits == Limits()
    assert agent.limits.tool_timeout == 60.0 and agent.limits.cycle_limit == 5


def test_one_limits_value_bounds_every_agent_given_it() -> None:
    shared = Limits(max_calls_per_turn=2, cycle_limit=None)
    reply = {
        "tool_calls": [
            {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": "lookup_capital", "arguments": '{"country": "France"}'},
            }
            for i in range(3)
        ]
    }
    for _ in range(2):
        agent = Agent(ScriptedModel([reply, {"content": "Paris"}]), seed_tools, limits=shared)
        result = agent.run("capital of France, three times")
        assert result.status == "completed"
        assert len(result.calls) == 2 and len(result.rejected) == 1
        assert "at most 2 run per turn" in result.rejected[0].error
