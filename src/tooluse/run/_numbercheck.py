"""Checking a final answer's numbers against the run: a number no source gives.

Every tool fact in a run's context comes from a real execution; a small model's
answer often does not. It converts a unit in its head, makes up an exchange rate,
or sums four results to the wrong total, where the run has a tool for each. The
check finds the numbers of an answer that nothing in the run gives:

* a number is supported when the task or a tool's result has it, rounded to the
  answer's decimals (``26.22`` for ``26.2188``, ``92`` for ``92.0``), as a
  percentage (``17%`` for ``0.17``) or with its scale (``5.2 million``);
* a result the answer works out in plain sight is supported when the arithmetic
  holds (``54.35 + 37.97 = 92.32``): a sum it gets wrong (``15 + 60 + 60 + 30 =
  185``) is not;
* passed over: whole numbers up to 10 (counts, steps, list markers), and numbers
  that are part of a time, a date or a range (next to ``:``, ``/`` or ``-``).

`unsupported` returns the numbers left, in the answer's order, or None when every
number has a source. The note asks the model to get them from a tool.
"""

from __future__ import annotations

import ast
import bisect
import json
import math
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ._answercheck import NOTE_START, number_pattern, number_value

__all__ = ["Unsupported", "unsupported"]

#: At most this many numbers are named in a note.
_NAMED = 3
#: Past this many numbers in a run, one step of arithmetic over two of them makes
#: almost any number: a number not seen as such is then passed over.
_MOST_FOR_PAIRS = 400
#: A printed line longer than this is not read as a Python literal.
_LONGEST_LINE = 100_000
_SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_SCALE_AFTER = re.compile(r"^\s*(thousand|million|billion|trillion)\b", re.IGNORECASE)
#: A plain run of digits, with decimals: how numbers in compact JSON read.
_DIGITS = re.compile(r"-?\d+(?:\.\d+)?")
#: Characters next to a number that make it part of a time, a date or a range.
_JOINED = {":", "/", "-", "–"}
#: An expression worked out in the answer: numbers joined by operators, then ``=``.
_WORKED = re.compile(
    r"(?P<expr>\(?\s*[-\d.,]+(?:\s*[)(]?\s*[-+*/×÷x]\s*[)(]?\s*[-\d.,]+\)?)+)\s*=\s*"
    r"[$€£¥]?\s*(?P<result>[-\d.,]*\d)"
)
_OPERATORS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


@dataclass(frozen=True, slots=True)
class Unsupported:
    """The numbers of an answer that neither the task nor any result gives, as written."""

    numbers: tuple[str, ...]

    @property
    def note(self) -> str:
        """The note for the model: which numbers, and where to get them."""
        named = ", ".join(self.numbers[:_NAMED])
        which = "it states" if len(self.numbers) == 1 else "it states these numbers:"
        return (
            f"{NOTE_START} {which} {named}, which no tool result and nothing in the task "
            "gives. Make the tool calls that give what you state (arithmetic included, "
            "where a tool computes it), then give your final answer."
        )


def unsupported(answer: str, seen: Iterable[str], counts: Iterable[int] = ()) -> Unsupported | None:
    """The numbers in `answer` that nothing in `seen` (the task, the results) supports.

    `counts` are numbers the run knows besides its texts: how many calls it made.
    """
    known = _Known(seen, counts)
    worked = _worked_out(answer)
    missing: list[str] = []
    for match in number_pattern.finditer(answer):
        raw = match.group()
        value = number_value(raw)
        if value is None or _passed_over(answer, match.start(), match.end(), raw, value):
            continue
        value *= _scale_after(answer, match.end())
        decimals = len(raw.partition(".")[2])
        tolerance = _tolerance(decimals, _scale_after(answer, match.end()))
        if any(_near(w, value, tolerance) for w in worked) or known.gives(value, tolerance):
            known.add(value)
            continue
        if raw not in missing:
            missing.append(raw)
    return Unsupported(tuple(missing)) if missing else None


class _Known:
    """The numbers a run gives, and what one step of arithmetic makes of two of them."""

    def __init__(self, seen: Iterable[str], counts: Iterable[int] = ()) -> None:
        values: set[float] = {float(n) for n in counts}
        across: dict[str, float] = {}  # totals over every result: a fan-out's sum
        for text in seen:
            values.update(value for value, _ in _numbers(text))
            parsed = _parsed(text)
            values.update(_totals(parsed))
            for item in parsed:
                pairs = item.items() if isinstance(item, dict) else [("", item)]
                for key, value in pairs:
                    if _is_number(value):
                        across[str(key)] = across.get(str(key), 0.0) + float(value)  # type: ignore[arg-type]
        values.update(across.values())
        self.values = sorted(values)

    def add(self, value: float) -> None:
        bisect.insort(self.values, value)

    def gives(self, value: float, tolerance: float) -> bool:
        """`value` is a number seen (or its percentage), or a op b of two seen numbers."""
        if self._has(value, tolerance) or self._has(-value, tolerance):
            return True
        if self._has(value / 100, tolerance / 100):  # a share written as a percentage
            return True
        if len(self.values) > _MOST_FOR_PAIRS:
            return True  # too many to tell a slip from a coincidence: pass it over
        for a in self.values:
            for op, b in _operands(value, a):
                if any(_near(_apply(op, a, near), value, tolerance) for near in self._around(b)):
                    return True
        return False

    def _has(self, value: float, tolerance: float) -> bool:
        return any(_near(v, value, tolerance) for v in self._around(value))

    def _around(self, value: float) -> list[float]:
        """The seen numbers on either side of `value`."""
        if not math.isfinite(value):
            return []
        at = bisect.bisect_left(self.values, value)
        return self.values[max(0, at - 1) : at + 1]


def _operands(value: float, a: float) -> list[tuple[str, float]]:
    """For each way ``value = a op b`` could hold, the `b` it would take."""
    found = [("+", value - a), ("-", a - value), ("r-", value + a), ("r/", value * a)]
    if a:
        found.append(("*", value / a))
    if value:
        found.append(("/", a / value))
    return found


def _apply(op: str, a: float, b: float) -> float:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "r-":
        return b - a
    if op == "*":
        return a * b
    if op == "/":
        return a / b if b else math.inf
    return b / a if a else math.inf  # "r/"


def _totals(parsed: list[object]) -> list[float]:
    """In a result: each list's length, the sum of a list of numbers, and of one key over a list."""
    totals: list[float] = []
    stack: list[object] = list(parsed)
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
            totals.append(float(len(item)))
            numbers = [x for x in item if _is_number(x)]
            if numbers and len(numbers) == len(item):
                totals.append(float(sum(numbers)))
            rows = [x for x in item if isinstance(x, dict)]
            if rows and len(rows) == len(item):
                for key in rows[0]:
                    column = [row.get(key) for row in rows]
                    if all(_is_number(x) for x in column):
                        totals.append(float(sum(column)))  # type: ignore[arg-type]
    return totals


def _parsed(text: str) -> list[object]:
    """The values in a result's text: JSON (a plan's after ``Result:``), or a script's
    printed lines as Python literals."""
    try:
        return [json.loads(text.rpartition("Result:\n")[2])]
    except ValueError:
        pass
    values: list[object] = []
    for line in text.splitlines():
        if line[:1] in ("[", "{") and len(line) <= _LONGEST_LINE:
            try:
                values.append(ast.literal_eval(line))
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                continue
    return values


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _numbers(text: str) -> list[tuple[float, str]]:
    """Every number `text` may mean: as written (``2,794,356``) and as plain digit runs.

    Results are often compact JSON (``[64.4,108.7]``), where a comma separates
    numbers rather than thousands; reading both ways can only support more.
    """
    found: list[tuple[float, str]] = []
    for pattern in (number_pattern, _DIGITS):
        for match in pattern.finditer(text):
            value = number_value(match.group())
            if value is not None:
                found.append((value * _scale_after(text, match.end()), match.group()))
    return found


def _scale_after(text: str, end: int) -> float:
    word = _SCALE_AFTER.match(text[end:])
    return _SCALE_WORDS[word.group(1).lower()] if word else 1.0


def _passed_over(text: str, start: int, end: int, raw: str, value: float) -> bool:
    if "." not in raw and abs(value) <= 10:
        return True
    before = text[start - 1 : start] if start else ""
    after = text[end : end + 1]
    if after in _JOINED and text[end + 1 : end + 2].isdigit():
        return True
    return before in _JOINED and start >= 2 and text[start - 2].isdigit()


def _tolerance(decimals: int, scale: float = 1.0) -> float:
    """How far a number written with `decimals` places may be from what it rounds."""
    return 0.5 * 10.0**-decimals * scale * (1 + 1e-6)


def _near(exact: float, value: float, tolerance: float) -> bool:
    if not math.isfinite(exact):
        return False
    return abs(exact - value) <= tolerance + 1e-9 * max(1.0, abs(exact))


def _worked_out(answer: str) -> list[float]:
    """The results of the answer's own arithmetic that hold (``a + b = c`` with c right)."""
    held: list[float] = []
    for match in _WORKED.finditer(answer):
        exact = _evaluate(match.group("expr"))
        result = number_value(match.group("result"))
        if exact is None or result is None:
            continue
        if _near(exact, result, _tolerance(len(match.group("result").partition(".")[2]))):
            held.append(result)
    return held


def _evaluate(expression: str) -> float | None:
    text = expression.replace(",", "").replace("×", "*").replace("÷", "/").replace("x", "*")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return None
    try:
        value = _fold(tree.body)
    except (ValueError, ZeroDivisionError):
        return None
    return value if math.isfinite(value) else None


def _fold(node: ast.expr) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_fold(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_fold(node.left), _fold(node.right))
    raise ValueError("not plain arithmetic")
