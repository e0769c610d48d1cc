"""Argument provenance: which text entered the run from untrusted tool results.

The dispatcher notes every result it hands back, to the model or to a script,
with the trust of the tool that produced it (`tool`'s ``trust``); the agent
notes the task and the system prompt as trusted. `Provenance.suspicious` then
names the argument values of a call that appear in untrusted text and nowhere
in trusted text: an IBAN, an e-mail address or a URL that only a mail, a web
page or a file could have supplied.

Matching is a substring test after normalising both sides (Unicode NFKC,
case-folded, whitespace removed), so ``DE89 3704`` in a mail matches
``de893704`` in a call. Each string value is tested whole, and so is each
token in it that looks like an identifier (it holds a digit, ``@``, ``/`` or an
inner ``.``), so a URL inside an e-mail body the model composed is found too.
Numbers are tested as the text they are written as. Values shorter than
``min_chars`` (after normalising) are never tested: ``"1"``, ``"yes"`` or
``"EUR"`` are in every text.

What it cannot see, by construction: a value transformed on the way (translated,
reformatted, computed from untrusted data, split or summarised), and a decision
taken on untrusted data without copying any of it (which recipient of a
trusted list to pay, whether to delete a file). Those need data-flow tracking
through the model's reasoning, which a runtime that sees only calls cannot do.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Provenance", "Suspicious", "normalise"]

#: The default shortest value, in normalised characters, that is tested at all.
MIN_CHARS = 6

_SEPARATOR = "\x00"  # between the leaves of one result: never inside a normalised value
_TOKEN_EDGES = "\"'`.,;:!?()[]{}<>"
_IDENTIFIER = re.compile(r"[0-9@/]|\w\.\w")


def normalise(text: str) -> str:
    """Text as provenance compares it: NFKC, case-folded, without whitespace."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(folded.split()).replace(_SEPARATOR, "")


def _number_texts(value: int | float) -> list[str]:
    if isinstance(value, float) and value.is_integer():
        return [repr(value), str(int(value))]
    return [repr(value)]


def _leaves(value: Any) -> Iterator[str]:
    """Every string and number in a JSON value (dict keys included), as text."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        yield from _number_texts(value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item)
    else:
        yield str(value)


def _candidates(value: Any) -> Iterator[tuple[str, str]]:
    """(as written, normalised) for each value of an argument that is tested."""
    if isinstance(value, str):
        yield value, normalise(value)
        tokens = value.split()
        if len(tokens) > 1:
            for raw in tokens:
                token = raw.strip(_TOKEN_EDGES)
                if _IDENTIFIER.search(token):
                    yield token, normalise(token)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        for text in _number_texts(value):
            yield text, text
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _candidates(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _candidates(item)


@dataclass(frozen=True, slots=True)
class Suspicious:
    """An argument value found in untrusted results and nowhere trusted."""

    argument: str
    value: str
    sources: tuple[str, ...]
    """The untrusted tools whose results hold it."""


class Provenance:
    """The text of one run, split by trust. Safe to note into from several threads."""

    def __init__(self) -> None:
        self._trusted: list[str] = []
        self._untrusted: list[tuple[str, str]] = []  # (tool, normalised text)
        self._lock = threading.Lock()

    def trust(self, text: str) -> None:
        """Note text the user or the developer wrote: the task, the system prompt."""
        with self._lock:
            self._trusted.append(normalise(text))

    def note(self, tool: str, result: Any, *, trusted: bool) -> None:
        """Note a tool's result (a JSON value), from a tool of the given trust."""
        text = _SEPARATOR.join(normalise(leaf) for leaf in _leaves(result))
        if not text:
            return
        with self._lock:
            if trusted:
                self._trusted.append(text)
            else:
                self._untrusted.append((tool, text))

    def suspicious(
        self, arguments: Mapping[str, Any], *, min_chars: int = MIN_CHARS
    ) -> list[Suspicious]:
        """The argument values only untrusted results could have supplied."""
        with self._lock:
            trusted = list(self._trusted)
            untrusted = list(self._untrusted)
        if not untrusted:
            return []
        found: list[Suspicious] = []
        seen: set[str] = set()
        for name, value in arguments.items():
            for written, needle in _candidates(value):
                if len(needle) < min_chars or needle in seen:
                    continue
                seen.add(needle)
                sources = tuple(dict.fromkeys(tool for tool, text in untrusted if needle in text))
                if sources and not any(needle in text for text in trusted):
                    found.append(Suspicious(name, written, sources))
        return found

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                "trusted": list(self._trusted),
                "untrusted": [[tool, text] for tool, text in self._untrusted],
            }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Provenance:
        provenance = cls()
        provenance._trusted = [str(t) for t in data.get("trusted", [])]
        provenance._untrusted = [(str(tool), str(text)) for tool, text in data.get("untrusted", [])]
        return provenance
