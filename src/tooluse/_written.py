"""The written form of what tooluse writes down: pydantic over the classes themselves.

The records and results stay plain dataclasses, since calls are recorded on the
hot path and building one costs a fraction of what a pydantic model does; their
written form (what ``to_dict`` gives and ``from_dict`` reads) is derived from the
same class by a `TypeAdapter`, so a field is declared once.

A form that is written down on its own (a run's result, an approval request or
record, a run's provenance, a results row) carries its version under one key,
``version`` unless the form has a field of that name. `read` takes the versions a
release reads; data in any other version is refused by one error that names the
version, before any of it is used. Data written before the form had a version
carries none, and is version 0.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeVar

from pydantic import TypeAdapter, ValidationError

from ._exceptions import UsageError

__all__ = ["VERSION", "json_lines", "read", "version_of", "write"]

T = TypeVar("T")

#: The key a versioned written form keeps its version under, unless it names another.
VERSION = "version"

_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def _adapter(cls: type[T]) -> TypeAdapter[T]:
    # Built on first use: importing the package stays quick. A race builds one twice.
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


def write(
    value: object,
    *,
    version: int | None = None,
    key: str = VERSION,
    exclude: set[str] | None = None,
    mode: Literal["python", "json"] = "python",
) -> dict[str, Any]:
    """``value``'s fields as a dict (the values themselves, as a JSON encoder takes them).

    With `version`, the dict starts with it, under `key`; `exclude` names fields
    that are not written (they are read back as their defaults). ``mode="json"``
    writes JSON values only (a tuple as a list).
    """
    written: dict[str, Any] = _adapter(type(value)).dump_python(value, exclude=exclude, mode=mode)
    return written if version is None else {key: version, **written}


def version_of(
    data: object,
    what: str,
    reads: Sequence[int],
    *,
    key: str = VERSION,
    error: type[UsageError] = UsageError,
    advice: str = "read it with the release that wrote it",
) -> int:
    """The version `data` is written in (0: none named), one of `reads`; else one `error`.

    `what` names the data in the message (``the result``); `advice` says what to do
    with data in a version this release does not read.
    """
    if not isinstance(data, Mapping):
        raise error(f"{what} cannot be read: it is a {type(data).__name__}, not a mapping")
    version = data.get(key, 0)
    # True == 1 in Python: a flag is not a version.
    if isinstance(version, bool) or not isinstance(version, int) or version not in reads:
        raise error(
            f"{what} is in version {version!r} of the written form; this release reads "
            f"versions {', '.join(map(str, reads))}: {advice}"
        )
    return version


def read(
    cls: type[T],
    data: Any,
    *,
    reads: Sequence[int] | None = None,
    key: str = VERSION,
    ignore: Collection[str] = (),
    name: str | None = None,
) -> T:
    """The ``cls`` that ``data`` writes down; one `UsageError` saying what is wrong if not.

    With `reads`, `data` is versioned under `key` (see `version_of`) and its version
    must be one of them. Keys in `ignore` are not read: fields `write` excluded.
    `name` is what the messages call it (the class's name unless given).
    """
    name = name or cls.__name__
    if reads is not None:
        version_of(data, f"a written {name}", reads, key=key)
        data = {k: v for k, v in data.items() if k != key}
    if ignore and isinstance(data, Mapping):
        data = {k: v for k, v in data.items() if k not in ignore}
    try:
        value: T = _adapter(cls).validate_python(data)
    except ValidationError as exc:
        raise UsageError(f"a written {name} cannot be read: {exc}") from exc
    return value


def json_lines(text: str) -> Iterator[tuple[int, Any]]:
    """JSON Lines: (line number, value) for each non-empty line.

    The value of a line that is not JSON is the `json.JSONDecodeError` saying why,
    for the reader to report in its own terms and decide whether to go on.
    """
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, exc
