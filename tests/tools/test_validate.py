"""Argument parsing, repairs and schema errors worded for the model."""

from __future__ import annotations

import json

import pytest

from tools.sample_tools import TOOLS
from tooluse.tools import ArgumentChecker, ArgumentsError, parse_arguments


def checker(name: str) -> ArgumentChecker:
    tool = TOOLS.get(name)
    assert tool is not None
    return ArgumentChecker(tool.parameters)


def test_plain_object_parses_without_repairs() -> None:
    parsed = parse_arguments('{"location": "Paris"}')
    assert parsed.value == {"location": "Paris"} and parsed.repairs == ()


@pytest.mark.parametrize(
    ("text", "repair"),
    [
        ('{"a": 1, "b": [1, 2,],}', "removed trailing commas"),
        (json.dumps(json.dumps({"a": 1})), "unwrapped a JSON object"),
        ('```json\n{"a": 1}\n```', "removed a Markdown code fence"),
        ("", "empty arguments read as {}"),
    ],
)
def test_unambiguous_repairs_are_applied_and_named(text: str, repair: str) -> None:
    parsed = parse_arguments(text)
    assert parsed.value in ({"a": 1, "b": [1, 2]}, {"a": 1}, {})
    assert any(repair in r for r in parsed.repairs)


def test_trailing_comma_inside_a_string_is_not_touched() -> None:
    assert parse_arguments('{"a": "x,}"}').value == {"a": "x,}"}


def test_malformed_json_says_where() -> None:
    with pytest.raises(ArgumentsError) as info:
        parse_arguments('{"location": "Paris" "unit": "celsius"}')
    message = str(info.value)
    assert "line 1, column 22" in message and "near:" in message


def test_ambiguous_text_is_not_guessed() -> None:
    with pytest.raises(ArgumentsError, match="not valid JSON"):
        parse_arguments("{location: Paris}")


@pytest.mark.parametrize(
    ("text", "kind"), [("[1, 2]", "array"), ('"Paris"', "string"), ("3", "integer")]
)
def test_arguments_must_be_an_object(text: str, kind: str) -> None:
    with pytest.raises(ArgumentsError, match=f"must be a JSON object.*got {kind}"):
        parse_arguments(text)


def test_oversized_arguments_are_refused_unread() -> None:
    with pytest.raises(ArgumentsError, match="the limit is 1,000"):
        parse_arguments('{"a": "' + "x" * 5000 + '"}', max_bytes=1000)


def test_unknown_argument_gets_did_you_mean() -> None:
    with pytest.raises(ArgumentsError) as info:
        checker("get_current_weather").check({"locaton": "Paris"})
    message = str(info.value)
    assert "unknown argument 'locaton' (did you mean 'location'?)" in message
    assert "missing required argument 'location'" in message


def test_wrong_type_names_both_types() -> None:
    with pytest.raises(ArgumentsError, match="argument 'limit' must be integer, got string \"10\""):
        checker("search").check({"query": "q", "limit": "10"})


def test_enum_violation_lists_the_options() -> None:
    with pytest.raises(ArgumentsError) as info:
        checker("get_current_weather").check({"location": "Paris", "unit": "kelvin"})
    assert '"celsius", "fahrenheit"' in str(info.value) and '"kelvin"' in str(info.value)


def test_nested_problems_name_the_path() -> None:
    with pytest.raises(ArgumentsError) as info:
        checker("book_room").check(
            {
                "guest": "Ada",
                "address": {"street": "x", "citty": "Paris"},
                "window": {"start": "a", "end": 3},
            }
        )
    message = str(info.value)
    assert "missing required argument 'address.city'" in message
    assert "unknown argument 'address.citty' (did you mean 'city'?)" in message
    assert "argument 'window.end' must be string, got integer 3" in message


def test_constraints_are_checked() -> None:
    with pytest.raises(ArgumentsError, match="rooms"):
        checker("book_room").check(
            {
                "guest": "A",
                "address": {"street": "s", "city": "c"},
                "window": {"start": "a", "end": "b"},
                "rooms": 12,
            }
        )


def test_null_for_optional_parameter_means_default() -> None:
    arguments, repairs = checker("get_current_weather").check({"location": "Paris", "unit": None})
    assert arguments == {"location": "Paris"}
    assert repairs == ("null for optional 'unit' read as omitted",)


def test_null_for_required_parameter_is_an_error() -> None:
    with pytest.raises(ArgumentsError, match="argument 'location' must be string, got null"):
        checker("get_current_weather").check({"location": None})
