from __future__ import annotations

import codecs

__all__ = ["OutputCapture"]

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

    def text(self) -> str:
        if not self.truncated:
            return (bytes(self._head) + bytes(self._tail)).decode("utf-8", errors="replace")
        # Cut on character boundaries: an incomplete sequence at the end of the head or the
        # start of the tail is dropped rather than shown as replacement characters.
        head = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(bytes(self._head))
        tail = bytes(self._tail)
        skip = 0
        while skip < min(3, len(tail)) and 0x80 <= tail[skip] < 0xC0:
            skip += 1
        note = f"[... {self._cut_chars:,} characters cut ...]"
        return f"{head}\n{note}\n{tail[skip:].decode('utf-8', errors='replace')}"
