"""A number in an answer that nothing in the run gives, taken as a call.

Every tool fact in a run's context comes from a real execution; a small model's
answer often does not. It sums three results in its head to the wrong total
("The combined population of the cities of Canada is 5820000."), or works out
a sum in plain sight and gets it wrong ("15 + 60 + 60 + 30 = 185"), where the
run has a calculator. Noted afterwards, the 1.5B keeps its number; stopped
just before it, the model's own words ("The combined population of the cities
of Canada is") lead it to the call that gives the number.

A number is supported when:

* the task or a tool's result has it, rounded to the answer's decimals
  (``26.22`` for ``26.2188``, ``92`` for ``92.0``), as a percentage (``17%``
  for ``0.17``) or with its scale (``5.2 million``);
* one step of arithmetic over two such numbers gives it, or a total over a
  result (a list's length, the sum of a list, of one key over a list of
  records, or of one key over every result);
* the answer works it out in plain sight and the arithmetic holds
  (``54.35 + 37.97 = 92.32``).

Passed over: whole numbers up to 10 (counts, steps, list markers), numbers that
are part of a time, a date or a range (next to ``:``, ``/`` or ``-``), and the
operands of arithmetic written out (a formula's ``32`` in ``18 * 9/5 + 32 =
64.4``): what is judged is the number after ``=``.

`NumberWatch` follows an answer as it is decoded and stops it before the first
number that is not supported, once what follows the number shows how to read it
(`settled`).
"""

from __future__ import annotations

import ast
import bisect
import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Sequence

from ..decoding import CALL_OPEN

__all__ = ["NUMBER", "NumberWatch", "settled", "unsupported"]

#: A number as written in prose: ``2,794,356``, ``-14``, ``26.22``.
NUMBER = re.compile(r"(?<![\w.,])[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w)")
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
#: An arithmetic operator right after a number, or right before it.
_OPERATOR_AFTER = re.compile(r"\s*[-+*/×÷]")
_OPERATOR_BEFORE = re.compile(r"[-+*/×÷]\s*\(?\s*$")
#: What may still follow a number and change how it reads: blanks, then a word
#: not yet ended (a scale, "million", may be coming).
_OPEN_TAIL = re.compile(r"\s*[A-Za-z]*")
#: Where a call frame begins; past it, the text is not an answer's prose.
_CALL_STARTS = (CALL_OPEN, "```")
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


def unsupported(answer: str, seen: Iterable[str]) -> list[str]:
    """The numbers in `answer`, as written and once each, that nothing in `seen` supports.

    `seen` holds the run's texts: the task and every result.
    """
    known = _Known(seen)
    missing: list[str] = []
    for match in NUMBER.finditer(answer):
        if not known.supports(answer, match) and match.group() not in missing:
            missing.append(match.group())
    return missing


def settled(text: str, match: re.Match[str]) -> bool:
    """Whether enough of `text` follows the number `match` to judge it.

    The two characters after it tell whether it goes on (``45.`` may become
    ``45.3``) or is part of a time (``12:30``); a word after it must have ended,
    as it may be a scale (``5.2 million``).
    """
    after = text[match.end() :]
    return len(after) >= 2 and _OPEN_TAIL.fullmatch(after) is None


class NumberWatch:
    """Decides, token by token, whether an answer being decoded states a number nothing gives.

    Called with the tokens so far and the next one (None: the reply ends), before
    that token joins the output. Each number is judged once it is `settled`;
    the first one not supported stops the decoding before that token, and
    `cut` then holds the answer's text before the number. A reply that opens a
    call, or once a call frame has begun, is not judged further.
    """

    def __init__(self, detokenize: Callable[[Sequence[int]], str], seen: Iterable[str]) -> None:
        self._detokenize = detokenize
        self._known = _Known(seen)
        self._judged = 0
        self._done = False
        self.cut: str | None = None
        self.number: str | None = None

    def __call__(self, out: Sequence[int], token: int | None) -> bool:
        """Whether to stop before `token`."""
        if self._done:
            return False
        text = self._detokenize(out if token is None else [*out, token])
        if text.lstrip()[:1] in ("<", "{", "[", "`") or any(s in text for s in _CALL_STARTS):
            self._done = True  # a call, which is not for this watch to judge
            return False
        for match in NUMBER.finditer(text, self._judged):
            if token is not None and not settled(text, match):
                break
            self._judged = match.end()
            if not self._known.supports(text, match):
                self._done = True
                self.cut, self.number = text[: match.start()], match.group()
                return True
        return False


class _Known:
    """The numbers a run gives, and what one step of arithmetic makes of two of them."""

    def __init__(self, seen: Iterable[str]) -> None:
        values: set[float] = set()
        across: dict[str, float] = {}  # totals over every result: a fan-out's sum
        for text in seen:
            values.update(_numbers(text))
            parsed = _parsed(text)
            values.update(_totals(parsed))
            for item in parsed:
                pairs = item.items() if isinstance(item, dict) else [("", item)]
                for key, value in pairs:
                    if isinstance(value, int | float) and not isinstance(value, bool):
                        across[str(key)] = across.get(str(key), 0.0) + float(value)
        values.update(across.values())
        self.values = sorted(v for v in values if math.isfinite(v))

    def supports(self, text: str, match: re.Match[str]) -> bool:
        """Whether the number `match` in the answer `text` has a source (and learn it if so)."""
        raw = match.group()
        value = _value(raw)
        if value is None or _passed_over(text, match.start(), match.end(), raw, value):
            return True
        if _OPERATOR_AFTER.match(text, match.end()) or _OPERATOR_BEFORE.search(
            text, 0, match.start()
        ):
            return True  # an operand: the arithmetic's result is what is judged
        scale = _scale_after(text, match.end())
        value *= scale
        tolerance = _tolerance(len(raw.partition(".")[2]), scale)
        worked = _worked_out(text[: match.end()])
        if any(_near(w, value, tolerance) for w in worked) or self._gives(value, tolerance):
            bisect.insort(self.values, value)
            return True
        return False

    def _gives(self, value: float, tolerance: float) -> bool:
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


def _value(text: str) -> float | None:
    try:
        return float(text.replace(",", "").replace("−", "-"))
    except ValueError:
        return None


def _numbers(text: str) -> list[float]:
    """Every number `text` may mean: as written (``2,794,356``) and as plain digit runs.

    Results are often compact JSON (``[64.4,108.7]``), where a comma separates
    numbers rather than thousands; reading both ways can only support more.
    """
    found: list[float] = []
    for pattern in (NUMBER, _DIGITS):
        for match in pattern.finditer(text):
            value = _value(match.group())
            if value is not None:
                found.append(value * _scale_after(text, match.end()))
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
        result = _value(match.group("result"))
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
    except (ValueError, ZeroDivisionError, OverflowError):
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
