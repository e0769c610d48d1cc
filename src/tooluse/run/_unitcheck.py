"""A number the answer takes from a result and states in another unit than the result's.

A result that names its unit in a field (``{"temperature_c": 22.0}``, ``{"price_usd":
229.0}``) says what its number is. An answer that writes that same number with a
different unit of the same kind (``22 degrees Fahrenheit``, ``229 GBP``) has
relabelled it instead of converting it: the number is right and the unit is wrong,
or the other way round. That is the one kind of wrong number this module notes.

As with the other checks, precision comes before recall. A number is passed over
where the task gives it, where any result gives it without a unit (a bare float, a
field with no unit in its name, a string), where a result gives it in the unit the
answer states, and where a result gives it as something of another kind (a price
stated as a temperature is not a relabelling but some other slip). Units read from
field names are the unambiguous suffixes only (``_c``, ``_usd``, ``_km`` …, never
``_m`` or ``_l``), and a word in the answer that reads as two units (``pounds``,
``$``) counts as either.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ._answercheck import NOTE_START

__all__ = ["UnitMismatch", "unit_mismatch"]

#: Each unit: its kind and how a note names it.
_UNITS: dict[str, tuple[str, str]] = {
    "celsius": ("temperature", "degrees Celsius"),
    "fahrenheit": ("temperature", "degrees Fahrenheit"),
    "kelvin": ("temperature", "kelvin"),
    "usd": ("money", "US dollars"),
    "eur": ("money", "euros"),
    "gbp": ("money", "British pounds"),
    "jpy": ("money", "Japanese yen"),
    "chf": ("money", "Swiss francs"),
    "cad": ("money", "Canadian dollars"),
    "aud": ("money", "Australian dollars"),
    "km": ("length", "kilometres"),
    "mi": ("length", "miles"),
    "ft": ("length", "feet"),
    "kg": ("mass", "kilograms"),
    "lb": ("mass", "pounds"),
}
#: The last part of a field's name that gives its unit (``temperature_c``, ``price_usd``).
_SUFFIXES = {
    "c": "celsius", "celsius": "celsius", "f": "fahrenheit", "fahrenheit": "fahrenheit",
    "kelvin": "kelvin", "usd": "usd", "eur": "eur", "gbp": "gbp", "jpy": "jpy",
    "chf": "chf", "cad": "cad", "aud": "aud", "km": "km", "mi": "mi", "miles": "mi",
    "ft": "ft", "feet": "ft", "kg": "kg", "lb": "lb", "lbs": "lb",
}  # fmt: skip
#: One-letter suffixes count only after another part (``temp_c``, not ``c``).
_SHORT = {"c", "f"}
#: Words after a number, each with the units it may mean.
_WORDS: dict[str, frozenset[str]] = {
    "celsius": frozenset({"celsius"}), "centigrade": frozenset({"celsius"}),
    "fahrenheit": frozenset({"fahrenheit"}), "kelvin": frozenset({"kelvin"}),
    "usd": frozenset({"usd"}), "us dollars": frozenset({"usd"}),
    "dollars": frozenset({"usd", "cad", "aud"}), "eur": frozenset({"eur"}),
    "euros": frozenset({"eur"}), "euro": frozenset({"eur"}), "gbp": frozenset({"gbp"}),
    "british pounds": frozenset({"gbp"}), "pounds sterling": frozenset({"gbp"}),
    "pounds": frozenset({"gbp", "lb"}), "jpy": frozenset({"jpy"}), "yen": frozenset({"jpy"}),
    "chf": frozenset({"chf"}), "swiss francs": frozenset({"chf"}),
    "francs": frozenset({"chf"}), "cad": frozenset({"cad"}), "aud": frozenset({"aud"}),
    "km": frozenset({"km"}), "kilometers": frozenset({"km"}),
    "kilometres": frozenset({"km"}), "miles": frozenset({"mi"}), "mi": frozenset({"mi"}),
    "feet": frozenset({"ft"}), "ft": frozenset({"ft"}), "foot": frozenset({"ft"}),
    "kg": frozenset({"kg"}), "kilograms": frozenset({"kg"}), "lb": frozenset({"lb"}),
    "lbs": frozenset({"lb"}),
}  # fmt: skip
#: ``22°F``, ``22 °C``, ``22 degrees F``: a degree letter needs the degree before it.
_DEGREE = re.compile(
    r"\s*(?:°|º|degrees?\s+|deg\s+)\s*(celsius|centigrade|fahrenheit|kelvin|c|f|k)(?![\w-])",
    re.IGNORECASE,
)
#: The unit each word or letter after a degree names.
_DEGREE_NAMES = {
    "c": "celsius", "celsius": "celsius", "centigrade": "celsius",
    "f": "fahrenheit", "fahrenheit": "fahrenheit", "k": "kelvin", "kelvin": "kelvin",
}  # fmt: skip
_WORD_ALTERNATIVES = "|".join(sorted((re.escape(w) for w in _WORDS), key=len, reverse=True))
_WORD_AFTER = re.compile(rf"\s*({_WORD_ALTERNATIVES})(?![\w-])", re.IGNORECASE)
_SYMBOLS = {"$": frozenset({"usd", "cad", "aud"}), "€": frozenset({"eur"}),
            "£": frozenset({"gbp"}), "¥": frozenset({"jpy"})}  # fmt: skip
_NUMBER = re.compile(
    r"(?<![\w.,])(?P<symbol>[$€£¥]\s?)?(?P<n>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<d>\d+))?(?![\w])"
)
_IN_TEXT = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class UnitMismatch:
    """An answer's number (`claim`, as written) that a result gives in another unit."""

    claim: str
    value: float
    tool: str
    field: str
    given: str
    stated: str

    @property
    def note(self) -> str:
        """The note for the model: which result the number is, and in which unit."""
        value = f"{self.value:g}"
        return (
            f'{NOTE_START} it says "{self.claim}", but {value} is `{self.field}` in the '
            f"result of {self.tool}, in {self.given}, not {self.stated}. Convert it first "
            "(with a tool, if one converts it) and give your corrected final answer."
        )


@dataclass(frozen=True, slots=True)
class _Given:
    tool: str
    field: str
    value: float
    #: The unit the field's name gives, or None for a number given without one.
    unit: str | None


def unit_mismatch(
    answer: str, task: str, results: Iterable[tuple[str, Any]]
) -> UnitMismatch | None:
    """The first number of `answer` that every result giving it gives in another unit.

    `results` are the run's successful calls as (tool name, result value).
    """
    given = [g for name, result in results for g in _numbers(name, result, "")]
    if not given:
        return None
    asked = {float(m.group()) for m in _IN_TEXT.finditer(task.replace(",", ""))}
    for match in _NUMBER.finditer(answer):
        units, claim_end = _stated_units(answer, match)
        if not units:
            continue
        number = float(match.group("n").replace(",", "") + "." + (match.group("d") or "0"))
        digits = len(match.group("d") or "")
        if number in asked:
            continue
        same = [g for g in given if _rounds_to(g.value, number, digits)]
        if not same or any(g.unit is None or g.unit in units for g in same):
            continue
        kinds = {_UNITS[u][0] for u in units}
        if any(_UNITS[g.unit][0] not in kinds for g in same if g.unit is not None):
            continue
        first = same[0]
        assert first.unit is not None
        kind = _UNITS[first.unit][0]
        stated = " or ".join(sorted(_UNITS[u][1] for u in units if _UNITS[u][0] == kind))
        return UnitMismatch(
            answer[match.start() : claim_end].strip(),
            first.value,
            first.tool,
            first.field,
            _UNITS[first.unit][1],
            stated,
        )
    return None


def _numbers(tool: str, value: Any, field: str) -> Iterator[_Given]:
    """Every number in a result, with the unit its field's name gives (if any)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        if math.isfinite(value):
            yield _Given(tool, field, float(value), _field_unit(field))
    elif isinstance(value, str):
        for found in _IN_TEXT.finditer(value.replace(",", "")):
            yield _Given(tool, field, float(found.group()), None)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(tool, item, str(key))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _numbers(tool, item, field)


def _field_unit(field: str) -> str | None:
    parts = [p for p in re.split(r"[_\W]+", field.lower()) if p]
    if not parts:
        return None
    last = parts[-1]
    if last in _SHORT and len(parts) < 2:
        return None
    return _SUFFIXES.get(last)


def _stated_units(answer: str, match: re.Match[str]) -> tuple[frozenset[str], int]:
    """The units the answer gives the number (by a symbol before or a word after it)."""
    symbol = (match.group("symbol") or "").strip()
    after = answer[match.end() :]
    degree = _DEGREE.match(after)
    if degree is not None:
        unit = _DEGREE_NAMES[degree.group(1).lower()]
        return frozenset({unit}), match.end() + degree.end()
    word = _WORD_AFTER.match(after)
    if word is not None:
        units = _WORDS[word.group(1).lower()]
        if symbol:
            units = units & _SYMBOLS[symbol]
        return units, match.end() + word.end()
    if symbol:
        return _SYMBOLS[symbol], match.end()
    return frozenset(), match.end()


def _rounds_to(value: float, number: float, digits: int) -> bool:
    """Whether `value`, rounded to the answer's decimals, is the answer's number."""
    return math.isclose(round(value, digits), number, rel_tol=0, abs_tol=10 ** -(digits + 3))
