from __future__ import annotations

import codecs
from collections.abc import Sequence

__all__ = ["OutputCapture", "fit"]

# UTF-8 continuation bytes: deleting them from a byte string leaves one byte per character.
_CONTINUATION = bytes(range(0x80, 0xC0))


class OutputCapture:
    """Keeps the head and the tail of a byte stream in bounded memory."""

    def __init__(self, limit: int) -> None:
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self._cut_chars = 0
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail += data
        excess = len(self._tail) - self._tail_limit
        if excess > 0:
            self._cut_chars += len(bytes(self._tail[:excess]).translate(None, _CONTINUATION))
            del self._tail[:excess]

    @property
    def truncated(self) -> bool:
        return self._cut_chars > 0

    def _parts(self) -> tuple[str, str]:
        """The head and the tail as text, cut on character boundaries once truncated."""
        if not self.truncated:
            return (bytes(self._head) + bytes(self._tail)).decode("utf-8", errors="replace"), ""
        # An incomplete sequence at the end of the head or the start of the tail is
        # dropped rather than shown as replacement characters.
        head = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(bytes(self._head))
        tail = bytes(self._tail)
        skip = 0
        while skip < min(3, len(tail)) and 0x80 <= tail[skip] < 0xC0:
            skip += 1
        return head, tail[skip:].decode("utf-8", errors="replace")

    @property
    def chars(self) -> int:
        """About how many characters the stream held."""
        head, tail = self._parts()
        return len(head) + self._cut_chars + len(tail)

    def text(self, budget: int | None = None) -> str:
        """The stream as text; past ``budget`` characters, its head and tail and a note."""
        head, tail = self._parts()
        cut = self._cut_chars
        if budget is not None and len(head) + len(tail) > budget:
            front, back = budget // 2, budget - budget // 2
            if not cut:
                # One text, not yet cut: split it anew.
                head, tail = head[:front], head[len(head) - back :] if back else ""
            else:
                cut += max(0, len(head) - front) + max(0, len(tail) - back)
                head, tail = head[:front], tail[len(tail) - back :] if back else ""
            cut = max(cut, self.chars - len(head) - len(tail))
        if not cut:
            return head + tail
        return f"{head}\n[... {cut:,} characters cut ...]\n{tail}"


def fit(captures: Sequence[OutputCapture], budget: int) -> tuple[list[str], bool]:
    """The captures as texts that together hold about ``budget`` characters, and whether
    anything was cut.

    Short texts stay whole; the long ones share what is left equally, each keeping its
    head and its tail.
    """
    sizes = [capture.chars for capture in captures]
    shares = list(sizes)
    if sum(sizes) > budget:
        left = budget
        order = sorted(range(len(sizes)), key=sizes.__getitem__)
        for rank, index in enumerate(order):
            shares[index] = min(sizes[index], left // (len(sizes) - rank))
            left -= shares[index]
    texts = [capture.text(share) for capture, share in zip(captures, shares, strict=True)]
    cut = any(capture.truncated for capture in captures) or shares != sizes
    return texts, cut
