"""A reply that starts by saying what must be done next, taken as that step's call.

After a tool's result a small model often answers with the plan instead of the
step: "To calculate the total price in British pounds, we need to convert the
price from USD to GBP using the current exchange rate." and then a rate from
its own memory. The first sentence names the call the run needs; the rest
makes the answer up. `StepWatch` follows an answer as it is decoded and stops
it at the end of its first sentence when that sentence announces a step, so
that the model can be asked to go on, under a grammar that allows only calls,
from its own words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence

from .._messages import Message, ToolCall
from .._records import call_identity

__all__ = [
    "ANNOUNCED_STEP",
    "StepWatch",
    "announced_step",
    "first_sentence",
    "makes_new_calls",
    "whole_sentences",
]

#: A first sentence (`first_sentence`) that says what must be done: "We need
#: to …", "To X, we need to Y.", "First, I'll need to check my calendar.", "To
#: convert it, we use the formula:".
ANNOUNCED_STEP = re.compile(
    r"(?:(?:to|first|next|then|now|so)\b[^\n]*?,\s*)?"
    r"(?:we|I)(?:'ll| will)? (?:first )?(?:need to|must|have to|use|can use|should)\b",
    re.IGNORECASE,
)
#: A sentence ends at a full stop or colon followed by a blank, or at a line's end.
_SENTENCE_END = re.compile(r"[.:](?=\s)|\n")


def first_sentence(text: str) -> str | None:
    """`text`'s first sentence, once the text shows where it ends; else None."""
    text = text.lstrip()
    end = _SENTENCE_END.search(text)
    if end is None:
        return None
    return text[: end.start() + (0 if end.group() == "\n" else 1)].rstrip()


def whole_sentences(text: str) -> str | None:
    """The sentences of `text` that have ended (a text ends one only where a blank follows)."""
    ends = [end.end() for end in _SENTENCE_END.finditer(text)]
    return (text[: ends[-1]].strip() or None) if ends else None


def announced_step(text: str, pattern: re.Pattern[str] = ANNOUNCED_STEP) -> str | None:
    """The first sentence of `text` where it announces a step (`pattern`), else None.

    A text whose first sentence has not ended yet announces nothing.
    """
    sentence = first_sentence(text)
    if sentence is None or not pattern.match(sentence):
        return None
    return sentence


class StepWatch:
    """Decides, token by token, whether an answer being decoded announces a step.

    Called with the tokens so far and the next one, before that token joins
    the output: true once the first sentence has ended (the next token shows
    it) and announces a step, which `step` then holds. The decision is made
    once, at the first sentence's end; a reply that opens a call is never
    stopped.
    """

    def __init__(
        self, detokenize: Callable[[Sequence[int]], str], pattern: re.Pattern[str]
    ) -> None:
        self._detokenize = detokenize
        self._pattern = pattern
        self._settled = False
        self.step: str | None = None

    def __call__(self, out: Sequence[int], token: int | None) -> bool:
        """Whether to stop before `token` (None: the reply ends after `out`)."""
        if self._settled:
            return False
        if token is None:
            text = self._detokenize(out).strip() + "\n"
        else:
            text = self._detokenize([*out, token]).lstrip()
        if text[:1] in ("<", "{", "[", "`"):
            self._settled = True  # a call, which is not for this watch to stop
            return False
        sentence = first_sentence(text)
        if sentence is None:
            return False
        self._settled = True
        if self._pattern.match(sentence):
            self.step = sentence
        return self.step is not None


def makes_new_calls(calls: Sequence[ToolCall], messages: Iterable[Message]) -> bool:
    """Whether `calls` hold one the run (its `messages`) has not made, with these arguments,
    nor made again on its own result.

    A model that announces the same step after its result would otherwise take
    it round after round. Made again on its own result is a call the same as an
    earlier one but for one argument, which is now that call's result (a bare
    value, or the result's field of the argument's name): ``convert_time(time=
    "18:00", from_city="London", to_city="Tokyo")`` after the same call on
    ``"09:00"`` gave ``{"time": "18:00"}``; converting the result again answers
    nothing the task asked. (A lookup that follows a field of another name, as
    ``get_employee(email=...)`` does a record's ``manager_email``, is new.)
    """
    messages = list(messages)
    made = {_identity(call) for message in messages for call in message.tool_calls}
    results = {m.tool_call_id: m.content for m in messages if m.role == "tool" and m.content}
    earlier = [
        (call.name, arguments, _parsed(results.get(call.id)))
        for message in messages
        for call in message.tool_calls
        if isinstance(arguments := _parsed(call.arguments), dict)
    ]
    return any(_identity(call) not in made and not _fed_back(call, earlier) for call in calls)


def _parsed(text: str | None) -> object:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _fed_back(call: ToolCall, earlier: list[tuple[str, dict[str, object], object]]) -> bool:
    """Whether `call` is an earlier call of its tool made again on that call's result."""
    arguments = _parsed(call.arguments)
    if not isinstance(arguments, dict):
        return False
    for name, before, result in earlier:
        if name != call.name or before.keys() != arguments.keys():
            continue
        changed = [k for k in arguments if arguments[k] != before[k]]
        if len(changed) != 1:
            continue
        [key] = changed
        value = result.get(key) if isinstance(result, dict) else result
        if value is not None and _alike(arguments[key], value):
            return True
    return False


def _alike(given: object, value: object) -> bool:
    """Whether an argument is a result's value: equal, or the same number written out."""
    if given == value:
        return True
    try:
        return float(given) == float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def _identity(call: ToolCall) -> tuple[str, str]:
    """`call_identity` of a call as the model wrote it (its text, where that is not an object)."""
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        return call.name, call.arguments
    if not isinstance(arguments, dict):
        return call.name, call.arguments
    return call_identity(call.name, arguments)
