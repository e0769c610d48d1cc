"""A call on numbers nobody gave (a price or a rate assumed) gets one note a run, where
answers are checked; numbers the task or a result gave, or that follow from them, none."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooluse import Agent, Toolbox, events, tool
from tooluse._messages import Message
from tooluse.models import ScriptedModel
from tooluse.run._numbercheck import GivenNumbers, numbers_in, unseen_numbers

TASK = "What do 3 keyboards (SKU B200) cost in total, in euros?"


@pytest.mark.parametrize(
    ("arguments", "given", "unseen"),
    [
        # A price and an exchange rate of the model's own.
        ({"expression": "(15.99 + 15.99 + 15.99) * 0.86"}, {3, 49}, [15.99, 0.86]),
        ({"amount": 15.99, "from_currency": "USD"}, {3}, [15.99]),
        # A conversion factor known by heart, nested in a list.
        ({"values": [4, {"factor": 3.2808}]}, {4, 5}, [3.2808]),
        # What follows from the given numbers in one step.
        ({"amount": 147, "from_currency": "USD"}, {3, 49}, []),  # 3 keyboards at 49
        ({"expression": "147 * 0.92"}, {3, 49, 0.92}, []),
        ({"expression": "135.24 + 0"}, {147, 0.92}, []),  # the product, rounded
        ({"rate": 0.15}, {15}, []),  # 15 %
        ({"factor": 1.15}, {15}, []),  # 15 % added
        ({"capacitance": 0.0001, "inductance": 0.05}, {100, 50}, []),  # 100 µF, 50 mH
        ({"revenue": 1200000}, {1.2}, []),  # $1.2M
        ({"total": 86.96}, {86.9565}, []),  # a result, rounded
        ({"minutes": 90}, {1.5}, []),  # an hour and a half
        # Small whole numbers and everyday constants; dates and codes; no numbers at all.
        ({"n": 7, "per": 60, "half": 0.5}, set(), []),
        ({"date": "2026-03-03", "sku": "B200"}, {2026, 3}, []),
        ({"flag": True, "note": None, "city": "Paris"}, set(), []),
    ],
)
def test_numbers_a_call_takes_that_nothing_gave(
    arguments: dict[str, Any], given: set[float], unseen: list[float]
) -> None:
    assert unseen_numbers(arguments, {float(n) for n in given}) == unseen


def test_numbers_are_read_from_text_as_written() -> None:
    text = "3 keyboards (SKU B200) at $1,049.50, 2e-9 C, on 2026-03-03 at 09:15"
    assert list(numbers_in(text)) == [3, 1049.5, 2e-9, 2026, 3, 3, 9, 15]


def test_only_what_the_model_did_not_write_is_given_and_each_message_is_read_once() -> None:
    messages = [Message("user", "3 keyboards"), Message("assistant", "at 15.99 each")]
    given = GivenNumbers()
    given.update(messages)
    messages.append(Message("tool", '{"price": 49.0}', tool_call_id="c1", name="check_stock"))
    messages[0].content = "5 keyboards"  # read already: not read again
    given.update(messages)
    assert given.numbers == {3.0, 49.0}


@tool
def check_stock(sku: str) -> dict[str, Any]:
    """Return a product's price in USD and units in stock.

    Args:
        sku: The product's SKU, e.g. 'A100'
    """
    return {"sku": sku, "price_usd": 49.0, "in_stock": 12}


@tool
def calculate(expression: str) -> float:
    """Evaluate an arithmetic expression.

    Args:
        expression: The expression, e.g. '2 * (3 + 4)'
    """
    return float(eval(expression, {"__builtins__": {}}))  # a test's own expressions


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"tool_calls": [{"id": call_id, "type": "function", "function": function}]}


NOTE = (
    "Note: calculate was called with 15.99 and 0.86, which neither the task nor any tool "
    "result gave. If a number stands for a fact (a price, a rate, a conversion factor, an "
    "amount), get it from a tool instead of assuming it, then go on."
)


def test_a_call_on_an_assumed_price_and_rate_gets_one_note_and_a_call_is_asked_for() -> None:
    seen: list[events.Event] = []
    model = ScriptedModel(
        [
            call("c1", "calculate", expression="(15.99 + 15.99 + 15.99) * 0.86"),
            call("c2", "check_stock", sku="B200"),
            # Another assumed rate: the note came already, once a run.
            call("c3", "calculate", expression="3 * 49 * 0.91"),
            {"content": "3 keyboards cost 147 USD, about 133.77 EUR."},
        ]
    )
    agent = Agent(
        model,
        Toolbox([check_stock, calculate]),
        check_answers=True,
        on_event=lambda d: seen.append(events.event_from_dict(d)),
    )
    result = agent.run(TASK)
    assert result.status == "completed"
    notes = [m.content for m in result.messages if m.role == "user"][1:]
    assert notes == [NOTE]
    assert [e.text for e in seen if isinstance(e, events.Feedback)] == [NOTE]
    # The round after the note asks for a call; once one has run, the choice is the model's.
    assert [r.tool_choice for r in model.requests] == ["auto", "required", "auto", "auto"]
    # The assumed call ran and is recorded as it was: the note is the runtime's, apart.
    assert result.calls[0].result == pytest.approx(41.2542)


def test_numbers_from_the_task_and_the_results_get_no_note() -> None:
    model = ScriptedModel(
        [
            call("c1", "check_stock", sku="B200"),
            call("c2", "calculate", expression="3 * 49.0"),
            {"content": "3 keyboards cost 147 USD."},
        ]
    )
    result = Agent(model, Toolbox([check_stock, calculate]), check_answers=True).run(TASK)
    assert result.status == "completed"
    assert [m for m in result.messages if m.role == "user"][1:] == []


def test_no_note_where_answers_are_not_checked() -> None:
    model = ScriptedModel(
        [
            call("c1", "calculate", expression="(15.99 + 15.99 + 15.99) * 0.86"),
            {"content": "About 41.25 EUR."},
        ]
    )
    result = Agent(model, Toolbox([check_stock, calculate])).run(TASK)
    assert result.status == "completed"
    assert [m for m in result.messages if m.role == "user"][1:] == []


@tool
def convert_units(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a value between units.

    Args:
        value: The value
        from_unit: The unit it is in, e.g. 'C'
        to_unit: The unit to convert to, e.g. 'F'
    """
    assert (from_unit, to_unit) == ("C", "F")
    return round(value * 9 / 5 + 32, 4)


def test_a_formula_worked_beside_the_tool_that_gives_the_same_result_gets_no_note() -> None:
    task = "What is 18 degrees Celsius in Fahrenheit?"
    together = {
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(
                [
                    ("convert_units", {"value": 18, "from_unit": "C", "to_unit": "F"}),
                    ("calculate", {"expression": "18 * 9 / 5 + 32"}),
                ]
            )
        ]
    }
    tools = Toolbox([convert_units, calculate])
    model = ScriptedModel([together, {"content": "18 °C is 64.4 °F."}])
    result = Agent(model, tools, check_answers=True).run(task)
    assert [c.result for c in result.calls] == [64.4, 64.4]
    assert [m for m in result.messages if m.role == "user"][1:] == []
    # Alone, the same formula took 32 from nowhere: the note names it.
    model = ScriptedModel([call("c1", "calculate", expression="18 * 9 / 5 + 32"), "64.4 °F."])
    result = Agent(model, tools, check_answers=True).run(task)
    notes = [m.content for m in result.messages if m.role == "user"][1:]
    assert len(notes) == 1 and notes[0].startswith("Note: calculate was called with 32, which")


@tool
def census(area: str, year: int = 2000) -> dict[str, Any]:
    """The population of an area in a census year.

    Args:
        area: The city, state or country
        year: The census year (1990, 2000, 2010 or 2020)
    """
    return {"area": area, "year": year, "population": 8_008_278}


def test_a_number_the_tools_definition_states_is_given() -> None:
    model = ScriptedModel([call("c1", "census", area="New York City", year=2000), "8,008,278."])
    result = Agent(model, Toolbox([census]), check_answers=True).run(
        "What was the population of New York City?"
    )
    assert result.status == "completed"
    assert [m for m in result.messages if m.role == "user"][1:] == []
    # A year the definition does not state is a number nobody gave.
    model = ScriptedModel([call("c1", "census", area="New York City", year=2005), "8,1 million"])
    result = Agent(model, Toolbox([census]), check_answers=True).run(
        "What was the population of New York City?"
    )
    notes = [m.content for m in result.messages if m.role == "user"][1:]
    assert len(notes) == 1 and notes[0].startswith("Note: census was called with 2005, which")


def test_a_note_names_five_numbers_at_most_and_a_long_listing_gets_none() -> None:
    assumed = {"prices": [round(10.01 * n + 0.37, 2) for n in range(1, 40)]}
    assert unseen_numbers(assumed, {3.0}) == [10.38, 20.39, 30.4, 40.41, 50.42]
    # Past 200 given numbers (a long listing), nothing is paired and no note is sent.
    listing = {1000.0 + 7.3 * n for n in range(201)}
    assert unseen_numbers({"price": 15.99}, listing) == []
    assert unseen_numbers({"price": 15.99}, set(list(listing)[:200])) == [15.99]
