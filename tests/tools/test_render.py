"""Every rendering of the sample tools, snapshot-tested; stubs are valid Python."""

from __future__ import annotations

import ast
import inspect
import json
from typing import Any

from syrupy.assertion import SnapshotAssertion

from examples.seed_tools import toolbox as seed_toolbox
from tools.sample_tools import TOOLS
from tooluse._tokens import count_tokens


def test_openai_rendering(snapshot: SnapshotAssertion) -> None:
    assert TOOLS.to_openai() == snapshot


def test_openai_strict_rendering(snapshot: SnapshotAssertion) -> None:
    assert TOOLS.to_openai(strict=True) == snapshot


def test_anthropic_rendering(snapshot: SnapshotAssertion) -> None:
    assert TOOLS.to_anthropic() == snapshot


def test_stub_module(snapshot: SnapshotAssertion) -> None:
    assert TOOLS.stub_module() == snapshot


def test_seed_stub_module(snapshot: SnapshotAssertion) -> None:
    assert seed_toolbox.stub_module() == snapshot


def _objects(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node:
            found.append(node)
        for value in node.values():
            found.extend(_objects(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_objects(item))
    return found


def _schemas(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.append(node)
        for key, value in node.items():
            if key == "properties":
                for prop in value.values():
                    found.extend(_schemas(prop))
            else:
                found.extend(_schemas(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_schemas(item))
    return found


def test_strict_mode_rules_hold_for_every_object() -> None:
    for rendered in TOOLS.to_openai(strict=True):
        function = rendered["function"]
        assert function["strict"] is True
        for obj in _objects(function["parameters"]):
            assert obj["additionalProperties"] is False
            assert obj["required"] == list(obj["properties"])
        assert all("default" not in obj for obj in _schemas(function["parameters"]))


def test_strict_mode_makes_optional_parameters_nullable() -> None:
    weather = TOOLS.to_openai(strict=True)[0]["function"]["parameters"]
    assert weather["properties"]["unit"]["type"] == ["string", "null"]
    assert None in weather["properties"]["unit"]["enum"]
    assert weather["properties"]["location"]["type"] == "string"


def test_stub_modules_parse_and_define_the_documented_signatures() -> None:
    for box in (TOOLS, seed_toolbox):
        source = box.stub_module()
        ast.parse(source)
        namespace: dict[str, Any] = {}
        # dont_inherit: this file's postponed annotations must not hide a broken stub.
        exec(compile(source, "<stubs>", "exec", dont_inherit=True), namespace)
        for signature in box.stub_signatures():
            function = namespace[signature.function]
            params = list(inspect.signature(function).parameters)
            assert params == [p for p, _ in signature.params]
            assert function.__doc__


def test_stub_names_are_made_valid_python() -> None:
    signature = next(s for s in TOOLS.stub_signatures() if s.tool == "user.lookup")
    assert signature.function == "user_lookup"
    assert dict(signature.params) == {"user_id": "user-id", "from_": "from", "fields": "fields"}


def test_seed_tool_schemas_fit_in_400_tokens() -> None:
    compact = json.dumps(seed_toolbox.to_openai(), separators=(",", ":"))
    assert count_tokens(compact) <= 400
    descriptions = [t["function"]["description"] for t in seed_toolbox.to_openai()]
    assert all(descriptions)
