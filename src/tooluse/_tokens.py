"""Offline token counting with the o200k_base encoding (no download needed)."""

from __future__ import annotations

import functools
from collections.abc import Callable

__all__ = ["count_tokens"]

_CHUNK = 100_000  # the encoder refuses very long inputs in one call


@functools.cache
def _counter() -> Callable[[str], int]:
    """The Rust tokenizer's own count: no token list is made, and no vocabulary is
    decoded into Python objects first (the tiktoken-shaped wrapper takes seconds and
    tens of MB for that)."""
    try:
        from bpe_openai._bindings import tokenizer_for_encoding
    except ImportError:  # a build without the bindings: the wrapper counts
        from bpe_openai import get_encoding

        encode = get_encoding("o200k_base").encode_ordinary
        return lambda text: len(encode(text))
    count: Callable[[str], int] = tokenizer_for_encoding("o200k_base").count
    return count


def _sanitized(text: str) -> str:
    # What the encoder itself does with text UTF-8 cannot hold (lone surrogates).
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def count_tokens(text: str) -> int:
    """Tokens of `text` under o200k_base.

    Special-token markers such as ``<|endoftext|>`` count as ordinary text: a
    tool result may contain anything.
    """
    if not text:
        return 0
    count = _counter()
    if len(text) > _CHUNK:
        return sum(count_tokens(text[i : i + _CHUNK]) for i in range(0, len(text), _CHUNK))
    try:
        return count(text)
    except UnicodeEncodeError:
        return count(_sanitized(text))
