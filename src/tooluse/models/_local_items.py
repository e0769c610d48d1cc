"""Items the user listed side by side, of which the run has looked up only some.

"Is it warmer in Paris or in London?", "I have 50 EUR and 30 GBP", "the USB-C
cable (A100), the wireless mouse (B100) and the keyboard (B200)": a small model
makes the call for the first item, then answers from that one result. Once a
call has taken one item of such a list for a parameter, the others are owed the
same call: `untaken_items` names them, with the tool and parameter, so that an
answer given while one is owed can be replaced by that call.

Items are codes (``B200``, ``TX-12``), dates, short capitalised abbreviations
(``GBP``) and capitalised names (``New York``). Two stand side by side where
they are of one kind, one follows the other after a comma, "and" or "or" with at
most three words between (``Paris or in London``, ``EUR and 30 GBP``), and the
word before each is the same kind (``in``/``in``, a number/a number, ``(``/``(``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .._messages import Message

__all__ = ["OwedItem", "admits", "owed_tool", "untaken_items"]


@dataclass(frozen=True, slots=True)
class OwedItem:
    """An item of the user's list no call has taken: `tool`'s `parameter` took another."""

    tool: str
    parameter: str
    value: str


#: A code, a date, an abbreviation or a capitalised name, standing alone.
_ITEM = re.compile(
    r"(?<![\w-])(?:[A-Z][A-Za-z]*-?\d[\w-]*|\d{4}-\d{2}-\d{2}|[A-Z]{2,5}"
    r"|[A-Z][a-z]+(?: [A-Z][a-z]+)*)(?![\w-])"
)
#: What joins two items of a list: a comma, "and" or "or", right after the first.
_JOIN = re.compile(r"\W*(?:,|\band\b|\bor\b)\W*")
#: The token before an item: a number, a word, or a sign.
_BEFORE = re.compile(r"(\d+(?:\.\d+)?|[A-Za-z]+|[^\sA-Za-z0-9])\s*$")
_SENTENCE = re.compile(r"(?<=[.?!])\s+")
_WORD = re.compile(r"\w+")
#: Words an item may stand apart from the one before it in a list.
_MAX_BETWEEN = 3


def untaken_items(messages: Iterable[Message]) -> list[OwedItem]:
    """The items of the task's lists that a call took a sibling of, and none has taken.

    The task is the last user message; the calls are every call of the run
    whose arguments are an object. Empty until a call has taken an item.
    """
    messages = list(messages)
    task = next((m.content for m in reversed(messages) if m.role == "user" and m.content), "")
    calls = [
        (call.name, arguments)
        for m in messages
        for call in m.tool_calls
        if isinstance(arguments := _arguments(call.arguments), dict)
    ]
    taken = {v.lower() for _, arguments in calls for v in arguments.values() if isinstance(v, str)}
    owed: dict[str, OwedItem] = {}
    for sentence in _SENTENCE.split(task):
        items = [m for m in _ITEM.finditer(sentence) if not _opens(m)]
        for first, second in _side_by_side(sentence, items):
            for known, other in ((first, second), (second, first)):
                value = other.group()
                if value.lower() in taken or value in owed:
                    continue
                for tool, parameter in _takers(known.group(), calls):
                    owed[value] = OwedItem(tool, parameter, value)
                    break
    return list(owed.values())


def admits(parameters: dict[str, Any], item: OwedItem) -> bool:
    """Whether `parameters` (a tool's JSON Schema) may take `item`'s value for its parameter.

    Read are the property's type, enum, const, pattern and length; a property
    the schema does not list is taken where other properties are allowed.
    """
    properties = parameters.get("properties") or {}
    schema = properties.get(item.parameter)
    if schema is None:
        return parameters.get("additionalProperties", True) is not False
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind is not None and "string" not in (kind if isinstance(kind, list) else [kind]):
        return False
    if "enum" in schema and item.value not in schema["enum"]:
        return False
    if "const" in schema and item.value != schema["const"]:
        return False
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and re.search(pattern, item.value) is None:
        return False
    size = len(item.value)
    return bool(schema.get("minLength", 0) <= size <= schema.get("maxLength", size))


def owed_tool(parameters: dict[str, Any], item: OwedItem) -> dict[str, Any]:
    """`parameters` (a tool's JSON Schema) with `item`'s parameter fixed to its value."""
    properties = dict(parameters.get("properties") or {})
    fixed = {k: v for k, v in (properties.get(item.parameter) or {}).items() if k == "description"}
    properties[item.parameter] = {**fixed, "const": item.value}
    required = list(parameters.get("required") or [])
    if item.parameter not in required:
        required.append(item.parameter)
    return {**parameters, "properties": properties, "required": required}


def _arguments(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _opens(item: re.Match[str]) -> bool:
    """Whether `item` is a plain capitalised word at the start of its sentence."""
    return item.start() == 0 and _kind(item.group()) == "name"


def _kind(value: str) -> str:
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return "date"
    if any(c.isdigit() for c in value):
        return "code"
    return "abbreviation" if value.isupper() else "name"


def _before(sentence: str, start: int) -> str | None:
    """The kind of token before position `start`: a number, a word (lowered) or a sign."""
    found = _BEFORE.search(sentence[:start])
    if found is None:
        return None
    token = found.group(1)
    return "#" if token[0].isdigit() else token.lower()


def _side_by_side(
    sentence: str, items: list[re.Match[str]]
) -> Iterator[tuple[re.Match[str], re.Match[str]]]:
    """Pairs of items of one list: one kind, joined, few words apart, alike before."""
    for i, first in enumerate(items):
        for second in items[i + 1 :]:
            if _kind(first.group()) != _kind(second.group()):
                continue
            between = sentence[first.end() : second.start()]
            join = _JOIN.match(between)
            if join is None or len(_WORD.findall(between[join.end() :])) > _MAX_BETWEEN:
                continue
            if _before(sentence, first.start()) == _before(sentence, second.start()):
                yield first, second


def _takers(value: str, calls: list[tuple[str, dict[str, Any]]]) -> Iterator[tuple[str, str]]:
    """The (tool, parameter) pairs whose calls took `value`, first call first."""
    for tool, arguments in calls:
        for parameter, given in arguments.items():
            if isinstance(given, str) and given.lower() == value.lower():
                yield tool, parameter
