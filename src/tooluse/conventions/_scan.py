"""Walking source text outside its quoted stretches: matching brackets, splitting on commas.

One walker serves Python call lists and BFCL's Java and JavaScript argument text;
`Quoting` says how each language quotes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["JAVA_JS", "PYTHON", "Quoting", "closing_bracket", "split_top_level", "unquoted"]

_PAIRS = {"(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True, slots=True)
class Quoting:
    """How a language quotes text.

    A quoted stretch opens at one of `marks` and closes at the same mark; a
    backslash escapes the character after it. With `triple`, three marks open
    a stretch that only the same three close (Python's long strings). With
    `one_line`, a newline inside a stretch opened by a single mark leaves it
    unterminated (Python's short strings cannot span lines).
    """

    marks: str
    triple: bool = False
    one_line: bool = False


PYTHON = Quoting("'\"", triple=True, one_line=True)
JAVA_JS = Quoting("'\"`")


def unquoted(text: str, start: int, quoting: Quoting) -> Iterator[int]:
    """Indices of the characters from `start` on that lie outside quoted text.

    The walk ends at a stretch that is never closed: nothing after it can be
    told apart from quoted text.
    """
    i = start
    while i < len(text):
        char = text[i]
        if char not in quoting.marks:
            yield i
            i += 1
            continue
        close = char * 3 if quoting.triple and text.startswith(char * 3, i) else char
        j = i + len(close)
        while j < len(text) and not text.startswith(close, j):
            if text[j] == "\\":
                j += 1
            elif text[j] == "\n" and quoting.one_line and len(close) == 1:
                return
            j += 1
        if j >= len(text):
            return
        i = j + len(close)


def closing_bracket(text: str, start: int, quoting: Quoting) -> int | None:
    """The index of the bracket that closes the one at `start`.

    None when it is never closed, or when a bracket of another kind closes
    first (``[f(a=1]``): the text is not balanced.
    """
    expected: list[str] = []
    for i in unquoted(text, start, quoting):
        char = text[i]
        if char in _PAIRS:
            expected.append(_PAIRS[char])
        elif char in ")]}":
            if not expected or expected.pop() != char:
                return None
            if not expected:
                return i
    return None


def split_top_level(text: str, quoting: Quoting) -> list[str]:
    """Split on commas outside quotes and brackets; parts are stripped.

    Empty text gives no parts; a trailing comma gives an empty last part.
    """
    parts: list[str] = []
    depth = 0
    start = 0
    for i in unquoted(text, 0, quoting):
        char = text[i]
        if char in _PAIRS:
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    if parts or last:
        parts.append(last)
    return parts
