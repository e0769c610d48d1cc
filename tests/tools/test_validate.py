"""Argument parsing, repairs and schema errors worded for the model."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from examples.seed_tools import toolbox as seed_tools
from tools.sample_tools import TOOLS
from tooluse import Agent, ApprovalRequest, ToolCall
from tooluse.models import ScriptedModel
from tooluse.tools import ArgumentChecker, ArgumentsError, parse_arguments
from tooluse.tools._validate import checker_for


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


def test_duplicate_keys_are_refused_with_the_key_named() -> None:
    with pytest.raises(ArgumentsError, match="'location' appears twice"):
        parse_arguments('{"location": "Paris", "location": "Rome"}')
    with pytest.raises(ArgumentsError, match="'city' appears twice"):
        parse_arguments('{"address": {"city": "a", "city": "b"}}')
    # Repeated keys in different objects are not duplicates.
    parsed = parse_arguments('{"a": {"k": 1}, "b": {"k": 2}}')
    assert parsed.value == {"a": {"k": 1}, "b": {"k": 2}}


def test_duplicate_keys_after_a_repair_are_refused_too() -> None:
    with pytest.raises(ArgumentsError, match="'a' appears twice"):
        parse_arguments('{"a": 1, "a": 2,}')
    with pytest.raises(ArgumentsError, match="'a' appears twice"):
        parse_arguments(json.dumps('{"a": 1, "a": 2}'))


@pytest.mark.parametrize(
    "text",
    [
        "[" * 1000 + "]" * 1000,
        '{"a": ' + "[" * 1000 + "]" * 1000 + "}",
        '{"a": ' + "[" * 200 + "]" * 200 + "}",
        json.dumps('{"a": ' + "[" * 1000 + "]" * 1000 + "}"),
    ],
    ids=["bare-array", "object-1000", "object-200", "wrapped-in-string"],
)
def test_deeply_nested_arguments_are_refused_with_a_message(text: str) -> None:
    with pytest.raises(ArgumentsError, match="nested more than 64 levels deep"):
        parse_arguments(text)


def test_nesting_within_the_limit_is_read() -> None:
    text = '{"a": ' + "[" * 63 + "]" * 63 + "}"
    value: object = parse_arguments(text).value
    depth = 0
    while isinstance(value, dict | list) and value:
        value = value["a"] if isinstance(value, dict) else value[0]
        depth += 1
    assert depth == 63  # the object, then 62 non-empty arrays around the empty one


def test_brackets_inside_strings_are_not_nesting() -> None:
    text = json.dumps({"code": "[" * 500 + "{" * 500})
    assert parse_arguments(text).value == {"code": "[" * 500 + "{" * 500}


def test_integers_beyond_the_digit_limit_are_refused_with_a_message() -> None:
    limit = sys.get_int_max_str_digits()
    with pytest.raises(ArgumentsError, match=f"more than {limit:,} digits"):
        parse_arguments('{"n": ' + "7" * (limit + 1) + "}")


def test_bad_calls_in_a_turn_are_rejected_and_the_others_run() -> None:
    deep = '{"expression": ' + "[" * 1000 + "]" * 1000 + "}"
    long_number = '{"expression": ' + "9" * (sys.get_int_max_str_digits() + 10) + "}"
    duplicated = '{"country": "France", "country": "Japan"}'
    model = ScriptedModel(
        [
            {
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
                    for i, (n, a) in enumerate(
                        [
                            ("calculator", deep),
                            ("lookup_capital", '{"country": "Japan"}'),
                            ("calculator", long_number),
                            ("lookup_capital", duplicated),
                            ("calculator", '{"expression": "6 * 7"}'),
                        ]
                    )
                ]
            },
            {"content": "done"},
        ]
    )
    result = Agent(model, seed_tools).run("task")
    assert result.status == "completed" and result.answer == "done"
    assert [(c.name, c.result) for c in result.calls] == [
        ("lookup_capital", "Tokyo"),
        ("calculator", 42.0),
    ]
    errors = {r.id: r.error for r in result.rejected}
    assert "nested more than 64 levels deep" in errors["c0"]
    assert "digits" in errors["c2"]
    assert "'country' appears twice" in errors["c3"]
    # The model is told about each refusal in the next request.
    shown = {m.tool_call_id: m.content for m in model.requests[1].messages if m.role == "tool"}
    assert all(shown[call_id] == f"Error: {error}" for call_id, error in errors.items())


def test_a_schema_changed_in_place_is_checked_in_its_new_form() -> None:
    from tooluse import Toolbox, tool
    from tooluse.dispatch import Dispatcher

    @tool
    def scale(x: int) -> int:
        """Double x."""
        return x * 2

    async def call(arguments: str) -> str | None:
        dispatcher = Dispatcher(Toolbox([scale]))
        try:
            (outcome,) = await dispatcher.run([ToolCall("c1", "scale", arguments)])
        finally:
            dispatcher.close()
        assert not isinstance(outcome, ApprovalRequest)
        return outcome.error

    assert asyncio.run(call('{"x": 2, "y": 1}')) is not None  # no parameter y yet
    scale.parameters["properties"]["y"] = {"type": "integer"}
    scale.parameters["properties"]["x"]["maximum"] = 5
    assert (
        asyncio.run(call('{"x": 9}'))
        == "invalid call to scale: argument 'x': 9 is greater than the maximum of 5"
    )


def test_checkers_of_equal_schemas_are_one_and_a_schema_that_is_not_json_gets_its_own() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert checker_for(schema) is checker_for(json.loads(json.dumps(schema)))
    odd = {"type": "object", "properties": {"n": {"type": "integer", "default": object()}}}
    assert checker_for(odd) is not checker_for(odd)
    assert checker_for(odd).is_valid({"n": 1}) and not checker_for(odd).is_valid({"n": "1"})
