"""What a request shows of the conversation: the messages so far, without copying them.

A run's requests each show the whole conversation up to that round. A copy each
round would cost time and memory in proportion to the history, so a round late in
a long run would cost more than an early one (and a model that keeps its requests,
the whole run's square). The run keeps its messages in a list it only ever appends
to; a `Prefix` is the first ``n`` of them, which appending never changes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any, overload

from .._messages import Message

__all__ = ["Conversation", "Prefix"]


class Prefix(Sequence[Message]):
    """The first messages of a `Conversation`, as they stood when it was taken.

    Reads like a list of messages (a slice is a list); equal to any sequence of
    the same messages.
    """

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[Message], length: int) -> None:
        self._items = items
        self._length = length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return self._items[: self._length][index]
        position = index + self._length if index < 0 else index
        if not 0 <= position < self._length:
            raise IndexError("message index out of range")
        return self._items[position]

    def __iter__(self) -> Iterator[Message]:
        return islice(self._items, self._length)

    def __reversed__(self) -> Iterator[Message]:
        items = self._items
        return (items[i] for i in range(self._length - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Prefix | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are unhashable

    def __repr__(self) -> str:
        return repr(list(self))

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy or a pickle holds just these messages, not the run's later ones.
        return Prefix, (self[:], self._length)


class Conversation:
    """The messages a run's requests are shown: appended to, never changed."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: list[Message] = []

    def append(self, message: Message) -> None:
        self._items.append(message)

    def so_far(self) -> Prefix:
        """Every message appended until now: the same however many are appended later."""
        return Prefix(self._items, len(self._items))
