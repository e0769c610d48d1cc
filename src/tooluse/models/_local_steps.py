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

import re
from collections.abc import Callable, Iterable, Sequence

__all__ = ["ANNOUNCED_STEP", "StepWatch", "announced_step", "first_sentence"]

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
_NUMBER = re.compile(r"\d+")


def first_sentence(text: str) -> str | None:
    """`text`'s first sentence, once the text shows where it ends; else None."""
    text = text.lstrip()
    end = _SENTENCE_END.search(text)
    if end is None:
        return None
    return text[: end.start() + (0 if end.group() == "\n" else 1)].rstrip()


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
    stopped. Nor is a step the run has taken `before` (the texts of its
    earlier replies), its numbers aside: a model that announces the same step
    after its result would otherwise take it round after round.
    """

    def __init__(
        self,
        detokenize: Callable[[Sequence[int]], str],
        pattern: re.Pattern[str],
        before: Iterable[str] = (),
    ) -> None:
        self._detokenize = detokenize
        self._pattern = pattern
        self._taken = {_NUMBER.sub("#", text.strip()) for text in before}
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
        if self._pattern.match(sentence) and _NUMBER.sub("#", sentence) not in self._taken:
            self.step = sentence
        return self.step is not None
