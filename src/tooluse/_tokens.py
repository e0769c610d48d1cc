"""Offline token counting with the o200k_base encoding (no download needed)."""

from __future__ import annotations

import functools
from typing import Protocol

__all__ = ["count_tokens"]

_CHUNK = 100_000  # the encoder refuses very long inputs in one call


class _Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


@functools.cache
def _encoding() -> _Encoding:
    from bpe_openai import get_encoding

    encoding: _Encoding = get_encoding("o200k_base")
    return encoding


def count_tokens(text: str) -> int:
    """Tokens of `text` under o200k_base.

    Special-token markers such as ``<|endoftext|>`` count as ordinary text: a
    tool result may contain anything.
    """
    if not text:
        return 0
    encode = _encoding().encode_ordinary
    if len(text) <= _CHUNK:
        return len(encode(text))
    return sum(len(encode(text[i : i + _CHUNK])) for i in range(0, len(text), _CHUNK))
