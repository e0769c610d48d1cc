"""A comparison between two things the results describe, which their numbers refute.

"It is warmer in London than in Paris", after ``get_weather`` gave London 14.0 and
Paris 18.0 in ``temperature_c``: the answer names both, and says which way their one
shared number goes, without writing the numbers (which `contradiction` needs). A
result that is a record, or a list of records, describes each thing a string field of
it names (``{"city": "London", "temperature_c": 14.0}`` describes London); two
things are compared by the numbers their records share.

As with the other checks, precision comes before recall. Checked is a sentence with
one comparative word (``warmer``, ``more``, ``cheaper`` …) before ``than``, a thing
named before ``than`` and another after it, each described by exactly one record, and
exactly one number field the two records share (or, for ``warmer`` and ``colder``,
one temperature field among them). Passed over are questions, conditionals,
negations and hedges, a sentence naming a third described thing, and records whose
shared field holds the same number.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ._answercheck import NOTE_START

__all__ = ["Refuted", "refuted_comparison"]

#: Comparative words and whether they say the first thing's number is the larger.
_COMPARATIVES = {
    "warmer": True, "hotter": True, "colder": False, "cooler": False,
    "more": True, "higher": True, "larger": True, "bigger": True, "greater": True,
    "less": False, "lower": False, "smaller": False, "fewer": False,
    "cheaper": False, "pricier": True, "costlier": True,
}  # fmt: skip
#: Words that make the temperature the field compared.
_TEMPERATURE_WORDS = {"warmer", "hotter", "colder", "cooler"}
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_UNSURE = re.compile(
    r"\b(?:not|never|no|if|whether|would|might|may|could|unless|cannot)\b|n't|n’t|\?",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Refuted:
    """A comparison the answer states (`claim`) and the numbers that refute it."""

    claim: str
    first: str
    second: str
    field: str
    first_value: float
    second_value: float

    @property
    def note(self) -> str:
        """The note for the model: the claim, and what the results give for each side."""
        return (
            f'{NOTE_START} it says "{self.claim}", but the results give {self.first} '
            f"{_show(self.first_value)} and {self.second} {_show(self.second_value)} "
            f"({self.field}). Compare them again and give your corrected final answer."
        )


def refuted_comparison(answer: str, results: Iterable[tuple[str, Any]]) -> Refuted | None:
    """The first comparison in `answer` between two described things that their records refute.

    `results` are the run's ``(tool, result)`` pairs.
    """
    described = _described(result for _, result in results)
    if len(described) < 2:
        return None
    for sentence in _SENTENCES.split(answer):
        found = _in_sentence(sentence.strip(), described)
        if found is not None:
            return found
    return None


def _described(results: Iterable[Any]) -> dict[str, list[dict[str, float]]]:
    """Each thing a record's string field names (lowered): the number fields of its records."""
    described: dict[str, list[dict[str, float]]] = {}
    for record in _records(results):
        numbers = {
            k: float(v)
            for k, v in record.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        if not numbers:
            continue
        for value in record.values():
            if isinstance(value, str) and value.strip():
                described.setdefault(value.strip().lower(), []).append(numbers)
    return described


def _records(results: Iterable[Any]) -> Iterator[Mapping[str, Any]]:
    for result in results:
        items = result if isinstance(result, list) else [result]
        for item in items:
            if isinstance(item, Mapping):
                yield item


def _in_sentence(sentence: str, described: dict[str, list[dict[str, float]]]) -> Refuted | None:
    lowered = sentence.lower()
    than = [m.start() for m in re.finditer(r"\bthan\b", lowered)]
    if len(than) != 1 or _UNSURE.search(sentence):
        return None
    words = [(m.group().lower(), m.start()) for m in _WORD.finditer(sentence)]
    comparatives = [(w, at) for w, at in words if w in _COMPARATIVES]
    if len(comparatives) != 1 or comparatives[0][1] > than[0]:
        return None
    word = comparatives[0][0]
    named = sorted(
        (start, name)
        for name in described
        for start in (m.start() for m in re.finditer(rf"\b{re.escape(name)}\b", lowered))
    )
    if len({name for _, name in named}) != 2:
        return None
    before = [name for start, name in named if start < than[0]]
    after = [name for start, name in named if start > than[0]]
    if not before or not after or before[-1] == after[0]:
        return None
    first, second = before[-1], after[0]
    if len(described[first]) != 1 or len(described[second]) != 1:
        return None
    field = _compared_field(described[first][0], described[second][0], word)
    if field is None:
        return None
    left, right = described[first][0][field], described[second][0][field]
    if left == right or (left > right) == _COMPARATIVES[word]:
        return None
    return Refuted(sentence, _as_written(sentence, first), _as_written(sentence, second),
                   field, left, right)  # fmt: skip


def _compared_field(first: dict[str, float], second: dict[str, float], word: str) -> str | None:
    """The one number field both records have (a temperature one, for warmer and colder)."""
    shared = [k for k in first if k in second]
    if word in _TEMPERATURE_WORDS:
        shared = [k for k in shared if "temp" in k.lower()]
    return shared[0] if len(shared) == 1 else None


def _as_written(sentence: str, name: str) -> str:
    found = re.search(rf"\b{re.escape(name)}\b", sentence, re.IGNORECASE)
    return found.group() if found else name


def _show(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"
