"""One results row: a task run in one convention by one model, and its score.

Rows are the lines of ``results.jsonl``. `Row.from_json` reads back rows written
by any version of the harness: keys a row lacks take their defaults (rows from
before the schema-valid share have no ``unparsed``), keys it does not know are
ignored, and a line without the four identifying keys is not a row.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["Row", "RowKey", "read_results", "row_from_json", "schema_valid_share"]


class _Keyed(Protocol):
    @property
    def key(self) -> Hashable: ...


_R = TypeVar("_R", bound=_Keyed)


def read_results(path: Path, from_json: Callable[[dict[str, Any]], _R]) -> list[_R]:
    """The rows of a results file, the last one winning for each key.

    Lines that are not rows at all, such as one cut short by a killed run, or
    that `from_json` refuses (ValueError, TypeError), are skipped.
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
        return dataclasses.asdict(self)

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
    later version) are left out.
    """
    missing = [key for key in identity if not isinstance(data.get(key), str)]
    if missing:
        raise ValueError(f"not {what}: no {', '.join(missing)}")
    known = {f.name for f in dataclasses.fields(cls)}
    return cls(**{key: value for key, value in data.items() if key in known})
