"""Records written down and read back: one form per record, one clear error for a bad one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooluse import UsageError
from tooluse._records import Answered, CallRecord, RejectedCall
from tooluse._written import write

RECORD = CallRecord(
    "c1",
    "get_rate",
    {"base": "USD"},
    result={"rate": 0.92},
    error=None,
    round=3,
    started_at=12.5,
    duration_s=0.25,
    repairs=("renamed traget to target",),
    replayed=True,
    source="script",
)


def test_a_call_records_dict_is_its_written_form_and_reads_back() -> None:
    # CallRecord.to_dict is written out for speed; it must say what the declared form says.
    assert RECORD.to_dict() == write(RECORD) | {"repairs": list(RECORD.repairs)}
    assert CallRecord.from_dict(json.loads(json.dumps(RECORD.to_dict()))) == RECORD


@pytest.mark.parametrize(
    "record",
    [
        RejectedCall("c2", "send", '{"to": 1', "not JSON", round=2, source="plan", kind="denied"),
        Answered("s.1", "get_rate", {"base": "USD"}, value=[1, 2], kind=None, message=""),
    ],
)
def test_records_read_back_what_they_wrote(record: Any) -> None:
    assert type(record).from_dict(json.loads(json.dumps(record.to_dict()))) == record


@pytest.mark.parametrize("cls", [CallRecord, RejectedCall, Answered])
def test_a_bad_record_gets_one_error_naming_the_record_and_the_field(cls: Any) -> None:
    with pytest.raises(UsageError) as refused:
        cls.from_dict({"id": "c1", "call_id": "c1", "round": "soon"})
    assert cls.__name__ in str(refused.value)
