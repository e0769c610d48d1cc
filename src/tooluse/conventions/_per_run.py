"""State a convention keeps for one run, out of reach of every other run."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Generic, TypeVar
from weakref import WeakKeyDictionary

from .._exceptions import UsageError

__all__ = ["PerRun"]

T = TypeVar("T")

# One variable for all conventions (context variables are never freed); the
# weak keys let a convention and its state go when nothing else holds it.
_STATE: ContextVar[WeakKeyDictionary[PerRun[Any], Any] | None] = ContextVar(
    "tooluse_convention_runs", default=None
)


class PerRun(Generic[T]):
    """What `prepare` learns about a run's tools, for `interpret` to read.

    Held in the context of the run's asyncio task (`contextvars`): runs
    started together with ``asyncio.gather`` are tasks of their own, so
    each reads only what its own `prepare` set, even when they share one
    convention. The value must not refer to this `PerRun`, which is held
    weakly.
    """

    def __init__(self, what: str) -> None:
        self.what = what

    def set(self, value: T) -> None:
        # A copy, never a change in place: tasks started before this call
        # share the old mapping.
        state = WeakKeyDictionary(_STATE.get() or {})
        state[self] = value
        _STATE.set(state)

    def get(self) -> T:
        state = _STATE.get()
        if state is None or self not in state:
            raise UsageError(f"{self.what}: interpret() was called before prepare() in this run")
        value: T = state[self]
        return value
