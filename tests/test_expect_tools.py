"""An expectation that no call to the toolbox could meet is refused before the run starts."""

from __future__ import annotations

import pytest

from tooluse import Agent, Expect, Tool, Toolbox, UsageError, tool
from tooluse.models import ScriptedModel


@tool
def get_current_weather(location: str, unit: str = "celsius") -> str:
    """The weather now.

    Args:
        location: city and country, e.g. 'Paris, France'
        unit: celsius or fahrenheit
    """
    return f"18 {unit} in {location}"


@tool
def lookup_capital(country: str) -> str:
    """The capital city of a country.

    Args:
        country: the country's English name
    """
    return "Paris"


TOOLS = Toolbox([get_current_weather, lookup_capital])


def test_a_tool_not_in_the_toolbox_is_refused_with_the_names_it_has() -> None:
    expect = Expect(tool="get_weather", argument="location", values=["Paris"])
    with pytest.raises(UsageError) as caught:
        expect.check_tools(TOOLS)
    assert str(caught.value) == (
        "Expect(tool='get_weather') names no tool in the toolbox "
        "(did you mean 'get_current_weather'?); have: get_current_weather, lookup_capital"
    )


def test_an_argument_the_tool_does_not_take_is_refused() -> None:
    expect = Expect(tool="get_current_weather", argument="locations", values=["Paris"])
    with pytest.raises(UsageError) as caught:
        expect.check_tools(TOOLS)
    assert str(caught.value) == (
        "Expect(argument='locations'): get_current_weather has no parameter 'locations' "
        "(did you mean 'location'?); have: location, unit"
    )


def test_an_argument_no_tool_takes_is_refused() -> None:
    with pytest.raises(UsageError, match="no tool has a parameter 'city'; have: country, "):
        Expect(argument="city", values=["Paris"]).check_tools(TOOLS)


@pytest.mark.parametrize(
    "expect",
    [
        Expect(calls=2),
        Expect(tool="lookup_capital", calls=1),
        Expect(tool="get_current_weather", argument="location", values=["Paris"]),
        Expect(argument="country", values=["France"]),
    ],
)
def test_expectations_the_toolbox_can_meet_pass(expect: Expect) -> None:
    expect.check_tools(TOOLS)


def test_a_tool_open_to_any_argument_can_meet_any_argument() -> None:
    open_tool = Tool.from_schema(
        "search", "Search.", {"type": "object", "additionalProperties": True}, lambda **kw: kw
    )
    Expect(tool="search", argument="anything", values=["x"]).check_tools(Toolbox([open_tool]))


def test_the_agent_refuses_it_before_asking_the_model() -> None:
    model = ScriptedModel([{"content": "Paris is mild."}])
    agent = Agent(model, TOOLS)
    with pytest.raises(UsageError, match="Expect\\(tool='get_weather'\\) names no tool"):
        agent.run("Weather in Paris?", expect=Expect(tool="get_weather", calls=1))
