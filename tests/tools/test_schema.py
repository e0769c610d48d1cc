"""Typed functions and raw schemas → tools."""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
from typing import Literal

import pytest
from pydantic import BaseModel

from tools.sample_tools import TOOLS, Address, Window
from tooluse import Agent, Tool, Toolbox, ToolDefinitionError, tool
from tooluse.models import ScriptedModel
from tooluse.tools import ArgumentChecker, ArgumentsError, lean_schema


def test_name_description_and_google_style_parameters() -> None:
    weather = TOOLS.get("get_current_weather")
    assert weather is not None
    assert weather.description == "Retrieve current weather conditions for a location."
    props = weather.parameters["properties"]
    assert props["location"] == {
        "type": "string",
        "description": "City and country, e.g. 'Paris, France'",
    }
    assert props["unit"]["enum"] == ["celsius", "fahrenheit"]
    assert props["unit"]["default"] == "celsius"
    assert weather.parameters["required"] == ["location"]


def test_numpy_and_sphinx_docstrings_describe_parameters() -> None:
    book = TOOLS.get("book_room")
    search = TOOLS.get("search")
    assert book is not None and search is not None
    assert book.parameters["properties"]["guest"]["description"] == "Full name of the guest"
    assert search.parameters["properties"]["limit"]["description"] == "Most results to return"


def test_nested_models_dataclasses_and_typeddicts_become_objects() -> None:
    book = TOOLS.get("book_room")
    assert book is not None
    defs = book.parameters["$defs"]
    assert set(defs["Address"]["properties"]) == {"street", "city", "country_code"}
    assert defs["Address"]["required"] == ["street", "city"]
    assert set(defs["Window"]["properties"]) == {"start", "end"}
    search = TOOLS.get("search")
    assert search is not None
    assert "Filters" in search.parameters["$defs"]


def test_no_titles_survive_anywhere() -> None:
    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "properties":
                    for prop in value.values():
                        walk(prop)
                    continue
                assert key != "title"
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for t in TOOLS:
        walk(t.parameters)
        walk(t.returns)


def test_return_annotation_becomes_output_schema() -> None:
    book = TOOLS.get("book_room")
    assert book is not None and book.returns is not None
    assert set(book.returns["properties"]) == {"booking_id", "confirmed"}
    ping = TOOLS.get("ping")
    assert ping is not None
    assert ping.returns == {"type": "string"}


def test_decorator_options_and_async_detection() -> None:
    book = TOOLS.get("book_room")
    assert book is not None
    assert book.is_async and book.side_effects and book.timeout == 5
    assert book.positional == ("guest", "address", "window", "notes")


def test_arguments_are_converted_to_python_objects() -> None:
    book = TOOLS.get("book_room")
    assert book is not None
    kwargs = book.convert_arguments(
        {
            "guest": "Ada",
            "address": {"street": "1 Rue", "city": "Paris"},
            "window": {"start": "2026-01-01", "end": "2026-01-03"},
        }
    )
    assert isinstance(kwargs["address"], Address)
    assert isinstance(kwargs["window"], Window)
    assert kwargs["rooms"] == 1 and kwargs["notes"] is None


def test_tool_remains_callable_as_the_function() -> None:
    weather = TOOLS.get("get_current_weather")
    assert weather is not None
    assert weather("Paris") == {"temperature": 18.0}


def test_raw_schema_tool_keeps_schema_and_passes_arguments_through() -> None:
    raw = TOOLS.get("user.lookup")
    assert raw is not None
    assert raw.parameters["required"] == ["fields"]
    assert raw.convert_arguments({"fields": ["name"]}) == {"fields": ["name"]}


def test_unannotated_parameter_is_a_definition_error() -> None:
    def bad(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(ToolDefinitionError, match="no type annotation"):
        tool(bad)


def test_var_args_are_a_definition_error() -> None:
    def bad(*items: int) -> int:
        return len(items)

    with pytest.raises(ToolDefinitionError, match=r"\*items"):
        tool(bad)


def test_bad_names_and_duplicates_are_rejected() -> None:
    with pytest.raises(ToolDefinitionError, match="not usable"):
        Tool.from_schema("has space", "", {"type": "object"}, lambda: None)
    with pytest.raises(ToolDefinitionError, match="two tools"):
        Toolbox([TOOLS.get("ping"), TOOLS.get("ping")])  # type: ignore[list-item]
    with pytest.raises(ToolDefinitionError, match="object schema"):
        Tool.from_schema("x", "", {"type": "array"}, lambda: None)


class Point(BaseModel):
    x: int


def test_plain_functions_are_accepted_by_toolbox() -> None:
    def move(point: Point, direction: Literal["n", "s"]) -> Point:
        """Move a point."""
        return point

    box = Toolbox([move])
    moved = box.get("move")
    assert moved is not None
    assert moved.parameters["properties"]["direction"]["enum"] == ["n", "s"]


def test_local_types_are_found_through_localns() -> None:
    @dataclasses.dataclass
    class Span:
        a: int

    @tool(localns=locals())
    def measure(span: Span) -> int:
        return span.a

    assert measure.description == ""
    assert measure.convert_arguments({"span": {"a": 3}})["span"] == Span(3)


def _builds_a_tool_of_a_local_type() -> Tool:
    @dataclasses.dataclass
    class Span:
        a: int

    def measure(span: Span) -> int:
        return span.a

    return tool(measure)


def test_an_unresolved_local_type_is_named_with_the_remedy() -> None:
    @dataclasses.dataclass
    class Span:  # visible to this test's frame, but not to the tool's module
        a: int

    with pytest.raises(ToolDefinitionError) as info:
        _builds_a_tool_of_a_local_type()
    message = str(info.value)
    assert "cannot resolve 'Span' in the annotation 'Span' of parameter 'span'" in message
    assert "localns=locals()" in message and "module level" in message


def test_unresolved_return_annotation_is_named() -> None:
    def later() -> Missing:  # type: ignore[name-defined]  # noqa: F821
        raise NotImplementedError

    with pytest.raises(ToolDefinitionError, match="'Missing' in the return annotation"):
        tool(later)


def _convert(amount: float, currency: str, rates: dict[str, float]) -> float:
    """Convert an amount to US dollars.

    Args:
        amount: how much
        currency: ISO code of the amount
        rates: dollars per unit of each currency
    """
    return amount * rates[currency]


def test_partial_with_a_name_hides_what_it_binds() -> None:
    bound = functools.partial(_convert, rates={"EUR": 1.1, "GBP": 1.3})
    convert = tool(bound, name="to_dollars")
    assert convert.name == "to_dollars"
    assert convert.description == "Convert an amount to US dollars."
    assert convert.parameters["properties"] == {
        "amount": {"type": "number", "description": "how much"},
        "currency": {"type": "string", "description": "ISO code of the amount"},
    }
    assert convert.parameters["required"] == ["amount", "currency"]
    kwargs = convert.convert_arguments({"amount": 10, "currency": "GBP"})
    assert convert.function(**kwargs) == pytest.approx(13.0)
    assert convert.__doc__ == _convert.__doc__


def test_partial_of_leading_arguments() -> None:
    def scale(factor: int, value: int) -> int:
        """Multiply a value."""
        return factor * value

    triple = tool(functools.partial(scale, 3), name="triple")
    assert list(triple.parameters["properties"]) == ["value"]
    assert triple.function(**triple.convert_arguments({"value": 5})) == 15


def test_partial_without_a_name_is_a_definition_error() -> None:
    with pytest.raises(ToolDefinitionError, match="pass name="):
        tool(functools.partial(_convert, rates={}))


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Size(enum.IntEnum):
    SMALL = 1
    LARGE = 3


class Paint(BaseModel):
    color: Color
    size: Size = Size.SMALL


received: list[tuple[Color, Paint, list[Size] | None]] = []


@tool
def paint(color: Color, paint: Paint, sizes: list[Size] | None = None) -> str:
    """Paint something."""
    received.append((color, paint, sizes))
    return f"{color.name} {paint.color.name} {paint.size.name}"


def test_enum_parameters_are_described_by_their_values() -> None:
    props = lean_schema(paint.parameters)["properties"]
    assert props["color"] == {"enum": ["red", "green"], "type": "string"}
    assert props["paint"]["properties"]["color"] == {"enum": ["red", "green"], "type": "string"}
    assert props["paint"]["properties"]["size"] == {"enum": [1, 3], "type": "integer", "default": 1}
    assert props["sizes"] == {"items": {"enum": [1, 3], "type": "integer"}, "type": "array"}


def test_enum_values_are_checked_and_arrive_as_members() -> None:
    checker = ArgumentChecker(paint.parameters)
    with pytest.raises(ArgumentsError, match='must be one of "red", "green"; got "RED"'):
        checker.check({"color": "RED", "paint": {"color": "green"}})
    with pytest.raises(ArgumentsError, match=r"argument 'paint\.size' must be one of 1, 3; got 2"):
        checker.check({"color": "red", "paint": {"color": "green", "size": 2}})
    arguments, _ = checker.check({"color": "red", "paint": {"color": "green"}, "sizes": [3]})
    kwargs = paint.convert_arguments(arguments)
    assert kwargs["color"] is Color.RED
    assert kwargs["paint"].color is Color.GREEN and kwargs["paint"].size is Size.SMALL
    assert kwargs["sizes"] == [Size.LARGE] and kwargs["sizes"][0] is Size.LARGE


def test_a_model_sends_enum_values_and_the_tool_gets_members() -> None:
    received.clear()
    arguments = {"color": "green", "paint": {"color": "red", "size": 3}}
    model = ScriptedModel(
        [
            {
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "paint", "arguments": json.dumps(arguments)},
                    }
                ]
            },
            {"content": "painted"},
        ]
    )
    result = Agent(model, [paint]).run("paint it")
    assert result.status == "completed"
    assert result.calls[0].result == "GREEN RED LARGE"
    assert received == [(Color.GREEN, Paint(color=Color.RED, size=Size.LARGE), None)]
    assert result.calls[0].arguments == arguments  # the record keeps what the model sent
