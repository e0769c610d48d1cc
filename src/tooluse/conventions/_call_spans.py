"""Finding tool calls written in Python syntax amid prose.

`call_spans` finds lists of calls (and lone calls of known tools) in a reply;
`tooluse._syntax` reads them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from ._scan import PYTHON, closing_bracket

__all__ = ["call_spans"]


# Where calls begin: a bracket at the start of a line (after spaces or
# backticks) followed by a name and a parenthesis; or a lone call at the
# start of a line, when it names a tool (prose rarely starts a line with
# "get_current_weather("). Names may be any Python identifier, so that a
# misspelt "échō" is refused by name rather than read as the answer.
_LIST_START = re.compile(r"^[ \t`]*(\[)\s*[^\W\d][\w.]*\s*\(", re.MULTILINE)
_CALL_START = re.compile(r"^[ \t`]*([^\W\d][\w.]*)\s*\(", re.MULTILINE)
# A reply that is nothing but one call with a keyword argument, perhaps fenced.
_WHOLE_CALL = re.compile(
    r"""[\s`]* (?:(?<=```)[\w+-]*\n\s*)?             # space, backticks, a fence's language
    (?P<name>[^\W\d][\w.]*) \s* (?P<open>\() \s*    # name(
    [^\W\d]\w* \s* =(?!=)                           # keyword=
    """,
    re.VERBOSE,
)


def _loose(name: str) -> str:
    """A name without case and accents: "Échō" and "echo" are alike."""
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _whole_call(text: str) -> tuple[int, int] | None:
    match = _WHOLE_CALL.match(text)
    if match is None:
        return None
    close = closing_bracket(text, match.start("open"), PYTHON)
    if close is None or text[close + 1 :].strip().strip("`"):
        return None
    return match.start("name"), close + 1


def _next_start(text: str, position: int, names: set[str]) -> int | None:
    starts = []
    listed = _LIST_START.search(text, position)
    if listed is not None:
        starts.append(listed.start(1))
    for call in _CALL_START.finditer(text, position):
        if _loose(call[1]) in names:
            starts.append(call.start(1))
            break
    return min(starts, default=None)


def call_spans(text: str, names: set[str]) -> Iterator[tuple[int, int]]:
    """Spans of `text` holding calls: what reads as an attempt to call a tool.

    That is a list of calls on a line of its own, a lone call at the start
    of a line of a tool in `names` (up to case and accents), or a reply
    that is one call with a keyword argument and nothing else. Any other
    text is prose.
    """
    whole = _whole_call(text)
    if whole is not None:
        yield whole
        return
    loose = {_loose(name) for name in names}
    position = 0
    while (start := _next_start(text, position, loose)) is not None:
        close = closing_bracket(text, start, PYTHON)
        if close is None:
            # Unbalanced: hand the rest to the parser, which says where it broke.
            yield start, len(text)
            return
        yield start, close + 1
        position = close + 1
