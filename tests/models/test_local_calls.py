"""Reading a local model's calls in every frame models write them in."""

from __future__ import annotations

import json

import pytest

from tooluse.conventions import JsonConvention
from tooluse.conventions._base import Retry
from tooluse.models import ModelResponse
from tooluse.models._local_calls import read_calls

TOOLS = ["get_weather", "get_rate", "math.factorial"]


def calls(text: str) -> list[tuple[str, object]]:
    return [(c.name, json.loads(c.arguments)) for c in read_calls(text, TOOLS).calls]


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
        '```json\n{\n  "name": "get_weather",\n  "arguments": {\n    "city": "Paris"\n  }\n}\n```',
        '```\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}',
        '[get_weather(city="Paris")]',
        "get_weather(city='Paris')",
    ],
)
def test_one_call_in_any_frame(text: str) -> None:
    read = read_calls(text, TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in read.calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert read.content is None and read.problems == []


def test_several_calls_in_one_frame_keep_their_order() -> None:
    expected = [("get_weather", {"city": "Oslo"}), ("get_rate", {"base": "EUR", "days": 2})]
    one = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    two = '{"name": "get_rate", "arguments": {"base": "EUR", "days": 2}}'
    assert calls(f"```json\n{one}\n{two}\n```") == expected
    assert calls(f"{one}\n{two}") == expected
    assert calls(f"{one},\n{two}") == expected
    assert calls('[get_weather(city="Oslo"), get_rate(base="EUR", days=2)]') == expected
    ids = [c.id for c in read_calls(f"{one}\n{two}", TOOLS).calls]
    assert ids == ["call_1", "call_2"]


def test_python_calls_take_dotted_names_and_python_literals() -> None:
    assert calls("[math.factorial(number=5, exact=True, base=None)]") == [
        ("math.factorial", {"number": 5, "exact": True, "base": None})
    ]


def test_prose_around_a_call_is_kept_as_content() -> None:
    read = read_calls(
        'Let me check.\n```json\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n```',
        TOOLS,
    )
    assert [c.name for c in read.calls] == ["get_weather"] and read.content == "Let me check."


@pytest.mark.parametrize(
    "text",
    [
        "It is sunny in Paris.",
        '```json\n{"type": "object", "properties": {"city": {"type": "string"}}}\n```',
        '{"temperature": 21}',
        "print(get_weather)",
        "[1, 2, 3]",
        'describe(city="Paris")',  # a lone call of something that is not a tool reads as prose
        "[get_weather(*cities)]",
        "[get_weather({1, 2})]",
    ],
)
def test_text_that_holds_no_call_is_an_answer(text: str) -> None:
    read = read_calls(text, TOOLS)
    assert read.calls == [] and read.problems == [] and read.content == text.strip()


def test_a_call_to_an_unknown_tool_is_passed_on_for_the_dispatcher_to_refuse() -> None:
    assert calls('{"name": "get_wether", "arguments": {"city": "Paris"}}') == [
        ("get_wether", {"city": "Paris"})
    ]
    assert calls('[get_wether(city="Paris")]') == [("get_wether", {"city": "Paris"})]


def test_broken_tagged_calls_are_reported() -> None:
    read = read_calls(
        'Let me check.\n<tool_call>{"name":"a","arguments":{"x":1}}</tool_call>\n'
        '<tool_call>{"name":"b","arguments":{</tool_call>',
        TOOLS,
    )
    assert [(c.name, json.loads(c.arguments)) for c in read.calls] == [("a", {"x": 1})]
    assert read.content == "Let me check."
    assert len(read.problems) == 1 and "call 2 is not valid JSON" in read.problems[0]

    unclosed = read_calls('<tool_call>{"name":"a","arguments":{}}', TOOLS)
    assert unclosed.calls == [] and "never closed" in unclosed.problems[0]


def test_calls_completed_before_the_output_limit_are_kept() -> None:
    one = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    cut = '{"name": "get_weather", "arguments": {"city": "Ro'
    assert calls(f"{one}\n{cut}") == [("get_weather", {"city": "Oslo"})]
    assert calls(f"```json\n{one}\n{cut}") == [("get_weather", {"city": "Oslo"})]
    # Text after a call that is not another call is no call at all.
    assert calls(f"{one}\nand then some prose") == []


def test_a_result_the_reply_writes_itself_is_dropped_and_reported() -> None:
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    invented = '<tool_response>\n{"name": "get_weather", "content": {"temp": 3}}\n</tool_response>'
    read = read_calls(f"{call}\n{invented}\nIt is 3 degrees in Oslo.", TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in read.calls] == [
        ("get_weather", {"city": "Oslo"})
    ]
    assert read.content is None
    assert len(read.problems) == 1 and "<tool_response>" in read.problems[0]

    answer = read_calls(f"Let me try London instead.\n\n{invented}", TOOLS)
    assert answer.calls == [] and answer.content == "Let me try London instead."
    assert "dropped" in answer.problems[0]

    # An unclosed call before the invented result is still reported as such.
    unclosed = read_calls(f'<tool_call>{{"name": "get_weather"\n{invented}', TOOLS)
    assert any("never closed" in p for p in unclosed.problems)


def test_a_reply_whose_only_call_was_an_invented_result_is_told_to_wait_for_results() -> None:
    invented = '<tool_response>\n{"name": "get_weather", "content": {"temp": 3}}\n</tool_response>'
    read = read_calls(f"Let me check.\n{invented}", TOOLS)
    response = ModelResponse(content=read.content, tool_calls=read.calls, problems=read.problems)
    retry = JsonConvention().interpret(response)
    assert isinstance(retry, Retry)
    assert "dropped" in retry.feedback
    assert "its result comes back in the next message" in retry.feedback
