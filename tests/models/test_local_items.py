"""Items the user listed side by side, owed the call a sibling of theirs got (no model)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooluse._messages import Message, ToolCall
from tooluse.models._local_items import OwedItem, admits, owed_tool, untaken_items
from tooluse.models._local_stream import Prose


def run(task: str, *calls: tuple[str, dict[str, Any]]) -> list[Message]:
    """A run's messages: the task, then each call with a result."""
    messages = [Message("system", "You are a helpful assistant."), Message("user", task)]
    for i, (name, arguments) in enumerate(calls):
        call = ToolCall(f"c{i}", name, json.dumps(arguments))
        messages += [
            Message("assistant", None, tool_calls=(call,)),
            Message("tool", "{}", tool_call_id=f"c{i}"),
        ]
    return messages


SUM = "I have 50 EUR and 30 GBP. How much is that together in US dollars?"
STOCK = (
    "Check the stock of the USB-C cable (A100), the wireless mouse (B100) and the "
    "keyboard (B200). Which has the most units, and how many units are there in total?"
)


@pytest.mark.parametrize(
    ("task", "calls", "owed"),
    [
        (
            "Is it warmer in Paris or in London right now?",
            [("get_weather", {"city": "Paris"})],
            [OwedItem("get_weather", "city", "London")],
        ),
        # An item given with a number carries it to the number parameter the call filled.
        (
            SUM,
            [("convert_currency", {"amount": 80, "from_currency": "EUR", "to_currency": "USD"})],
            [OwedItem("convert_currency", "from_currency", "GBP", ("amount", 30))],
        ),
        # A call that took the item with another number did not take it.
        (
            SUM,
            [
                ("convert_currency", {"amount": 80, "from_currency": "EUR", "to_currency": "USD"}),
                ("convert_currency", {"amount": 30, "from_currency": "GBP", "to_currency": "USD"}),
            ],
            [OwedItem("convert_currency", "from_currency", "EUR", ("amount", 50))],
        ),
        # Where the call passed no number, the item's own is not asked of it.
        (
            "Check 2 A100 and 3 B100.",
            [("check_stock", {"sku": "A100"})],
            [OwedItem("check_stock", "sku", "B100")],
        ),
        # The list is walked one item at a time: B200 is owed once B100 is taken.
        (STOCK, [("check_stock", {"sku": "A100"})], [OwedItem("check_stock", "sku", "B100")]),
        (
            STOCK,
            [("check_stock", {"sku": "A100"}), ("check_stock", {"sku": "B100"})],
            [OwedItem("check_stock", "sku", "B200")],
        ),
        (
            "Is it warmer in Paris or in London right now?",
            [("get_weather", {"city": "London"})],
            [OwedItem("get_weather", "city", "Paris")],
        ),
    ],
)
def test_an_item_listed_beside_one_a_call_took_is_owed_that_call(
    task: str, calls: list[tuple[str, dict[str, Any]]], owed: list[OwedItem]
) -> None:
    assert untaken_items(run(task, *calls)) == owed


@pytest.mark.parametrize(
    ("task", "calls"),
    [
        # Every item taken.
        (
            STOCK,
            [("check_stock", {"sku": s}) for s in ("A100", "B100", "B200")],
        ),
        # Each with its number (a call that passed no number takes it as it is).
        (
            SUM,
            [
                ("convert_currency", {"amount": 50.0, "from_currency": "EUR"}),
                ("convert_currency", {"amount": 30, "from_currency": "GBP"}),
            ],
        ),
        (SUM, [("get_exchange_rate", {"base": "EUR"}), ("get_exchange_rate", {"base": "GBP"})]),
        # No call yet: nothing is owed, whatever the task lists.
        ("Is it warmer in Paris or in London right now?", []),
        # A unit after a place is not a second place: the word before each differs.
        (
            "What is the temperature in Oslo, in degrees Fahrenheit?",
            [("get_weather", {"city": "Oslo"})],
        ),
        # Joined, but too far apart to be one list.
        (
            "Tell me the temperature in Tokyo in Fahrenheit, and what time it is in London.",
            [("get_weather", {"city": "Tokyo"})],
        ),
        # Not joined by a comma, "and" or "or".
        ("I'm flying from London to Tokyo.", [("get_weather", {"city": "London"})]),
        # In another sentence.
        ("Find the weather in Paris. Tell me about London.", [("get_weather", {"city": "Paris"})]),
        # Of another kind: a code beside a name.
        ("Is the HDMI cable (A200) or the Mouse in stock?", [("check_stock", {"sku": "A200"})]),
    ],
)
def test_nothing_is_owed_where_the_items_are_not_one_list_or_all_are_taken(
    task: str, calls: list[tuple[str, dict[str, Any]]]
) -> None:
    assert untaken_items(run(task, *calls)) == []


def test_the_task_is_the_last_user_message_and_calls_written_as_text_are_passed_over() -> None:
    messages = run(
        "Is it warmer in Paris or in London right now?", ("get_weather", {"city": "Paris"})
    )
    # An earlier exchange's list is not this task's.
    later = [*messages, Message("assistant", "Paris."), Message("user", "Thanks. And in Oslo?")]
    assert untaken_items(later) == []
    # A call whose arguments are not an object took nothing.
    odd = Message("assistant", None, tool_calls=(ToolCall("c9", "get_weather", "Paris"),))
    assert untaken_items([*messages[:2], odd]) == []


def test_the_owed_tools_schema_fixes_the_parameter_and_keeps_the_rest() -> None:
    parameters = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city."},
            "unit": {"type": "string", "enum": ["C", "F"]},
        },
        "required": ["unit"],
    }
    fixed = owed_tool(parameters, OwedItem("get_weather", "city", "London"))
    assert fixed["properties"] == {
        "city": {"description": "The city.", "const": "London"},
        "unit": {"type": "string", "enum": ["C", "F"]},
    }
    assert fixed["required"] == ["unit", "city"]
    assert parameters["required"] == ["unit"]  # the tool's own schema is left as it was


CONVERT = {
    "type": "object",
    "properties": {
        "amount": {"type": "number", "description": "How much.", "minimum": 0},
        "from_currency": {"type": "string"},
        "to_currency": {"type": "string"},
    },
    "required": ["from_currency", "to_currency"],
}


def test_an_items_quantity_is_fixed_too() -> None:
    fixed = owed_tool(CONVERT, OwedItem("convert_currency", "from_currency", "GBP", ("amount", 30)))
    assert fixed["properties"] == {
        "amount": {"description": "How much.", "const": 30},
        "from_currency": {"const": "GBP"},
        "to_currency": {"type": "string"},
    }
    assert fixed["required"] == ["from_currency", "to_currency", "amount"]


@pytest.mark.parametrize(
    ("schema", "quantity", "taken"),
    [
        ({"type": "number"}, 30, True),
        ({"type": "integer"}, 30, True),
        ({"type": "integer"}, 2.5, False),
        ({"type": "string"}, 30, False),
        ({"type": "number", "minimum": 0}, 30, True),
        ({"type": "number", "maximum": 10}, 30, False),
        (None, 30, False),  # a parameter the schema does not list
    ],
)
def test_an_items_quantity_is_owed_only_where_the_schema_takes_the_number(
    schema: dict[str, Any] | None, quantity: float, taken: bool
) -> None:
    properties: dict[str, Any] = {"from_currency": {"type": "string"}}
    if schema is not None:
        properties["amount"] = schema
    item = OwedItem("convert_currency", "from_currency", "GBP", ("amount", quantity))
    assert admits({"type": "object", "properties": properties}, item) is taken


def test_a_stream_holding_all_passes_nothing_on_until_the_reply_stands() -> None:
    sent: list[str] = []
    prose = Prose(sent.append, hold="all")
    for piece in ["Paris is ", "warmer. ", "It is 18 °C there."]:
        prose.feed(piece)
    assert sent == []
    prose.finish("Paris is warmer. It is 18 °C there.")
    assert sent == ["Paris is warmer. It is 18 °C there."]


@pytest.mark.parametrize(
    ("schema", "taken"),
    [
        ({"type": "string"}, True),
        ({"type": ["string", "null"]}, True),
        ({"type": "integer"}, False),
        ({"type": "string", "enum": ["Paris", "London"]}, True),
        ({"type": "string", "enum": ["Paris", "Oslo"]}, False),
        ({"type": "string", "pattern": "^[A-Z][a-z]+$"}, True),
        ({"type": "string", "pattern": "^[a-z]+$"}, False),
        ({"type": "string", "maxLength": 3}, False),
        ({"type": "string", "minLength": 2, "maxLength": 6}, True),
    ],
)
def test_an_item_is_owed_only_where_the_parameters_schema_takes_it(
    schema: dict[str, Any], taken: bool
) -> None:
    item = OwedItem("get_weather", "city", "London")
    assert admits({"type": "object", "properties": {"city": schema}}, item) is taken


def test_a_parameter_the_schema_does_not_list_is_taken_where_others_are_allowed() -> None:
    item = OwedItem("get_weather", "city", "London")
    assert admits({"type": "object", "properties": {}}, item)
    assert not admits({"type": "object", "properties": {}, "additionalProperties": False}, item)


# --- the lists a result gives -------------------------------------------------------------

SKUS = ["GAR-2425", "GAR-F66A", "GAR-0696"]
PRODUCTS = [
    {"sku": "C100", "name": "27-inch monitor", "price_usd": 229.0},
    {"sku": "C200", "name": "24-inch monitor", "price_usd": 149.0},
]
#: The parameters of the tools a listing's items may be owed (name to JSON Schema).
LOOKUPS = {
    "list_products": {"properties": {"category": {"type": "string"}}, "required": ["category"]},
    "get_stock": {"properties": {"sku": {"type": "string"}}, "required": ["sku"]},
    "get_weather": {"properties": {"city": {"type": "string"}}, "required": ["city"]},
    "get_forecast": {
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
}


def listed_run(task: str, listing: object, *lookups: tuple[str, dict[str, Any]]) -> list[Message]:
    """A run that listed something (`listing` is the result), then made `lookups`."""
    messages = run(task, ("list_products", {"category": "garden"}), *lookups)
    messages[3] = Message("tool", json.dumps(listing), tool_call_id="c0")
    return messages


def test_once_one_item_of_a_listed_result_is_taken_the_others_are_owed_that_call() -> None:
    task = "Check the stock of every product in the 'garden' category and give the total."
    owed = untaken_items(listed_run(task, SKUS, ("get_stock", {"sku": "GAR-2425"})))
    assert owed == [OwedItem("get_stock", "sku", s) for s in SKUS[1:]]
    # All taken: nothing is owed.
    done = [("get_stock", {"sku": s}) for s in SKUS]
    assert untaken_items(listed_run(task, SKUS, *done)) == []
    # Listed and none taken: owed the one other tool whose one required parameter is a
    # string, where one alone has that shape; with two such tools, none is the one.
    lookups = {name: LOOKUPS[name] for name in ("list_products", "get_stock")}
    assert untaken_items(listed_run(task, SKUS), lookups) == [
        OwedItem("get_stock", "sku", s) for s in SKUS
    ]
    assert untaken_items(listed_run(task, SKUS), LOOKUPS) == []


def test_a_listed_result_owes_nothing_where_the_task_asks_about_one_thing() -> None:
    # The weather in Tokyo, with the cities of Japan listed by the way: Osaka is not owed.
    cities = [{"city": "Tokyo"}, {"city": "Osaka"}, {"city": "Nagoya"}]
    messages = listed_run(
        "What's the weather in Tokyo?", cities, ("get_weather", {"city": "Tokyo"})
    )
    assert untaken_items(messages, LOOKUPS) == []
    asked_of_all = listed_run(
        "What's the weather in all of them?", cities, ("get_weather", {"city": "Tokyo"})
    )
    assert untaken_items(asked_of_all, LOOKUPS) == [
        OwedItem("get_weather", "city", "Osaka"),
        OwedItem("get_weather", "city", "Nagoya"),
    ]


def test_records_are_owed_the_one_other_tool_requiring_their_key_before_any_is_taken() -> None:
    task = "List the products in the displays category and how many of each are in stock."
    assert untaken_items(listed_run(task, PRODUCTS), LOOKUPS) == [
        OwedItem("get_stock", "sku", "C100"),
        OwedItem("get_stock", "sku", "C200"),
    ]
    # Without the tools, or where two tools require the key (city: weather and forecast),
    # no tool is the one: nothing is owed before one is taken.
    assert untaken_items(listed_run(task, PRODUCTS)) == []
    cities = [{"city": "Nairobi"}, {"city": "Mombasa"}]
    assert untaken_items(listed_run("Check all of the cities.", cities), LOOKUPS) == []
    # The tool that gave the list is not owed its own items.
    categories = [{"category": "garden"}, {"category": "displays"}]
    assert untaken_items(listed_run("Check all categories.", categories), LOOKUPS) == []
