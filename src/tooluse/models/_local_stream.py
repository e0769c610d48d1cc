"""Streaming a local model's reply: its tokens as text, and the prose before any call.

The decode loop runs on a worker thread and hands each batch of tokens to a
`TokenText`, which turns them into text (bytes joined across tokens, so a
character split over two tokens comes out whole) and passes it to the event
loop. Where calls are read out of the text afterwards, `Prose` passes on only
the prose a call frame cannot be part of, so that the pieces joined are the
reply's content.
"""

from __future__ import annotations

import asyncio
import codecs
import threading
from collections.abc import Callable, Sequence
from typing import Literal

from ..decoding import CALL_OPEN
from ._local_steps import whole_sentences

__all__ = ["Prose", "TokenText"]

#: What a call frame starts with, in any frame `read_calls` reads.
_OPENERS = (CALL_OPEN, "```")


class TokenText:
    """Token ids to text as they are decoded.

    Once `stop` is set (the stream it feeds was cancelled), the next batch raises
    `asyncio.CancelledError` into the decode loop, which ends it.
    """

    def __init__(
        self,
        piece: Callable[[int], bytes],
        emit: Callable[[str], None],
        stop: threading.Event,
    ) -> None:
        self._piece = piece
        self._emit = emit
        self._stop = stop
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def __call__(self, tokens: Sequence[int]) -> None:
        if self._stop.is_set():
            raise asyncio.CancelledError
        text = self._decoder.decode(b"".join(self._piece(t) for t in tokens))
        if text:
            self._emit(text)


class Prose:
    """Passes on the reply's text up to where a call frame may begin.

    Leading and trailing blanks are held back (the content is read stripped),
    as is a tail that may be the start of a frame's opener; a reply that opens
    with ``{`` or ``[`` may be calls written bare, and passes nothing on.
    With `hold` ``"sentences"``, only whole sentences are passed on: a reply
    stopped before a number nothing gives keeps only the sentences before it.
    With ``"all"``, nothing is passed on as it comes: an answer that may be
    replaced by a call comes whole, from `finish`, if it stands.
    """

    def __init__(
        self,
        emit: Callable[[str], None],
        *,
        hold: Literal["sentences", "all"] | None = None,
    ) -> None:
        self._emit = emit
        self._hold = hold
        self._text = ""
        self._sent = 0
        self._stopped = False

    @property
    def sent(self) -> str:
        return self._text[: self._sent]

    def feed(self, piece: str) -> None:
        if self._stopped:
            return
        self._text += piece
        start = len(self._text) - len(self._text.lstrip())
        if start == len(self._text):
            return
        if self._sent == 0:
            if self._text[start] in "{[":
                self._stopped = True
                return
            self._text = self._text[start:]
        cuts = [self._text.find(o) for o in _OPENERS if o in self._text]
        if cuts:
            self._send_to(min(cuts))
            self._stopped = True
            return
        end = len(self._text) - _opener_prefix(self._text)
        if self._hold == "all":
            return
        if self._hold == "sentences":
            end = min(end, len(whole_sentences(self._text) or ""))
        self._send_to(end)

    def finish(self, content: str | None) -> None:
        """Pass on what the read content has beyond what was passed on already."""
        content = content or ""
        if content.startswith(self.sent) and len(content) > self._sent:
            self._emit(content[self._sent :])

    def _send_to(self, end: int) -> None:
        end = len(self._text[:end].rstrip())
        if end > self._sent:
            self._emit(self._text[self._sent : end])
            self._sent = end


def _opener_prefix(text: str) -> int:
    """The length of the longest tail of `text` that begins an opener."""
    longest = 0
    for opener in _OPENERS:
        for size in range(1, len(opener)):
            if text.endswith(opener[:size]):
                longest = max(longest, size)
    return longest
