"""The written form of the in-memory records: pydantic over the dataclasses themselves.

The records stay plain dataclasses, since calls are recorded on the hot path and
building one costs a fraction of what a pydantic model does; their written form
(what `to_dict` gives and `from_dict` reads) is derived from the same class by a
`TypeAdapter`, so a field is declared once.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from ._exceptions import UsageError

__all__ = ["read", "write"]

T = TypeVar("T")


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def _adapter(cls: type[T]) -> TypeAdapter[T]:
    # Built on first use: importing the package stays quick. A race builds one twice.
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


def write(value: object) -> dict[str, Any]:
    """``value``'s fields as a dict (the values themselves, as a JSON encoder takes them)."""
    written: dict[str, Any] = _adapter(type(value)).dump_python(value)
    return written


def read(cls: type[T], data: Any) -> T:
    """The ``cls`` that ``data`` writes down; one `UsageError` saying what is wrong if not."""
    try:
        value: T = _adapter(cls).validate_python(data)
    except ValidationError as exc:
        raise UsageError(f"a written {cls.__name__} cannot be read: {exc}") from exc
    return value
