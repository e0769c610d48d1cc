"""Argument provenance: which text entered the run from untrusted tool results.

The dispatcher notes every result it hands back, to the model or to a script,
with the trust of the tool that produced it (`tool`'s ``trust``); the agent
notes the task and the system prompt as trusted. `Provenance.suspicious` then
names the argument values of a call that were copied out of untrusted text and
appear nowhere in trusted text: an IBAN, an e-mail address or a URL that only a
mail, a web page or a file could have supplied.

Matching is a substring test after normalising both sides alike: characters
that show as nothing removed (Unicode format characters such as a zero-width
space, a soft hyphen, a word joiner or a byte order mark; control characters;
Hangul fillers, variation selectors and the other default-ignorable ones), then
Unicode NFKC, case folding, and whitespace removed. So ``DE89 3704`` in a mail
matches ``de893704`` in a call, and so does ``DE89\u200b3704``: a value an
injected text splits with invisible characters is the value its reader sees.
What is tested:

- each string value whole, and each token in it that looks like an identifier
  (it holds a digit, ``@``, ``/`` or an inner ``.``), so a URL inside an
  e-mail body the model composed is found too;
- numbers, as the text they are written as;
- for a free-text argument (a message's ``body``, a file's ``content``: see
  `FREE_TEXT`), only the identifiers inside it. Prose copied from a mail into
  a note is data moving, not an instruction obeyed; an address or a link in
  that prose is still tested;
- values of at least ``min_chars`` normalised characters as substrings. A
  shorter string (``"13"``, ``"09:00"``) is in every text as a substring, so it
  is tested only as a whole word of untrusted prose ("delete the file with ID
  '13'"), and passes wherever any result, trusted or not, holds it as a whole
  field (the ID of a file listed) or trusted text holds it as a word (not as
  part of ``2024-05-19 13:00``). Short numbers (``2``, ``50.0``) are
  quantities and are not tested.

A value is *copied* when it occurs inside an untrusted text, such as a word of
a mail's body or part of a longer field. A value that only occurs as a whole
field of an untrusted result (one channel name of a list, an address in a
participants list, the account of a past transaction) was *selected* from
data, not copied from an instruction; with ``selections="allow"`` (the
default) it passes, with ``"check"`` it is flagged like a copy. An injected
instruction carries its values in prose, so a selection is never the
injection's own text; but a field an outsider sets whole, such as the sender
of a mail, can be selected too ("reply to me").

What it cannot see, by construction: a value transformed on the way (translated,
reformatted, computed from untrusted data, split or summarised), and a decision
taken on untrusted data without copying any of it (which recipient of a
trusted list to pay, whether to delete a file, which field to select). Those
need data-flow tracking through the model's reasoning, which a runtime that
sees only calls cannot do.

An answer that repeats untrusted text to the user is reported, not refused:
`Provenance.repeated` names the identifiers and names in it (two or more
capitalised words, such as a hotel's) that only untrusted results held. Telling
the user what a mail or a file says is what many tasks ask for, so the test
that flags a planted recommendation flags a security code read out of a mail
as well; the runtime marks both and leaves the judgement to whoever reads the
answer.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._written import read, write

__all__ = ["FREE_TEXT", "Provenance", "Selections", "Suspicious", "normalise"]

#: The version of the form `Provenance.to_dict` writes.
WRITTEN_VERSION = 1
#: The versions `Provenance.from_dict` reads: 0 is the form of earlier releases, unversioned.
READ_VERSIONS = (0, 1)
#: The default shortest value, in normalised characters, that is tested as a substring.
MIN_CHARS = 6
#: Argument names taken for free text by default: only the identifiers inside
#: their values are tested, not their words.
FREE_TEXT = frozenset(
    {
        "body",
        "comment",
        "content",
        "description",
        "location",
        "message",
        "note",
        "notes",
        "subject",
        "summary",
        "text",
        "title",
    }
)

#: Whether a value selected whole from an untrusted result's fields passes.
Selections = Literal["allow", "check"]

_SEPARATOR = "\x00"  # between the leaves of one result: never inside a normalised value
_TOKEN_EDGES = "\"'`.,;:!?()[]{}<>"
_IDENTIFIER = re.compile(r"[0-9@/]|\w\.\w")
# What ends a run of capitalised words besides a word in lower case: a sentence's or
# a clause's punctuation, brackets, quotes and line ends.
_NAME_BREAK = re.compile(r"[.,;:!?()\[\]{}<>\"`\n\r]+")


# Characters that show as nothing, besides whitespace and the format characters
# (category Cf) found below: the default-ignorable code points that are not Cf (the
# combining grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian and
# other variation selectors, and those not assigned yet), and the blank Braille cell.
_INVISIBLE_RANGES = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2065, 0x2065),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),
)


@functools.cache
def _invisible() -> re.Pattern[str]:
    """Every character that shows as nothing: format (Cf) and control (Cc) ones, and the above.

    Found from this Python's Unicode tables once, when provenance first compares
    text; Unicode assigns format characters in the first two planes and the 14th
    (tags), whose last is covered by the ranges above.
    """
    codes = {code for code in range(0x20000) if unicodedata.category(chr(code)) in ("Cf", "Cc")}
    codes.update(code for low, high in _INVISIBLE_RANGES for code in range(low, high + 1))
    ranges: list[tuple[int, int]] = []
    for code in sorted(codes):
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    spans = "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in ranges)
    # Control characters include the separator put between a result's leaves.
    return re.compile(f"[{spans}]")


def normalise(text: str) -> str:
    """Text as provenance compares it: without invisible characters, NFKC, case-folded,
    without whitespace.

    The invisible characters go first, so that what they separated composes as it
    would have without them (``e``, a zero-width space and an accent become ``é``).
    """
    visible = _invisible().sub("", text)
    folded = unicodedata.normalize("NFKC", visible).casefold()
    return "".join(folded.split())


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
        yield _number_texts(value)[-1]  # 2.0 as "2": one field, one text
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item)
    else:
        yield str(value)


def _words(text: str) -> Iterator[str]:
    """The whitespace-separated words of `text`, without the punctuation around them."""
    for raw in text.split():
        word = raw.strip(_TOKEN_EDGES)
        if word:
            yield word


def _names(text: str) -> Iterator[str]:
    """Runs of two or more capitalised words, as a name is written: "Riverside View Hotel"."""
    for chunk in _NAME_BREAK.split(text):
        run: list[str] = []
        for raw in [*chunk.split(), ""]:
            # Read as shown: an invisible character neither starts a word nor ends a name.
            word = _invisible().sub("", raw)
            if raw and not word:
                continue
            word = word.strip(_TOKEN_EDGES)
            if word and word[0].isupper():
                run.append(word)
                continue
            if len(run) > 1:
                yield " ".join(run)
            run = []


def _candidates(value: Any, *, free: bool) -> Iterator[tuple[str, str, bool]]:
    """(as written, normalised, whether it is text) for each value of an argument that is tested.

    Free text yields only the identifiers inside it; a number is not text.
    """
    if isinstance(value, str):
        if not free:
            yield value, normalise(value), True
        if free or len(value.split()) > 1:
            for token in _words(value):
                if _IDENTIFIER.search(token):
                    yield token, normalise(token), True
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        for text in _number_texts(value):
            yield text, text, False
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _candidates(item, free=free)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _candidates(item, free=free)


@dataclass(frozen=True, slots=True)
class _Text:
    """One noted text: its leaves, normalised, split into prose and atoms."""

    tool: str
    leaves: tuple[str, ...]
    """As noted, for `Provenance.to_dict`."""
    prose: str
    """The leaves that hold whitespace, normalised and joined."""
    atoms: frozenset[str]
    """The leaves without whitespace (an ID, an address, a name), normalised."""
    words: frozenset[str]
    """The words of the prose, normalised, without the punctuation around them."""

    @classmethod
    def of(cls, tool: str, leaves: Sequence[str]) -> _Text:
        prose = [leaf for leaf in leaves if len(leaf.split()) > 1]
        atoms = frozenset(normalise(leaf) for leaf in leaves if len(leaf.split()) == 1)
        joined = _SEPARATOR.join(normalise(leaf) for leaf in prose)
        words = frozenset(normalise(word) for leaf in prose for word in _words(leaf))
        return cls(tool, tuple(leaves), joined, atoms - {""}, words - {""})

    def copies(self, needle: str) -> bool:
        """`needle` occurs inside this text: in its prose, or as part of a longer field."""
        return needle in self.prose or any(needle in atom and atom != needle for atom in self.atoms)

    def holds(self, needle: str) -> bool:
        return self.copies(needle) or needle in self.atoms


@dataclass(frozen=True, slots=True)
class Suspicious:
    """An argument value found in untrusted results and nowhere trusted."""

    argument: str
    value: str
    sources: tuple[str, ...]
    """The untrusted tools whose results hold it."""

    def to_dict(self) -> dict[str, Any]:
        return write(self, mode="json")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Suspicious:
        """The value `to_dict` wrote; one `UsageError` saying what is wrong if not one."""
        return read(cls, data)


@dataclass(frozen=True, slots=True)
class _Written:
    """The written form of `Provenance`: the leaves of its texts, by trust."""

    trusted: list[list[str]] = field(default_factory=list)
    """Each trusted text's leaves."""
    untrusted: list[tuple[str, list[str]]] = field(default_factory=list)
    """Each untrusted result: the tool, and its leaves."""


class Provenance:
    """The text of one run, split by trust. Safe to note into from several threads."""

    def __init__(self) -> None:
        self._trusted: list[_Text] = []
        self._untrusted: list[_Text] = []
        self._lock = threading.Lock()

    def trust(self, text: str) -> None:
        """Note text the user or the developer wrote: the task, the system prompt."""
        self._add(_Text.of("", [text]), trusted=True)

    def note(self, tool: str, result: Any, *, trusted: bool) -> None:
        """Note a tool's result (a JSON value), from a tool of the given trust."""
        leaves = [leaf for leaf in _leaves(result) if leaf.strip()]
        if leaves:
            self._add(_Text.of(tool, leaves), trusted=trusted)

    def _add(self, text: _Text, *, trusted: bool) -> None:
        with self._lock:
            (self._trusted if trusted else self._untrusted).append(text)

    def suspicious(
        self,
        arguments: Mapping[str, Any],
        *,
        min_chars: int = MIN_CHARS,
        free_text: Collection[str] = FREE_TEXT,
        selections: Selections = "allow",
    ) -> list[Suspicious]:
        """The argument values only untrusted results could have supplied.

        `free_text` names the arguments whose words are not tested, only the
        identifiers inside them; `selections` says whether a value that is a
        whole field of an untrusted result passes (see the module's text).
        """
        values = [
            (name, written, needle, text)
            for name, value in arguments.items()
            for written, needle, text in _candidates(value, free=name in free_text)
        ]
        longer = ((name, w, n) for name, w, n, _ in values if len(n) >= min_chars)
        found = self._only_untrusted(longer, min_chars, whole_fields=selections == "check")
        short = [(name, w, n) for name, w, n, text in values if text and 0 < len(n) < min_chars]
        flagged = [normalise(s.value) for s in found]
        return found + [
            s
            for s in self._short_words(short, selections=selections)
            if not any(normalise(s.value) in whole for whole in flagged)  # part of one found
        ]

    def repeated(self, text: str, *, min_chars: int = MIN_CHARS) -> list[Suspicious]:
        """The identifiers and names in `text` that only untrusted results held.

        For an answer to the user: each identifier (as for free text) and each
        run of two or more capitalised words in `text` that an untrusted
        result holds, in its prose or as a field, and no trusted text does.
        Each is reported with ``argument="answer"``.
        """
        written = [w for w in _words(text) if _IDENTIFIER.search(w)] + list(_names(text))
        values = (("answer", value, normalise(value)) for value in written)
        return self._only_untrusted(values, min_chars, whole_fields=True)

    def _short_words(
        self, values: Iterable[tuple[str, str, str]], *, selections: Selections
    ) -> list[Suspicious]:
        """Of short (argument, as written, normalised), those only a word of untrusted prose gave.

        A short value stands for itself only as a whole word ("the file with ID
        '13'"), on either side: it passes when trusted text holds it as a word
        or any result holds it as a whole field (with ``selections="check"``, a
        trusted one), not when it is only part of a trusted ``13:00``.
        """
        with self._lock:
            trusted = list(self._trusted)
            untrusted = list(self._untrusted)
        fields = [*trusted, *(untrusted if selections == "allow" else [])]
        found: list[Suspicious] = []
        seen: set[str] = set()
        for argument, written, needle in values:
            if needle in seen:
                continue
            seen.add(needle)
            sources = [t.tool for t in untrusted if needle in t.words]
            if (
                sources
                and not any(needle in t.words for t in trusted)
                and not any(needle in t.atoms for t in fields)
            ):
                found.append(Suspicious(argument, written, tuple(dict.fromkeys(sources))))
        return found

    def _only_untrusted(
        self, values: Iterable[tuple[str, str, str]], min_chars: int, *, whole_fields: bool
    ) -> list[Suspicious]:
        """Of (argument, as written, normalised), those untrusted text holds and trusted does not.

        A value counts as held by an untrusted result when it is copied from it,
        or with `whole_fields` also when it is one of its fields whole.
        """
        with self._lock:
            trusted = list(self._trusted)
            untrusted = list(self._untrusted)
        if not untrusted:
            return []
        test = _Text.holds if whole_fields else _Text.copies
        found: list[Suspicious] = []
        seen: set[str] = set()
        for argument, written, needle in values:
            if len(needle) < min_chars or needle in seen:
                continue
            seen.add(needle)
            sources = [t.tool for t in untrusted if test(t, needle)]
            if sources and not any(t.holds(needle) for t in trusted):
                found.append(Suspicious(argument, written, tuple(dict.fromkeys(sources))))
        return found

    def to_dict(self) -> dict[str, Any]:
        """The written form: the texts noted so far, by trust, with ``version``."""
        with self._lock:
            written = _Written(
                [list(t.leaves) for t in self._trusted],
                [(t.tool, list(t.leaves)) for t in self._untrusted],
            )
        return write(written, version=WRITTEN_VERSION, mode="json")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Provenance:
        """The provenance `to_dict` (or an earlier release) wrote.

        One `UsageError` names the version of a form this release does not read,
        or says what is wrong with data that is not one.
        """
        written = read(_Written, data, reads=READ_VERSIONS, name="Provenance")
        provenance = cls()
        provenance._trusted = [_Text.of("", leaves) for leaves in written.trusted]
        provenance._untrusted = [_Text.of(tool, leaves) for tool, leaves in written.untrusted]
        return provenance
