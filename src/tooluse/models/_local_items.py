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
An item the user gave with a number (``50 EUR``, ``30 GBP``) carries it: a
call took the item only if it passed that number too, where it passed a number
at all, and the owed call takes it in the number parameter the sibling's call
filled (``convert_currency(amount=30, from_currency="GBP", ...)``, where the
model had added the two amounts and converted 80 of each).

Where the task asks about each, every or all of something, a tool's result
that is a list is such a list too: once a call has taken one of its strings
(``get_stock(sku="GAR-2425")`` after ``list_products`` gave ``["GAR-2425",
"GAR-F66A"]``), the others are owed the same call. In a list of records the
strings under one key are the list (``[{"sku": "C100", ...}, ...]``). Where
exactly one other tool takes such items, they are owed its call before any is
taken: for records, the one tool that requires a parameter of the key's name
("how many of each are in stock" after the products were listed:
``check_stock(sku=...)``); for strings, the one tool whose one required
parameter is a string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .._messages import Message

__all__ = ["OwedItem", "admits", "owed_tool", "untaken_items"]


@dataclass(frozen=True, slots=True)
class OwedItem:
    """An item of the user's list no call has taken: `tool`'s `parameter` took another.

    `quantity` is the number the user gave with the item, with the parameter
    that takes it: the number parameter of the call that took the sibling.
    """

    tool: str
    parameter: str
    value: str
    quantity: tuple[str, int | float] | None = None


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
#: A task that asks about each, every or all of something.
_EVERY = re.compile(r"\b(?:each|every|all)\b", re.IGNORECASE)
_WORD = re.compile(r"\w+")
#: Words an item may stand apart from the one before it in a list.
_MAX_BETWEEN = 3


def untaken_items(
    messages: Iterable[Message], tools: Mapping[str, dict[str, Any]] | None = None
) -> list[OwedItem]:
    """The items of the task's lists, and of the lists results gave, that a call took a
    sibling of, and none has taken.

    The task is the last user message; the calls are every call of the run
    whose arguments are an object. `tools` (name to JSON Schema of parameters)
    are those a result's list may be owed before any of its items is taken.
    """
    messages = list(messages)
    task = next((m.content for m in reversed(messages) if m.role == "user" and m.content), "")
    calls = _calls(messages)
    taken = {v.lower() for _, arguments in calls for v in arguments.values() if isinstance(v, str)}
    owed: dict[str, OwedItem] = {}
    for sentence in _SENTENCE.split(task):
        items = [m for m in _ITEM.finditer(sentence) if not _opens(m)]
        for first, second in _side_by_side(sentence, items):
            for known, other in ((first, second), (second, first)):
                value = other.group()
                number = _quantity(sentence, other.start())
                if value in owed or _took(value, number, calls):
                    continue
                for tool, parameter, arguments in _calls_taking(known.group(), calls):
                    filled = [p for p, v in arguments.items() if _is_number(v)]
                    quantity = None
                    if number is not None and len(filled) == 1:
                        quantity = (filled[0], number)
                    owed[value] = OwedItem(tool, parameter, value, quantity)
                    break
    if _EVERY.search(task):
        for at, producer, key, listed in _listed(messages):
            later = _calls(messages[at + 1 :])  # the calls made once the list was given
            taker = next((t for v in listed if v.lower() in taken for t in _takers(v, later)), None)
            if taker is None:
                taker = _sole_taker(key, producer, tools or {})
            if taker is None:
                continue
            for value in listed:
                if value.lower() not in taken and value not in owed:
                    owed[value] = OwedItem(*taker, value)
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
    if not schema.get("minLength", 0) <= size <= schema.get("maxLength", size):
        return False
    return item.quantity is None or _admits_number(properties, *item.quantity)


def _admits_number(properties: Mapping[str, Any], parameter: str, number: float) -> bool:
    """Whether the property `parameter` of a tool's schema may take `number`."""
    schema = properties.get(parameter)
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    whole = "integer" in kinds and float(number).is_integer()
    if kind is not None and "number" not in kinds and not whole:
        return False
    low, high = schema.get("minimum"), schema.get("maximum")
    return (low is None or number >= low) and (high is None or number <= high)


def owed_tool(parameters: dict[str, Any], item: OwedItem) -> dict[str, Any]:
    """`parameters` (a tool's JSON Schema) with `item`'s parameter fixed to its value,
    and the parameter of its quantity, if it has one, to that number."""
    properties = dict(parameters.get("properties") or {})
    required = list(parameters.get("required") or [])
    constants: list[tuple[str, Any]] = [(item.parameter, item.value)]
    if item.quantity is not None:
        constants.append(item.quantity)
    for parameter, value in constants:
        kept = properties.get(parameter) or {}
        properties[parameter] = {k: v for k, v in kept.items() if k == "description"}
        properties[parameter]["const"] = value
        if parameter not in required:
            required.append(parameter)
    return {**parameters, "properties": properties, "required": required}


def _arguments(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _calls(messages: Iterable[Message]) -> list[tuple[str, dict[str, Any]]]:
    """The calls among `messages` whose arguments are an object, first to last."""
    return [
        (call.name, arguments)
        for m in messages
        for call in m.tool_calls
        if isinstance(arguments := _arguments(call.arguments), dict)
    ]


def _listed(
    messages: list[Message],
) -> Iterator[tuple[int, str | None, str | None, list[str]]]:
    """The lists of strings the run's tool results are: where each is among `messages`,
    the tool that gave it, and a list's strings (key None) or the strings under one key
    of a list of records."""
    names = {call.id: call.name for m in messages for call in m.tool_calls}
    for at, message in enumerate(messages):
        if message.role != "tool" or not message.content:
            continue
        result = _arguments(message.content)
        if not isinstance(result, list):
            continue
        producer = names.get(message.tool_call_id or "")
        strings = [item for item in result if isinstance(item, str)]
        if strings:
            yield at, producer, None, strings
        by_key: dict[str, list[str]] = {}
        for record in result:
            if isinstance(record, dict):
                for key, value in record.items():
                    if isinstance(value, str):
                        by_key.setdefault(key, []).append(value)
        for key, values in by_key.items():
            yield at, producer, key, values


def _sole_taker(
    key: str | None, producer: str | None, tools: Mapping[str, dict[str, Any]]
) -> tuple[str, str] | None:
    """The one tool but `producer` that takes the items of a list, if one alone does.

    For the strings under `key` in a list of records, the tool that requires a
    parameter of that name; for a list of strings (`key` None), the tool whose one
    required parameter is a string.
    """
    takers: list[tuple[str, str]] = []
    for name, parameters in tools.items():
        required = list(parameters.get("required") or [])
        if name == producer:
            continue
        if key is not None and key in required:
            takers.append((name, key))
        elif key is None and len(required) == 1:
            schema = (parameters.get("properties") or {}).get(required[0]) or {}
            if isinstance(schema, dict) and schema.get("type") == "string":
                takers.append((name, required[0]))
    return takers[0] if len(takers) == 1 else None


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
    for tool, parameter, _ in _calls_taking(value, calls):
        yield tool, parameter


def _calls_taking(
    value: str, calls: list[tuple[str, dict[str, Any]]]
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """The calls that took `value`: each tool, the parameter that took it, and its arguments."""
    for tool, arguments in calls:
        for parameter, given in arguments.items():
            if _same(given, value):
                yield tool, parameter, arguments


def _same(given: object, value: str) -> bool:
    return isinstance(given, str) and given.lower() == value.lower()


def _is_number(given: object) -> bool:
    return isinstance(given, int | float) and not isinstance(given, bool)


def _took(value: str, number: float | None, calls: list[tuple[str, dict[str, Any]]]) -> bool:
    """Whether a call took `value`, and with it `number` where the call passed a number."""
    for _, _, arguments in _calls_taking(value, calls):
        numbers = [given for given in arguments.values() if _is_number(given)]
        if number is None or not numbers or number in numbers:
            return True
    return False


def _quantity(sentence: str, start: int) -> int | float | None:
    """The number right before the item at `start` ("50 EUR"), if there is one."""
    found = _BEFORE.search(sentence[:start])
    if found is None or not found.group(1)[0].isdigit():
        return None
    token = found.group(1)
    return float(token) if "." in token else int(token)
