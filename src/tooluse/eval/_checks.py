"""Deterministic checks on a run's answer: contains, regex, a number, a predicate.

Each check reads the final answer (and, for a predicate, the whole `RunResult`)
and says why it failed, or None when it holds. They are plain frozen values so
that a task file's checks can be built once, compared and shown.
"""

from __future__ import annotations

import inspect
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import RunResult
from .._imports import import_target

__all__ = [
    "Check",
    "Contains",
    "Number",
    "Predicate",
    "Regex",
    "check_answer",
    "numbers_in",
]


class Check(ABC):
    """One condition on a run's answer."""

    #: The key that names this kind of check in a task file.
    kind: str = ""

    @abstractmethod
    def failure(self, answer: str, result: RunResult) -> str | None:
        """Why `answer` fails the check, or None when it passes."""

    @abstractmethod
    def sample(self) -> str | None:
        """Text that passes the check, for an oracle answer; None when none can be written."""


@dataclass(frozen=True, slots=True)
class Contains(Check):
    """Every one of `texts` appears in the answer (case-insensitive unless `case_sensitive`)."""

    texts: tuple[str, ...]
    case_sensitive: bool = False
    kind = "contains"

    def failure(self, answer: str, result: RunResult) -> str | None:
        fold: Callable[[str], str] = (lambda s: s) if self.case_sensitive else str.casefold
        missing = [t for t in self.texts if fold(t) not in fold(answer)]
        return f"the answer lacks {', '.join(map(repr, missing))}" if missing else None

    def sample(self) -> str | None:
        return " ".join(self.texts)


@dataclass(frozen=True, slots=True)
class Regex(Check):
    """`pattern` is found in the answer (`re.search`; write ``(?i)`` to ignore case)."""

    pattern: str
    kind = "regex"
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            compiled = re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {self.pattern!r}: {exc}") from None
        object.__setattr__(self, "_compiled", compiled)

    def failure(self, answer: str, result: RunResult) -> str | None:
        if self._compiled.search(answer):
            return None
        return f"the answer does not match /{self.pattern}/"

    def sample(self) -> str | None:
        return None


# A number as people write it: sign, thousands separators, decimals, exponent.
_NUMBER = re.compile(r"(?<![\w.])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def numbers_in(text: str) -> list[float]:
    """Every number written in `text`: ``1,250.50`` is 1250.5, ``−3`` is -3."""
    values = []
    for match in _NUMBER.finditer(text):
        written = match.group().replace(",", "").replace("−", "-")
        try:
            values.append(float(written))
        except ValueError:  # pragma: no cover - the pattern only matches numbers
            continue
    return values


@dataclass(frozen=True, slots=True)
class Number(Check):
    """Some number written in the answer is within `tolerance` of `value`."""

    value: float
    tolerance: float = 0.0
    kind = "number"

    def __post_init__(self) -> None:
        if not math.isfinite(self.value):
            raise ValueError(f"number must be finite, got {self.value!r}")
        if not (self.tolerance >= 0 and math.isfinite(self.tolerance)):
            raise ValueError(f"tolerance must be a finite number ≥ 0, got {self.tolerance!r}")

    def failure(self, answer: str, result: RunResult) -> str | None:
        found = numbers_in(answer)
        # An exact value still matches a float written with rounding noise.
        slack = max(self.tolerance, 1e-9 * max(1.0, abs(self.value)))
        if any(abs(number - self.value) <= slack for number in found):
            return None
        within = f" ± {self.tolerance:g}" if self.tolerance else ""
        seen = ", ".join(f"{n:g}" for n in found[:8]) or "none"
        return f"the answer has no number {self.value:g}{within} (numbers: {seen})"

    def sample(self) -> str | None:
        return f"{self.value:g}"


@dataclass(frozen=True, slots=True)
class Predicate(Check):
    """``module:function`` returns True for the answer (and the `RunResult`, if it takes two).

    The function is imported when the check is made, so that a task file naming
    a missing one fails before anything runs.
    """

    target: str
    kind = "predicate"
    _function: Callable[..., Any] = field(init=False, repr=False, compare=False)
    _takes_result: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        function = import_target(self.target)
        if not callable(function):
            raise ValueError(f"{self.target} is a {type(function).__name__}, not a function")
        object.__setattr__(self, "_function", function)
        object.__setattr__(self, "_takes_result", _positional(function) >= 2)

    def failure(self, answer: str, result: RunResult) -> str | None:
        try:
            verdict = (
                self._function(answer, result) if self._takes_result else self._function(answer)
            )
        except Exception as exc:
            return f"predicate {self.target} raised {type(exc).__name__}: {exc}"
        if not isinstance(verdict, bool):
            return f"predicate {self.target} returned {verdict!r}, not True or False"
        return None if verdict else f"predicate {self.target} returned False"

    def sample(self) -> str | None:
        return None


def _positional(function: Callable[..., Any]) -> int:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return 2
    return sum(1 for p in parameters if p.kind in kinds)


def check_answer(checks: Sequence[Check], answer: str, result: RunResult) -> list[str]:
    """The failure of every check that does not hold."""
    return [reason for check in checks if (reason := check.failure(answer, result)) is not None]
