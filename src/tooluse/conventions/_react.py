"""Reading ReAct replies: ``Thought:`` / ``Action:`` / ``Final Answer:`` lines."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._syntax import SourceText, Span, parse_span

__all__ = ["ReactReading", "read_react"]


_MARKER = re.compile(
    r"^[ \t*]*(?P<kind>thought|action input|action|observation|final answer)[ \t*]*:[ \t*]*",
    re.IGNORECASE | re.MULTILINE,
)
# Any identifier, so that a misspelt tool is refused by name.
_ACTION = re.compile(r"(?P<name>[^\W\d][\w.\-]*)\s*(?P<rest>.*)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class _Marker:
    kind: str
    start: int
    body_start: int
    body_end: int


def _markers(text: str) -> list[_Marker]:
    found = list(_MARKER.finditer(text))
    out = []
    for m, following in itertools.zip_longest(found, found[1:]):
        end = following.start() if following is not None else len(text)
        out.append(_Marker(m["kind"].lower(), m.start(), m.end(), end))
    return out


def _json_object(whole: SourceText, start: int, end: int) -> dict[str, Any]:
    source = whole.text[start:end]
    try:
        value = json.loads(source)
    except json.JSONDecodeError as exc:
        raise whole.error(f"the arguments are not valid JSON: {exc.msg}", start + exc.pos) from None
    if not isinstance(value, dict):
        raise whole.error("the arguments must be one JSON object: {...}", start)
    return value


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _react_action(
    whole: SourceText,
    action: _Marker,
    given_input: _Marker | None,
    parameters: Mapping[str, Sequence[str]],
) -> list[tuple[str, dict[str, Any]]]:
    text = whole.text
    start, end = _strip_span(text, action.body_start, action.body_end)
    if text.startswith("[", start):
        return parse_span(Span(whole, start, end), parameters)
    match = _ACTION.fullmatch(text, start, end)
    if match is None:
        raise whole.error("expected a tool name after 'Action:'", start)
    name, rest = match["name"], match["rest"]
    rest_start = match.start("rest")
    if rest.startswith("["):
        inner_start, inner_end = _strip_span(text, rest_start + 1, end)
        if inner_end <= inner_start or text[inner_end - 1] != "]":
            raise whole.error("the '[' of the arguments is not closed with ']'", rest_start)
        inner_start, inner_end = _strip_span(text, inner_start, inner_end - 1)
        if inner_start == inner_end:
            return [(name, {})]
        return [(name, _json_object(whole, inner_start, inner_end))]
    if rest.startswith("("):
        return parse_span(Span(whole, start, end), parameters)
    if rest.strip():
        raise whole.error(
            f"unexpected text after the tool name {name!r}: write its arguments as "
            '[{"param": value}]',
            rest_start,
        )
    if given_input is None:
        return [(name, {})]
    input_start, input_end = _strip_span(text, given_input.body_start, given_input.body_end)
    if input_start == input_end:
        return [(name, {})]
    return [(name, _json_object(whole, input_start, input_end))]


@dataclass(slots=True)
class ReactReading:
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answer: str | None = None
    notes: list[str] = field(default_factory=list)


def read_react(text: str, parameters: Mapping[str, Sequence[str]]) -> ReactReading | None:
    """The calls or final answer of a ReAct reply; None if it has no ReAct lines."""
    markers = _markers(text)
    if not markers:
        return None
    whole = SourceText(text)
    reading = ReactReading()
    for index, marker in enumerate(markers):
        if marker.kind == "observation":
            if reading.calls:
                reading.notes.append(
                    "Everything from your 'Observation:' line on was ignored: "
                    "observations come from the tools."
                )
            break
        if marker.kind == "final answer":
            if reading.calls:
                reading.notes.append(
                    "Your 'Final Answer:' was ignored because it came with actions; "
                    "answer again once you have their results."
                )
                break
            reading.answer = text[marker.body_start : marker.body_end].strip()
            return reading
        if marker.kind == "action":
            following = markers[index + 1] if index + 1 < len(markers) else None
            given = following if following and following.kind == "action input" else None
            reading.calls.extend(_react_action(whole, marker, given, parameters))
    return reading
