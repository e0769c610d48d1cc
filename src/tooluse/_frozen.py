"""Read-only JSON values: what an approval policy is shown, so it cannot change a call.

`frozen` copies a JSON value into `FrozenDict` and `FrozenList`, which are a
``dict`` and a ``list`` for every reader (``json.dumps``, ``isinstance``,
equality, ``{**d}``, ``dict(d)``) and raise `TypeError` on every change. An
edit made in place would otherwise reach the record and not the call, or the
call and not the record. `thawed` is the plain, mutable copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

__all__ = ["FrozenDict", "FrozenList", "frozen", "thawed"]

_READ_ONLY = (
    "what an approval policy is shown is read-only (the request's arguments, the run so "
    "far): to run the call with other arguments, return Approval.allow(arguments) with "
    "a changed copy"
)


def _refuse(*_: object, **__: object) -> NoReturn:
    raise TypeError(_READ_ONLY)


class FrozenDict(dict[str, Any]):
    """A ``dict`` that cannot be changed (see the module's text)."""

    __slots__ = ()

    __setitem__ = __delitem__ = _refuse
    clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[str, Any]]]:
        # Copies and pickles are rebuilt whole, not item by item through __setitem__.
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    """A ``list`` that cannot be changed (see the module's text)."""

    __slots__ = ()

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = remove = pop = clear = sort = reverse = _refuse

    def __reduce__(self) -> tuple[type[FrozenList], tuple[list[Any]]]:
        return (FrozenList, (list(self),))


def frozen(value: Any) -> Any:
    """A read-only copy of a JSON value: its dicts and lists frozen, all the way down."""
    if isinstance(value, Mapping):
        return FrozenDict({k: frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList(frozen(v) for v in value)
    if isinstance(value, tuple):
        return tuple(frozen(v) for v in value)
    return value


def thawed(value: Any) -> Any:
    """A plain, mutable copy of a JSON value (frozen or not)."""
    if isinstance(value, Mapping):
        return {k: thawed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thawed(v) for v in value]
    if isinstance(value, tuple):
        return tuple(thawed(v) for v in value)
    return value
