"""The oracle's text-convention replies read back as the calls they write."""

from __future__ import annotations

import json
from typing import Any

from tooluse import Tool, Toolbox
from tooluse.conventions import Calls, TextConvention, parse_python_calls
from tooluse.eval import Call
from tooluse.eval._oracle import python_calls
from tooluse.models import ModelResponse


def _tools() -> Toolbox:
    def run(**kwargs: Any) -> Any:
        return kwargs

    anything = {"type": "object", "properties": {}, "additionalProperties": True}
    return Toolbox(
        [
            Tool.from_schema(
                "math.factorial",
                "",
                {"type": "object", "properties": {"number": {"type": "integer"}}},
                run,
            ),
            Tool.from_schema(
                "book-flight",
                "",
                {
                    "type": "object",
                    "properties": {
                        "from": {"type": "string"},
                        "user-id": {"type": "integer"},
                        "tools": {"type": "array"},
                        "extra": anything,
                    },
                },
                run,
            ),
        ]
    )


CALLS = [
    Call("math.factorial", {"number": -5}),
    Call(
        "book-flight",
        {
            "from": 'O\'Hare "ORD"\nterminal 2 – ✈',
            "user-id": 7,
            "tools": [None, True, 1.5e-07, {"k": [1, 2]}],
            "extra": {"nested": {"a": None}, "n": -0.0},
        },
    ),
]


def test_python_calls_are_bfcl_call_lists_under_the_names_the_model_is_shown() -> None:
    text = python_calls(CALLS)
    assert text.startswith("[math.factorial(number=-5), book_flight(from_='O")
    assert "user_id=7" in text and "tools_=[None, True, 1.5e-07, {'k': [1, 2]}]" in text
    assert "\n" not in text
    assert [name for name, _ in parse_python_calls(text)] == ["math.factorial", "book_flight"]


def test_the_text_convention_reads_the_oracle_back_as_the_truth() -> None:
    convention = TextConvention()
    convention.prepare(_tools(), None)
    action = convention.interpret(ModelResponse(content=python_calls(CALLS)))
    assert isinstance(action, Calls)
    read = [Call(c.name, json.loads(c.arguments)) for c in action.calls]
    assert read == [Call(c.tool, json.loads(json.dumps(c.arguments))) for c in CALLS]
