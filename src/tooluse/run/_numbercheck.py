"""The numbers a call takes that nobody gave: a price, a rate or a factor assumed.

A small model asked "what do 3 keyboards (SKU B200) cost in euros?" may call
``calculate("(15.99 + 15.99 + 15.99) * 0.86")``: a price and an exchange rate of its
own, where a tool would have looked both up. The call is valid and runs; what it
computes is not a fact of the run. `unseen_numbers` finds such numbers, and the loop
sends one note a run naming them (where answers are checked, `Agent(check_answers=...)`).

A number counts as given when the task, the system prompt, an earlier user message,
a tool's definition (a default, a range) or a tool result holds it, or it follows
from those in one step: rounded; times a power of ten (15 % is 0.15, 100 µF is
0.0001 F, $1.2M is 1200000); as the factor of a percentage added or taken off (1.15,
0.85); or as the sum, difference, product or quotient of two of them (3 keyboards at
49 are 147), or of one of them and 12, 24, 60, 100 or 1000 (11 PM is 23, an hour and
a half is 90 minutes). Small whole numbers (up to 12) and the everyday constants
0.5, 24, 60, 100 and 1000 are given too. Digits inside a word ("B200") are not
numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .._messages import Message

__all__ = [
    "NUMBER_NOTE",
    "GivenNumbers",
    "found_already",
    "numbers_in",
    "unseen_numbers",
    "written",
]

#: The note for a call that took numbers nobody gave; ``{call}`` names the tool and
#: ``{numbers}`` lists them.
NUMBER_NOTE = (
    "Note: {call} was called with {numbers}, which neither the task nor any tool result "
    "gave. If a number stands for a fact (a price, a rate, a conversion factor, an "
    "amount), get it from a tool instead of assuming it, then go on."
)

_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?")
_COMMON = frozenset({*map(float, range(13)), 0.5, 24.0, 60.0, 100.0, 1000.0})
#: The constants a given number is scaled or shifted by in one step (an hour and a
#: half is 90 minutes, 11 PM is 23).
_SCALES = (12.0, 24.0, 60.0, 100.0, 1000.0)
#: Above this many given numbers, pairs are not tried (a long listing): no note.
_MOST_FOR_PAIRS = 200
#: How many of a call's numbers are read, and how many a note names at the most.
_MOST_READ = 50
_MOST_NAMED = 5


def numbers_in(text: str) -> Iterator[float]:
    """The numbers written in `text`, thousands separators aside."""
    for match in _NUMBER.finditer(text):
        yield float(match.group().replace(",", ""))


def _argument_numbers(value: Any) -> Iterator[float]:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        if math.isfinite(value):
            yield abs(float(value))
    elif isinstance(value, str):
        yield from numbers_in(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _argument_numbers(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _argument_numbers(item)


class GivenNumbers:
    """The numbers the conversation's non-model messages hold, read as messages come."""

    __slots__ = ("_read", "numbers")

    def __init__(self) -> None:
        self.numbers: set[float] = set()
        self._read = 0

    def update(self, messages: Sequence[Message]) -> None:
        """Read the messages added since the last update (the model's own are skipped)."""
        for message in messages[self._read :]:
            if message.role != "assistant" and message.content:
                self.numbers.update(numbers_in(message.content))
        self._read = len(messages)


def _same(x: float, y: float) -> bool:
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)


def _scaled(x: float, y: float) -> bool:
    """Whether `x` is `y` times a power of ten: a percentage, a unit's prefix (100 µF is
    0.0001 F), a million written out ($1.2M)."""
    if x == 0 or y == 0:
        return False
    power = math.log10(x / y)
    return abs(power) <= 12 and _same(x, y * 10 ** round(power))


def _key(value: float) -> float:
    """`value` to nine significant digits: how two ways of reaching a number meet."""
    return float(f"{value:.9g}")


def _given_alone(x: float, given: set[float]) -> bool:
    """Whether `x` is given, or follows from one given number."""
    if x in _COMMON or x in given:
        return True
    for y in given:
        if any(_same(x, round(y, digits)) for digits in range(4)):
            return True
        if _same(x, 1 + y / 100) or _same(x, 1 - y / 100) or _scaled(x, y):
            return True
    return False


def _from_two(given: set[float]) -> set[float]:
    """What follows from two given numbers, or one and a scale, in one step (as `_key`s)."""
    pool = sorted(given)
    made: set[float] = set()
    for i, a in enumerate(pool):
        for b in (*pool[i:], *_SCALES):
            product = a * b
            made.update(map(_key, (product, round(product, 2), a + b, abs(a - b))))
            if b:
                made.add(_key(a / b))
            if a:
                made.add(_key(b / a))
    return made


def unseen_numbers(arguments: dict[str, Any], given: Iterable[float]) -> list[float]:
    """The numbers in a call's `arguments` that do not follow from the `given` ones.

    At most `_MOST_NAMED` are named, from the first `_MOST_READ` numbers of the call;
    above `_MOST_FOR_PAIRS` given numbers (a long listing) none is.
    """
    known = set(given)
    pairs: set[float] | None = None
    unseen: list[float] = []
    for read, number in enumerate(_argument_numbers(arguments)):
        if read == _MOST_READ or len(unseen) == _MOST_NAMED:
            break
        if number in unseen or _given_alone(number, known):
            continue
        if len(known) > _MOST_FOR_PAIRS:
            return []  # too many to pair: say nothing rather than guess
        if pairs is None:
            pairs = _from_two(known)
        if _key(number) not in pairs:
            unseen.append(number)
    return unseen


def found_already(result: str, others: Iterable[str], given: Iterable[float]) -> bool:
    """Whether a call's `result` is one number that the run was `given`, or that the
    `others` (the results of the other calls of its turn) hold too: a formula worked
    beside the conversion tool found nothing new, whatever it took."""
    [*returned] = numbers_in(result)
    if len(returned) != 1:
        return False
    seen = [*given, *(n for text in others for n in numbers_in(text))]
    return any(math.isclose(returned[0], n, rel_tol=1e-6) for n in seen)


def written(numbers: Sequence[float]) -> str:
    """``15.99 and 0.86``: the numbers as a note writes them."""
    shown = [str(int(n)) if n.is_integer() else str(n) for n in numbers]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
