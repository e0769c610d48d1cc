"""BFCL function descriptions as tools; ground-truth values as Java and JavaScript text."""

from __future__ import annotations

import ast

import pytest

from tooluse.eval.bfcl._java_js import java_value, js_value
from tooluse.eval.bfcl._multi_turn import call_text, parse_call
from tooluse.eval.bfcl._single_turn import bfcl_parameters, bfcl_tool, truth_calls
from tooluse.eval.bfcl._values import java_source, js_source
from tooluse.tools import Toolbox


def test_python_types_map_to_json_schema() -> None:
    schema = bfcl_parameters(
        {
            "type": "dict",
            "properties": {
                "ratio": {"type": "float", "description": "A ratio.", "default": 0.5},
                "point": {"type": "tuple", "items": {"type": "integer"}},
                "anything": {"type": "any"},
                "options": {"type": "dict", "properties": {"deep": {"type": "boolean"}}},
                "metrics": {"type": "array", "items": {"type": "string"}, "enum": ["a", "b"]},
                "ghost": {"type": "weird"},
            },
            "required": ["ratio", "missing"],
        }
    )
    props = schema["properties"]
    assert props["ratio"] == {"type": "number", "description": "A ratio.", "default": 0.5}
    assert props["point"] == {"type": "array", "items": {"type": "integer"}}
    assert props["anything"] == props["ghost"] == {"type": "string"}
    # BFCL's nested properties are examples: nested objects stay open.
    assert props["options"]["additionalProperties"] is True
    # An enum on an array constrains its items.
    assert props["metrics"] == {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
    assert schema["required"] == ["ratio"]


def test_java_and_javascript_parameters_are_source_text() -> None:
    schema = bfcl_parameters(
        {
            "properties": {
                "ids": {"type": "ArrayList", "items": {"type": "long"}, "description": "Ids."}
            }
        },
        "java",
    )
    ids = schema["properties"]["ids"]
    assert ids["type"] == "string"
    assert "Java value of type ArrayList" in ids["description"]
    assert "elements are of type long" in ids["description"]


def test_dotted_names_are_shown_with_underscores_in_both_conventions() -> None:
    tool = bfcl_tool({"name": "math.gcd", "description": "GCD.", "parameters": {}}, "python")
    assert tool.name == "math_gcd"
    (signature,) = Toolbox([tool]).stub_signatures()
    assert signature.function == "math_gcd"


def test_truth_prefers_the_enum_spelling_of_an_answer() -> None:
    functions = [
        {
            "name": "films.find",
            "parameters": {
                "properties": {"genre": {"type": "string", "enum": ["Horror", "Drama"]}},
                "required": ["genre"],
            },
        }
    ]
    (call,) = truth_calls(functions, [{"films.find": {"genre": ["horror"]}}], "python")
    assert call.tool == "films_find"
    assert call.arguments == {"genre": "Horror"}


@pytest.mark.parametrize(
    ("value", "java_type", "item_type"),
    [
        (42, "long", None),
        (1.5, "float", None),
        (True, "boolean", None),
        ([1, 2, 3], "Array", "integer"),
        (["a", "b"], "ArrayList", "String"),
        ({"k": "v", "n": 2}, "HashMap", None),
        ("plain text", "String", None),
    ],
)
def test_java_source_reads_back_as_the_value(
    value: object, java_type: str, item_type: str | None
) -> None:
    assert java_value(java_source(value, java_type, item_type), java_type, item_type) == value


@pytest.mark.parametrize(
    ("value", "js_type"),
    [
        (12345678901234, "Bigint"),
        ([1, "x", True], "array"),
        ({"a": 1, "b": [2]}, "dict"),
        (2.5, "float"),
    ],
)
def test_js_source_reads_back_as_the_value(value: object, js_type: str) -> None:
    assert js_value(js_source(value, js_type), js_type) == value


def test_multi_turn_calls_round_trip_through_bfcl_text() -> None:
    def sort(file_name: str) -> None: ...

    call = parse_call("sort('report.pdf')", {"sort": sort})
    assert (call.tool, dict(call.arguments)) == ("sort", {"file_name": "report.pdf"})
    text = call_text("mv", {"source": "a b.txt", "tags": ["x"], "force": True})
    assert text == "mv(source='a b.txt',tags=['x'],force=True)"
    parsed = ast.parse(text, mode="eval").body
    assert isinstance(parsed, ast.Call) and len(parsed.keywords) == 3
