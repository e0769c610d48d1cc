"""`unit_mismatch`: a result's number stated in another unit of its kind, and nothing else."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooluse import Agent, RunResult, Toolbox, tool
from tooluse.models import ScriptedModel
from tooluse.run._unitcheck import unit_mismatch

WEATHER = ("get_weather", {"city": "Oslo", "temperature_c": 3.0, "conditions": "snow"})
STOCK = ("check_stock", {"sku": "C100", "price_usd": 229.0, "quantity": 7})
ROUTE = ("get_route", {"from": "Lyon", "distance_km": 465.2, "stops": [{"name": "Dijon"}]})
CONVERTED = ("convert_units", 37.4)
TASK = "What is the temperature in Oslo in Fahrenheit, and what do 2 monitors (C100) cost?"
RESULTS = [WEATHER, STOCK, ROUTE, CONVERTED]

MISMATCHES = [
    ("It is 3 degrees Fahrenheit in Oslo.", "3 degrees Fahrenheit", "temperature_c"),
    ("Oslo: 3°F and snowing.", "3°F", "temperature_c"),
    ("The temperature is 3 ° F.", "3 ° F", "temperature_c"),
    ("It is 3 Fahrenheit.", "3 Fahrenheit", "temperature_c"),
    ("One monitor costs £229.", "£229", "price_usd"),
    ("One monitor costs 229.00 euros.", "229.00 euros", "price_usd"),
    ("One monitor costs 229 GBP.", "229 GBP", "price_usd"),
    ("One monitor costs 229 pounds.", "229 pounds", "price_usd"),  # or a weight: wrong too
    ("The route is 465.2 miles long.", "465.2 miles", "distance_km"),
    ("The route is about 465 miles.", "465 miles", "distance_km"),
]

NOT_MISMATCHES = [
    "It is 3 °C in Oslo, which is 37.4 °F.",  # the result's own unit, and a converted value
    "It is 3 degrees in Oslo.",  # no unit stated
    "One monitor costs $229.",  # `$` may be US dollars
    "One monitor costs 229 dollars.",
    "2 monitors cost 458 GBP.",  # a number no result gives
    "2 monitors cost 2 GBP.",  # a number the task gives
    "It is 37.4 degrees Celsius.",  # a result without a unit: a conversion's
    "There are 7 monitors, 7 °F.",  # `quantity` has no unit in its name
    "It is 465.2 °F on the road.",  # a distance stated as a temperature: another slip
    "Version 3 Fahrenheit-ready.",  # not a unit word after the number
]


@pytest.mark.parametrize(("answer", "claim", "field"), MISMATCHES)
def test_a_results_number_in_another_unit_of_its_kind_is_found(
    answer: str, claim: str, field: str
) -> None:
    found = unit_mismatch(answer, TASK, RESULTS)
    assert found is not None
    assert (found.claim, found.field) == (claim, field)


@pytest.mark.parametrize("answer", NOT_MISMATCHES)
def test_what_is_not_a_clear_relabelling_passes(answer: str) -> None:
    assert unit_mismatch(answer, TASK, RESULTS) is None


def test_a_number_given_in_the_stated_unit_elsewhere_passes() -> None:
    both = [WEATHER, ("get_weather", {"city": "Reno", "temperature_f": 3.0})]
    assert unit_mismatch("It is 3 °F.", "How cold?", both) is None
    assert unit_mismatch("It is 3 °F.", "How cold?", [WEATHER, ("count", 3)]) is None
    assert unit_mismatch("It is 3 °F.", "How cold?", [WEATHER, ("say", "3 below")]) is None


def test_a_one_letter_field_is_no_unit_and_nested_fields_are_read() -> None:
    assert unit_mismatch("It is 3 °F.", "?", [("t", {"c": 3})]) is None
    nested = [("forecast", {"days": [{"day": "Mon", "high_c": 12.5}]})]
    found = unit_mismatch("Monday's high is 12.5 °F.", "?", nested)
    assert found is not None and found.field == "high_c"


def test_the_note_names_the_result_its_unit_and_the_stated_one() -> None:
    found = unit_mismatch("It is 3 degrees Fahrenheit in Oslo.", TASK, RESULTS)
    assert found is not None
    assert found.note == (
        'Check your answer: it says "3 degrees Fahrenheit", but 3 is `temperature_c` in the '
        "result of get_weather, in degrees Celsius, not degrees Fahrenheit. Convert it first "
        "(with a tool, if one converts it) and give your corrected final answer."
    )
    pounds = unit_mismatch("It costs 229 pounds.", TASK, RESULTS)
    assert pounds is not None and pounds.note.endswith(
        "in US dollars, not British pounds. Convert it first (with a tool, if one converts it) "
        "and give your corrected final answer."
    )


@tool
def get_weather(city: str) -> dict[str, Any]:
    """The current weather in a city.

    Args:
        city: the city's name
    """
    return {"city": city, "temperature_c": 3.0, "conditions": "snow"}


@tool
def convert_units(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a temperature.

    Args:
        value: the number to convert
        from_unit: C or F
        to_unit: C or F
    """
    return round(value * 9 / 5 + 32, 1) if from_unit == "C" else round((value - 32) * 5 / 9, 1)


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"tool_calls": [{"id": call_id, "type": "function", "function": function}]}


def notes(result: RunResult) -> list[str]:
    return [m.content or "" for m in result.messages if m.role == "user"][1:]


def test_a_run_whose_answer_relabels_a_result_gets_one_note_and_a_round_asking_for_a_call() -> None:
    replies: list[dict[str, Any] | str] = [
        call("c1", "get_weather", city="Oslo"),
        "It is 3 degrees Fahrenheit in Oslo.",
        call("c2", "convert_units", value=3, from_unit="C", to_unit="F"),
        "It is 37.4 °F in Oslo.",
    ]
    model = ScriptedModel(replies)
    tools = Toolbox([get_weather, convert_units])
    result = Agent(model, tools, check_answers=True).run("How warm is Oslo in Fahrenheit?")
    assert result.status == "completed" and result.answer == "It is 37.4 °F in Oslo."
    [note] = notes(result)
    assert note.startswith('Check your answer: it says "3 degrees Fahrenheit", but 3 is ')
    assert [c.name for c in result.calls] == ["get_weather", "convert_units"]
    # The round after the note asks for a call (a constrained model must make one),
    # and once it has run, rounds are as before.
    choices = [r.tool_choice for r in model.requests]
    assert choices == ["auto", "auto", "required", "auto"]
    # Without the check the first answer ends the run.
    plain = Agent(ScriptedModel(replies[:2]), tools).run("How warm is Oslo?")
    assert plain.answer == "It is 3 degrees Fahrenheit in Oslo." and notes(plain) == []
