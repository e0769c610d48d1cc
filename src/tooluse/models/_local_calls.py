"""Reading tool calls out of a local model's text, in whichever frame it wrote them.

The frames are the ones `tooluse.decoding.calls_grammar` allows, which are
the ones models emit on their own: ``<tool_call>{…}</tool_call>`` (Hermes),
a fenced ``json`` block of ``{"name": …, "arguments": …}`` objects, the same
objects bare, and a Python list of calls ``[get_weather(city="Paris")]``.
A call to a name that is not a tool is passed on like any other, for the
dispatcher to refuse with the names that were probably meant.

A reply that goes on to write a ``<tool_response>`` of its own (the model
playing the next turn) is cut there: the calls before it stand, the invented
result is dropped and reported, since every result in the context must come
from a call that ran.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from .._messages import ToolCall
from .._syntax import CallSyntaxError, SourceText, Span, parse_span
from ..decoding import CALL_CLOSE, CALL_OPEN

__all__ = ["ReadCalls", "read_calls"]

_TAGGED = re.compile(re.escape(CALL_OPEN) + r"(.*?)" + re.escape(CALL_CLOSE), re.DOTALL)
#: A fence cut off by the output limit still holds the calls completed before it.
_FENCED = re.compile(r"```[ \t]*(?:json)?[ \t]*\n(.*?)(?:\n?```|\Z)", re.DOTALL)
_DECODER = json.JSONDecoder()
#: The tag a tool's result comes back in (Hermes, and the prompt that describes tools).
RESULT_OPEN = "<tool_response>"


@dataclass(slots=True)
class ReadCalls:
    """The calls found, the prose around them, and what could not be read."""

    calls: list[ToolCall] = field(default_factory=list)
    content: str | None = None
    problems: list[str] = field(default_factory=list)


def read_calls(text: str, tool_names: Collection[str]) -> ReadCalls:
    """Split `text` into tool calls and the prose around them."""
    out = ReadCalls()
    invented = text.find(RESULT_OPEN)
    if invented != -1:
        text = text[:invented]
        out.problems.append(
            f"it went on to write a {RESULT_OPEN} itself, which was dropped: a result "
            "comes back only from a call that runs"
        )
    if CALL_OPEN in text:
        rest = _read_tagged(text, out)
    elif (fenced := _read_fenced(text, out)) is not None:
        rest = fenced
    elif (values := _json_values(text.strip())) is not None and _all_calls(values):
        _add_values(values, out)
        rest = ""
    elif (python := _python_calls(text.strip(), tool_names)) is not None:
        for name, arguments in python:
            _add(out, name, arguments)
        rest = ""
    else:
        rest = text
    out.content = rest.strip() or None
    return out


def _read_tagged(text: str, out: ReadCalls) -> str:
    known = len(out.problems)
    for i, match in enumerate(_TAGGED.finditer(text)):
        body = match.group(1).strip()
        try:
            value = json.loads(body)
        except json.JSONDecodeError as exc:
            out.problems.append(
                f"call {i + 1} is not valid JSON ({exc.msg} at column {exc.colno}): {body[:200]}"
            )
            continue
        if not _is_call(value):
            out.problems.append(
                f'call {i + 1} needs {{"name": ..., "arguments": {{...}}}}: {body[:200]}'
            )
            continue
        _add(out, value["name"], value.get("arguments", {}))
    if not out.calls and len(out.problems) == known:
        out.problems.append(
            f"a call was opened with {CALL_OPEN} but never closed with {CALL_CLOSE}"
        )
    return _TAGGED.sub("", text)


def _read_fenced(text: str, out: ReadCalls) -> str | None:
    """Calls from fenced JSON blocks; the text around them, or None if no block holds calls."""
    found = False
    for match in _FENCED.finditer(text):
        values = _json_values(match.group(1).strip())
        if values is not None and _all_calls(values):
            _add_values(values, out)
            found = True
    if not found:
        return None
    return _FENCED.sub(
        lambda m: "" if (v := _json_values(m.group(1).strip())) and _all_calls(v) else m.group(0),
        text,
    )


def _json_values(text: str) -> list[Any] | None:
    """The JSON values `text` consists of (one after another, maybe comma-separated).

    A value cut off at the end (the output limit) is dropped, keeping those
    before it, if there are any.
    """
    if not text.startswith(("{", "[")):
        return None
    values: list[Any] = []
    index = 0
    while index < len(text):
        try:
            value, index = _DECODER.raw_decode(text, index)
        except json.JSONDecodeError:
            if values and text.startswith(("{", "["), index):
                break
            return None
        values.append(value)
        while index < len(text) and text[index] in " \t\r\n,":
            index += 1
    return values


def _is_call(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("name"), str)


def _all_calls(values: list[Any]) -> bool:
    items = [item for v in values for item in (v if isinstance(v, list) else [v])]
    return bool(items) and all(_is_call(item) for item in items)


def _add_values(values: list[Any], out: ReadCalls) -> None:
    for value in values:
        for item in value if isinstance(value, list) else [value]:
            _add(out, item["name"], item.get("arguments", {}))


def _add(out: ReadCalls, name: str, arguments: Any) -> None:
    if isinstance(arguments, str):
        # Some models write the arguments as a JSON string, the way APIs send them.
        with contextlib.suppress(json.JSONDecodeError):
            arguments = json.loads(arguments)
    call_id = f"call_{len(out.calls) + 1}"
    out.calls.append(ToolCall(call_id, name, json.dumps(arguments, ensure_ascii=False)))


def _python_calls(text: str, tool_names: Collection[str]) -> list[tuple[str, Any]] | None:
    """``[f(a=1), g(b="x")]`` (or one call of a known tool) as (name, arguments); else None.

    Arguments go by name: a call with positional ones is not read as a call.
    """
    try:
        calls = parse_span(Span(SourceText(text), 0, len(text)), parameters=None)
    except CallSyntaxError:
        return None
    # Outside a list, only one call of a tool the model has reads as a call, not prose.
    if not text.startswith("[") and (len(calls) != 1 or calls[0][0] not in tool_names):
        return None
    return calls or None
