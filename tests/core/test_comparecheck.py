"""`refuted_comparison`: "warmer in London than in Paris" against the two records' numbers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooluse import Agent, RunResult, Toolbox, tool
from tooluse.models import ScriptedModel
from tooluse.run._comparecheck import refuted_comparison

PARIS = ("get_weather", {"city": "Paris", "temperature_c": 18.0, "conditions": "partly cloudy"})
LONDON = ("get_weather", {"city": "London", "temperature_c": 14.0, "conditions": "light rain"})
STOCK = (
    "list_stock",
    [
        {"sku": "A100", "name": "USB-C cable", "quantity": 120, "price_usd": 9.99},
        {"sku": "B100", "name": "Wireless mouse", "quantity": 35, "price_usd": 24.99},
    ],
)
RESULTS = [PARIS, LONDON, STOCK]

REFUTED = [
    ("The temperature in London is warmer than Paris right now.", "London", "Paris"),
    ("It is warmer in London than in Paris.", "London", "Paris"),
    ("Paris is colder than London today.", "Paris", "London"),
    ("London has a higher temperature than Paris.", "London", "Paris"),
    ("London is warmer than Paris and Rome.", "London", "Paris"),  # Rome: not described
]

NOT_REFUTED = [
    "It is warmer in Paris than in London: 18 °C against 14 °C.",  # true
    "London is colder than Paris.",  # true
    "Is London warmer than Paris?",  # a question
    "London is not warmer than Paris.",  # a negation
    "London might be warmer than Paris.",  # a hedge
    "If London were warmer than Paris, we would go.",  # a conditional
    "London is warmer than yesterday.",  # one side not described
    "London is warmer and drier than Paris, more than Rome.",  # two comparatives
    "London feels like Paris.",  # no comparative
    # Two number fields shared and no temperature word: which one is meant is unclear.
    "The USB-C cable has more than the Wireless mouse.",
]


@pytest.mark.parametrize(("answer", "first", "second"), REFUTED)
def test_a_comparison_the_records_refute_is_found(answer: str, first: str, second: str) -> None:
    found = refuted_comparison(answer, RESULTS)
    assert found is not None
    assert (found.first, found.second, found.field) == (first, second, "temperature_c")


@pytest.mark.parametrize("answer", NOT_REFUTED)
def test_what_the_records_do_not_clearly_refute_passes(answer: str) -> None:
    assert refuted_comparison(answer, RESULTS) is None


def test_a_sentence_naming_a_third_described_thing_passes() -> None:
    rome = ("get_weather", {"city": "Rome", "temperature_c": 21.0})
    assert refuted_comparison("London is warmer than Paris and Rome.", [*RESULTS, rome]) is None


def test_one_shared_number_field_decides_where_no_word_names_it() -> None:
    counts = [("count", {"team": "Red", "members": 4}), ("count", {"team": "Blue", "members": 9})]
    found = refuted_comparison("Red has more members than Blue.", counts)
    assert found is not None and found.field == "members"
    assert refuted_comparison("Blue has more members than Red.", counts) is None
    # The same thing described by two records: which one holds is unclear.
    twice = [*counts, ("count", {"team": "Red", "members": 12})]
    assert refuted_comparison("Red has more members than Blue.", twice) is None


def test_the_note_names_both_sides_with_their_numbers() -> None:
    found = refuted_comparison("It is warmer in London than in Paris.", RESULTS)
    assert found is not None
    assert found.note == (
        'Check your answer: it says "It is warmer in London than in Paris.", but the results '
        "give London 14 and Paris 18 (temperature_c). Compare them again and give your "
        "corrected final answer."
    )


TEMPERATURES = {"Paris": 18.0, "London": 14.0}


@tool
def get_weather(city: str) -> dict[str, Any]:
    """The current weather in a city.

    Args:
        city: the city's name
    """
    return {"city": city, "temperature_c": TEMPERATURES[city]}


def call(call_id: str, **arguments: Any) -> dict[str, Any]:
    function = {"name": "get_weather", "arguments": json.dumps(arguments)}
    return {"tool_calls": [{"id": call_id, "type": "function", "function": function}]}


def notes(result: RunResult) -> list[str]:
    return [m.content or "" for m in result.messages if m.role == "user"][1:]


def test_a_run_whose_answer_turns_a_comparison_round_gets_one_note_then_answers() -> None:
    replies: list[dict[str, Any] | str] = [
        call("c1", city="Paris"),
        call("c2", city="London"),
        "London is warmer than Paris right now.",
        "Paris is warmer: 18 °C against 14 °C in London.",
    ]
    tools = Toolbox([get_weather])
    task = "Is it warmer in Paris or in London right now?"
    result = Agent(ScriptedModel(replies), tools, check_answers=True).run(task)
    assert result.status == "completed"
    assert result.answer == "Paris is warmer: 18 °C against 14 °C in London."
    [note] = notes(result)
    assert note.startswith('Check your answer: it says "London is warmer than Paris right now."')
    # Without the check the first answer ends the run.
    plain = Agent(ScriptedModel(replies[:3]), tools).run(task)
    assert plain.answer == "London is warmer than Paris right now." and notes(plain) == []
