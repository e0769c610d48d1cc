"""Feeding a decode watch text pieces as if they were tokens."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar


class Watch(Protocol):
    def __call__(self, out: Sequence[int], token: int | None) -> bool: ...


W = TypeVar("W", bound=Watch)


def fed(
    make: Callable[[Callable[[Sequence[int]], str]], W], pieces: Sequence[str]
) -> tuple[W, int | None]:
    """The watch `make` builds, fed `pieces` (token i is piece i); where it stopped, or None.

    `len(pieces)` means it stopped at the end of the text.
    """

    def detokenize(tokens: Sequence[int]) -> str:
        return "".join(pieces[t] for t in tokens)

    watch = make(detokenize)
    out: list[int] = []
    for token in range(len(pieces)):
        if watch(out, token):
            return watch, token
        out.append(token)
    return watch, len(pieces) if watch(out, None) else None
