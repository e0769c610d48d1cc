"""`effects`: what a repeat of a call costs, declared once and agreeing with side effects."""

from __future__ import annotations

import pytest

from tooluse import Tool, ToolDefinitionError, tool


def noop(x: int) -> int:
    """Return x."""
    return x


@pytest.mark.parametrize(
    ("declared", "effects", "side_effects"),
    [
        ({}, "read", False),
        ({"side_effects": True}, "write", True),
        ({"effects": "read"}, "read", False),
        ({"effects": "idempotent"}, "idempotent", True),
        ({"effects": "write"}, "write", True),
        ({"effects": "idempotent", "side_effects": True}, "idempotent", True),
    ],
)
def test_effects_and_side_effects_agree(
    declared: dict[str, object], effects: str, side_effects: bool
) -> None:
    built = tool(**declared)(noop)  # type: ignore[call-overload]
    assert (built.effects, built.side_effects) == (effects, side_effects)
    raw = Tool.from_schema("noop", "Return x.", {"properties": {}}, noop, **declared)  # type: ignore[arg-type]
    assert (raw.effects, raw.side_effects) == (effects, side_effects)


def test_a_tool_cannot_read_only_and_have_side_effects() -> None:
    with pytest.raises(ToolDefinitionError, match="declare one"):
        tool(effects="read", side_effects=True)(noop)


def test_an_unknown_effect_is_refused_by_name() -> None:
    with pytest.raises(ToolDefinitionError, match="'read', 'idempotent' or 'write', got 'once'"):
        tool(effects="once")(noop)  # type: ignore[call-overload]
