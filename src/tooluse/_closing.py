"""`Closing`: what ``with obj:`` means for everything of ours that holds a resource."""

from __future__ import annotations

from typing import Self

__all__ = ["Closing"]


class Closing:
    """An object with a `close`: ``with obj:`` hands it over, and closes it however the block ends.

    A subclass defines `close`, and overrides `__enter__` if entering must first
    start something.
    """

    __slots__ = ()

    def close(self) -> object:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
