"""Schemas normalized for grammars: closed objects, bounded strings, reported gaps."""

from __future__ import annotations

from typing import Any

from tooluse.decoding import normalize_schema


def test_objects_with_properties_are_closed_at_every_depth() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "a city"},
            "where": {"type": "object", "properties": {"lat": {"type": "number"}}},
            "tags": {
                "type": "array",
                "items": {"type": "object", "properties": {"k": {"type": "string"}}},
            },
        },
        "required": ["city"],
    }
    out = normalize_schema(schema).schema
    assert out["additionalProperties"] is False
    assert out["properties"]["where"]["additionalProperties"] is False
    assert out["properties"]["tags"]["items"]["additionalProperties"] is False
    assert out["required"] == ["city"]


def test_explicit_additional_properties_and_free_form_maps_are_kept() -> None:
    schema = {
        "type": "object",
        "properties": {
            "open": {
                "type": "object",
                "properties": {"a": {"type": "integer"}},
                "additionalProperties": True,
            },
            "map": {"type": "object", "additionalProperties": {"type": "integer"}},
            "anything": {"type": "object"},
        },
    }
    out = normalize_schema(schema).schema["properties"]
    assert out["open"]["additionalProperties"] is True
    assert out["map"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert out["anything"] == {"type": "object"}


def test_unbounded_strings_get_a_bound_and_constrained_ones_do_not() -> None:
    schema = {
        "type": "object",
        "properties": {
            "free": {"type": "string"},
            "short": {"type": "string", "maxLength": 5},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "long_min": {"type": "string", "minLength": 400},
        },
    }
    out = normalize_schema(schema, max_string_length=100).schema["properties"]
    assert out["free"]["maxLength"] == 100
    assert out["short"]["maxLength"] == 5
    assert "maxLength" not in out["unit"]
    assert "maxLength" not in out["code"]
    assert out["long_min"]["maxLength"] == 400
    assert (
        "maxLength"
        not in normalize_schema(schema, max_string_length=None).schema["properties"]["free"]
    )


def test_annotations_are_dropped_but_properties_named_like_them_are_not() -> None:
    schema = {
        "type": "object",
        "title": "T",
        "description": "what it does",
        "properties": {"description": {"type": "string", "default": "x", "examples": ["y"]}},
    }
    out = normalize_schema(schema, max_string_length=None).schema
    assert "title" not in out and "description" not in out
    assert out["properties"]["description"] == {"type": "string"}


def test_unenforceable_keywords_are_reported_with_their_path() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "ids": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
            "when": {"type": "string", "format": "iso-week"},
            "x": {"type": "float"},
            "y": {"not": {"type": "null"}},
        },
    }
    result = normalize_schema(schema)
    assert set(result.unenforced) == {
        "$.properties.ids: uniqueItems",
        "$.properties.when: format 'iso-week'",
        "$.properties.x: type 'float' (not a JSON Schema type)",
        "$.properties.y: not",
    }
    props = result.schema["properties"]
    assert "uniqueItems" not in props["ids"]
    assert "format" not in props["when"]
    assert "type" not in props["x"]
    assert props["y"] == {}


def test_supported_formats_and_numeric_bounds_stay() -> None:
    schema = {
        "type": "object",
        "properties": {
            "d": {"type": "string", "format": "date"},
            "n": {"type": "integer", "minimum": 1, "maximum": 9},
        },
    }
    result = normalize_schema(schema)
    assert result.unenforced == ()
    assert result.schema["properties"]["d"] == {"type": "string", "format": "date"}
    assert result.schema["properties"]["n"] == {"type": "integer", "minimum": 1, "maximum": 9}


def test_equal_schemas_share_a_key_whatever_the_key_order_or_annotations() -> None:
    a = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    b = {
        "required": ["q"],
        "description": "other words",
        "properties": {"q": {"description": "d", "type": "string"}},
        "type": "object",
    }
    assert normalize_schema(a).key == normalize_schema(b).key
    c = {"type": "object", "properties": {"q": {"type": "integer"}}, "required": ["q"]}
    assert normalize_schema(a).key != normalize_schema(c).key


def test_the_input_is_not_modified() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string", "description": "d"}}}
    normalize_schema(schema)
    assert schema == {"type": "object", "properties": {"q": {"type": "string", "description": "d"}}}


PERMISSION = {"enum": ["r", "rw"], "type": "string", "title": "SharingPermission"}


def test_local_references_are_inlined_and_definitions_dropped() -> None:
    # As pydantic writes an enum and a nested model (AgentDojo's share_file, MCP servers).
    schema = {
        "$defs": {
            "SharingPermission": PERMISSION,
            "Window": {
                "type": "object",
                "properties": {"start": {"type": "string", "format": "date"}},
                "required": ["start"],
            },
        },
        "type": "object",
        "properties": {
            "permission": {"$ref": "#/$defs/SharingPermission", "description": "who may edit"},
            "window": {"$ref": "#/$defs/Window"},
            "old": {"$ref": "#/definitions/Legacy"},
        },
        "definitions": {"Legacy": {"type": "integer", "minimum": 0}},
    }
    normalized = normalize_schema(schema)
    out = normalized.schema
    assert "$defs" not in out and "definitions" not in out and "$ref" not in normalized.key
    assert out["properties"]["permission"] == {"enum": ["r", "rw"], "type": "string"}
    window = out["properties"]["window"]
    assert window["properties"]["start"] == {"format": "date", "type": "string"}
    assert window["additionalProperties"] is False
    assert out["properties"]["old"] == {"minimum": 0, "type": "integer"}
    assert normalized.unenforced == ()


def test_a_reference_with_constraints_beside_it_keeps_both() -> None:
    schema = {
        "$defs": {"Name": {"type": "string", "maxLength": 20}},
        "type": "object",
        "properties": {"name": {"$ref": "#/$defs/Name", "minLength": 2}},
    }
    name = normalize_schema(schema).schema["properties"]["name"]
    assert name == {"allOf": [{"maxLength": 20, "type": "string"}, {"minLength": 2}]}


def test_recursive_and_dangling_references_are_reported_not_followed() -> None:
    tree = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "label": {"type": "string", "maxLength": 8},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
            }
        },
        "type": "object",
        "properties": {
            "root": {"$ref": "#/$defs/Node"},
            "gone": {"$ref": "#/$defs/Missing"},
            "remote": {"$ref": "https://example.com/schema.json"},
        },
    }
    normalized = normalize_schema(tree)
    root = normalized.schema["properties"]["root"]
    # One level is inlined; the recursion below it is left free, and the validator
    # still checks it after decoding.
    assert root["properties"]["label"] == {"maxLength": 8, "type": "string"}
    assert root["properties"]["children"] == {"items": {}, "type": "array"}
    assert normalized.unenforced == (
        "$.properties.root.properties.children.items: "
        "$ref '#/$defs/Node' (points back into itself)",
        "$.properties.gone: $ref '#/$defs/Missing' (cannot be resolved)",
        "$.properties.remote: $ref 'https://example.com/schema.json' (cannot be resolved)",
    )
