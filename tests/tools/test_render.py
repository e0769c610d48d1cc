"""Every rendering of the sample tools, snapshot-tested; stubs are valid Python."""

from __future__ import annotations

import ast
import enum
import inspect
import json
import typing
from typing import Any

from pydantic import BaseModel, create_model
from syrupy.assertion import SnapshotAssertion

from examples.seed_tools import toolbox as seed_toolbox
from tools.sample_tools import TOOLS
from tooluse import Toolbox, tool
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


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Size(enum.IntEnum):
    SMALL = 1
    LARGE = 3


class Paint(BaseModel):
    color: Color
    size: Size = Size.SMALL


class Node(BaseModel):
    label: str
    children: list[Node] = []


@tool
def paint(color: Color, paint: Paint, sizes: list[Size] | None = None) -> Color:
    """Paint something."""
    return color


@tool
def grow(root: Node, mode: Color = Color.GREEN) -> int:
    """Grow a tree."""
    return len(root.children)


def _exec_stub(box: Toolbox) -> dict[str, Any]:
    source = box.stub_module()
    ast.parse(source)
    namespace: dict[str, Any] = {}
    exec(compile(source, "<stubs>", "exec", dont_inherit=True), namespace)
    return namespace


def test_enums_render_as_their_values() -> None:
    box = Toolbox([paint, grow])
    source = box.stub_module()
    assert "class Color" not in source and "class Size" not in source
    namespace = _exec_stub(box)
    assert typing.get_args(namespace["Color"]) == ("red", "green")
    assert typing.get_args(namespace["Size"]) == (1, 3)
    hints = typing.get_type_hints(namespace["paint"])
    assert hints["color"] == namespace["Color"]
    assert typing.get_type_hints(namespace["Paint"])["color"] == namespace["Color"]
    assert "def grow(root: Node, mode: Color = 'green') -> int:" in source
    # The recursive model still refers to itself.
    assert (
        typing.get_type_hints(namespace["Node"], namespace)["children"] == list[namespace["Node"]]
    )


SearchOptions = create_model("Options", limit=(int, 10))
SortOptions = create_model("Options", descending=(bool, False))


@tool
def search(query: str, options: SearchOptions) -> list[str]:  # type: ignore[valid-type]
    """Search."""
    return []


@tool
def sort(items: list[str], options: SortOptions) -> list[str]:  # type: ignore[valid-type]
    """Sort."""
    return items


@tool
def search_again(query: str, options: SearchOptions) -> list[str]:  # type: ignore[valid-type]
    """Search once more."""
    return []


def test_types_that_share_a_name_get_names_of_their_own() -> None:
    box = Toolbox([search, sort, search_again])
    namespace = _exec_stub(box)

    def fields(function: str) -> set[str]:
        options = typing.get_type_hints(namespace[function])["options"]
        return set(typing.get_type_hints(options))

    assert fields("search") == {"limit"}
    assert fields("sort") == {"descending"}
    assert fields("search_again") == {"limit"}
    source = box.stub_module()
    assert source.count("class Options(TypedDict)") == 1
    assert source.count("class SortOptions(TypedDict)") == 1


class Mode(enum.Enum):
    FAST = "fast"


class OtherMode(enum.Enum):
    SLOW = "slow"
    SAFE = "safe"


OtherMode.__name__ = OtherMode.__qualname__ = "Mode"


@tool
def run_fast(mode: Mode) -> str:
    """Run."""
    return mode.value


@tool
def run_slow(mode: OtherMode) -> str:
    """Run carefully."""
    return mode.value


def test_enums_that_share_a_name_keep_their_own_values() -> None:
    namespace = _exec_stub(Toolbox([run_fast, run_slow]))
    fast = typing.get_type_hints(namespace["run_fast"])["mode"]
    slow = typing.get_type_hints(namespace["run_slow"])["mode"]
    assert typing.get_args(fast) == ("fast",)
    assert typing.get_args(slow) == ("slow", "safe")


def test_type_names_do_not_shadow_what_the_stub_imports() -> None:
    literal = create_model("Literal", text=(str, ...))

    @tool(localns={"Shadow": literal})
    def quote(item: Shadow, style: typing.Literal["a", "b"]) -> str:  # type: ignore[valid-type]  # noqa: F821
        """Quote."""
        return ""

    namespace = _exec_stub(Toolbox([quote]))
    hints = typing.get_type_hints(namespace["quote"])
    assert set(typing.get_type_hints(hints["item"])) == {"text"}
    assert typing.get_args(hints["style"]) == ("a", "b")
