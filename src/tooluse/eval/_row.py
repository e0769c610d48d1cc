"""One results row: a task run in one convention by one model, and its score.

Rows are the lines of ``results.jsonl``. A row carries the version of its
written form under ``v`` (`ROW_VERSION`); `Row.from_json` reads back the rows of
this version and those of earlier releases, which carried none (version 0): keys
a row lacks take their defaults (rows from before the schema-valid share have no
``unparsed``), keys it does not know are ignored, and a line without the four
identifying keys, or with a field of the wrong type, is not a row. A row in any
other version is refused by `UsageError` naming it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .._exceptions import UsageError
from .._written import read, version_of, write

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "ROW_VERSION",
    "Row",
    "RowKey",
    "read_results",
    "row_from_json",
    "row_to_json",
    "schema_valid_share",
]

#: The version of the rows this release writes, under `ROW_VERSION_KEY`.
ROW_VERSION = 1
#: The versions it reads: 0 is a row of earlier releases, which named none.
READ_VERSIONS = (0, 1)
#: Where a row keeps its version: ``v``, since an AgentDojo row's ``version`` is the suite's.
ROW_VERSION_KEY = "v"
_ADVICE = "read it with the release that wrote it"


class _Keyed(Protocol):
    @property
    def key(self) -> Hashable: ...


_R = TypeVar("_R", bound=_Keyed)


def read_results(path: Path, from_json: Callable[[dict[str, Any]], _R]) -> list[_R]:
    """The rows of a results file, the last one winning for each key.

    Lines that are not rows at all, such as one cut short by a killed run, or
    that `from_json` refuses (ValueError, TypeError), are skipped. A row in a
    version this release does not read raises `UsageError` naming the version.
    """
    if not path.is_file():
        return []
    rows: dict[Hashable, _R] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            data = json.loads(line)
            row = from_json(data) if isinstance(data, dict) else None
        except (json.JSONDecodeError, ValueError, TypeError):
            continue
        if row is not None:
            rows.pop(row.key, None)
            rows[row.key] = row
    return list(rows.values())


#: What identifies a row: suite, entry id, convention, model label.
RowKey = tuple[str, str, str, str]

_IDENTITY = ("suite", "entry_id", "convention", "model")


@dataclass(slots=True, kw_only=True)
class Row:
    """One task run in one convention by one model.

    `calls` were executed (they passed schema validation), `rejected` were refused
    by the dispatcher, `unparsed` replies could not be read as calls at all.
    `precision`, `recall` and `argument_accuracy` are None where the ratio has no
    denominator or the task has no ground truth to compare with. `error` says why
    a run failed (``data: …``, ``harness: …``, ``scorer: …``, ``worker: …`` or the
    run's own error) and `traceback` where, for a failure of the harness itself;
    `detail` is the scorer's reason for a wrong answer.
    """

    suite: str
    entry_id: str
    category: str = ""
    width: int | None = None
    convention: str
    model: str
    correct: bool = False
    status: str = "error"
    error: str | None = None
    detail: str | None = None
    precision: float | None = None
    recall: float | None = None
    argument_accuracy: float | None = None
    expected_calls: int = 0
    calls: int = 0
    rejected: int = 0
    unparsed: int = 0
    schema_valid_share: float | None = None
    rounds: int = 0
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    peak_input_tokens: int = 0
    #: ``provider``, ``o200k``, ``none``, or several joined by ``+``.
    token_source: str = "none"
    wall_s: float = 0.0
    answer: str | None = None
    traceback: str | None = None

    @property
    def key(self) -> RowKey:
        return (self.suite, self.entry_id, self.convention, self.model)

    @property
    def reason(self) -> str:
        """Why the entry was not passed, in one line: the scorer's detail, then the run's error.

        The detail comes first because a run's error is often only its ending (``no
        final answer after 1 rounds``) while the detail names the wrong argument.
        """
        return " — ".join(" ".join(part.split()) for part in (self.detail, self.error) if part)

    def to_json(self) -> dict[str, Any]:
        return row_to_json(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Row:
        """A row from a decoded ``results.jsonl`` line; ValueError when it is not one."""
        return row_from_json(cls, data, _IDENTITY, "a results row")


def schema_valid_share(calls: int, rejected: int, unparsed: int) -> float | None:
    """Valid calls over everything emitted: ``calls / (calls + rejected + unparsed)``.

    `calls` passed schema validation, `rejected` did not, `unparsed` replies
    could not be read as calls at all; None when the denominator is zero.
    """
    emitted = calls + rejected + unparsed
    return calls / emitted if emitted else None


_D = TypeVar("_D", bound="DataclassInstance")


def row_from_json(cls: type[_D], data: Mapping[str, Any], identity: Sequence[str], what: str) -> _D:
    """A row of dataclass `cls` from a decoded JSON line; ValueError when it is not one.

    The `identity` fields must be strings; keys `cls` does not know (written by a
    later release of the same version) are left out. A row in a version this
    release does not read is refused with `UsageError` naming it: it is a row, and
    skipping it would run its entry again.
    """
    version_of(data, what, READ_VERSIONS, key=ROW_VERSION_KEY, advice=_ADVICE)
    missing = [key for key in identity if not isinstance(data.get(key), str)]
    if missing:
        raise ValueError(f"not {what}: no {', '.join(missing)}")
    try:
        return read(cls, data, ignore=(ROW_VERSION_KEY,))
    except UsageError as exc:
        raise ValueError(f"not {what}: {exc}") from exc


def row_to_json(row: DataclassInstance) -> dict[str, Any]:
    """The line a row is written as: its fields, with its version under ``v``."""
    return write(row, version=ROW_VERSION, key=ROW_VERSION_KEY, mode="json")
