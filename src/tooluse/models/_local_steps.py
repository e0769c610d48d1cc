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
    """Whether `calls` hold one the run (its `messages`) has not made, with these arguments.

    A model that announces the same step after its result would otherwise take
    it round after round.
    """
    made = {_identity(call) for message in messages for call in message.tool_calls}
    return any(_identity(call) not in made for call in calls)


def _identity(call: ToolCall) -> tuple[str, str]:
    """`call_identity` of a call as the model wrote it (its text, where that is not an object)."""
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        return call.name, call.arguments
    if not isinstance(arguments, dict):
        return call.name, call.arguments
    return call_identity(call.name, arguments)
