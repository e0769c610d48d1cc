"""Records written down and read back: one form per record, one clear error for a bad one."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tooluse import RunResult, UsageError
from tooluse._messages import Usage
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
    attempts=3,
)


def test_a_call_records_dict_is_its_written_form_and_reads_back() -> None:
    # CallRecord.to_dict is written out for speed; it must say what the declared form says.
    assert RECORD.to_dict() == write(RECORD) | {"repairs": list(RECORD.repairs)}
    assert CallRecord.from_dict(json.loads(json.dumps(RECORD.to_dict()))) == RECORD
    # One attempt, the most common, is left out, and read back as one.
    once = dataclasses.replace(RECORD, attempts=1)
    assert once.to_dict() == {k: v for k, v in RECORD.to_dict().items() if k != "attempts"}
    assert CallRecord.from_dict(once.to_dict()) == once


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


DATA = Path(__file__).resolve().parents[1] / "data"


def saved(name: str) -> dict[str, Any]:
    """A result as this release wrote it before its parts carried versions (see tests/data)."""
    data: dict[str, Any] = json.loads((DATA / name).read_text())
    return data


def with_versions(data: dict[str, Any]) -> dict[str, Any]:
    """`data` as it is written now: approval records carry their own version.

    A paused state's provenance is written back as it was read (in its own version).
    """
    data = copy.deepcopy(data)
    for entry in data["approvals"]:
        entry["version"] = 1
    return data


@pytest.mark.parametrize(
    "name", ["run_result_v1.json", "run_result_script_v1.json", "run_result_output_v1.json"]
)
def test_a_result_written_by_this_release_reads_back_whole(name: str) -> None:
    data = saved(name)
    result = RunResult.from_dict(data)
    assert result.to_dict() == with_versions(data)
    assert RunResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_a_script_s_replayed_calls_are_read_back_as_the_run_s_calls() -> None:
    result = RunResult.from_dict(saved("run_result_script_v1.json"))
    (replayed,) = result.scripts[1].replayed
    assert replayed is result.calls[1] and replayed.replayed
    assert replayed.arguments == {"item": "x"}


def test_a_result_in_an_unknown_version_is_refused_by_name() -> None:
    with pytest.raises(UsageError) as refused:
        RunResult.from_dict({**saved("run_result_v1.json"), "version": 99})
    assert "version 99" in str(refused.value) and "reads versions 0, 1" in str(refused.value)


@pytest.mark.parametrize(
    ("part", "index", "change", "named"),
    [
        ("scripts", 0, {"round": "soon"}, "ScriptRecord"),
        ("scripts", 0, {"status": None}, "ScriptRecord"),
        ("untrusted_in_answer", None, {"argument": "answer"}, "Suspicious"),
    ],
)
def test_a_result_with_a_part_that_is_not_one_gets_one_error_naming_the_part(
    part: str, index: int | None, change: dict[str, Any], named: str
) -> None:
    data = saved("run_result_script_v1.json")
    if index is None:
        data[part] = [change]
    else:
        data[part][index] = {**data[part][index], **change}
    with pytest.raises(UsageError) as refused:
        RunResult.from_dict(data)
    assert named in str(refused.value) and next(iter(change)) in str(refused.value)


@pytest.mark.parametrize(
    "change",
    [{"rounds": [{"input_tokens": "many"}]}, {"asides": "none"}],
)
def test_usage_that_is_not_usage_gets_one_error(change: dict[str, Any]) -> None:
    data = saved("run_result_v1.json")
    data["usage"] = {**data["usage"], **change}
    with pytest.raises(UsageError) as refused:
        RunResult.from_dict(data)
    assert "Usage" in str(refused.value)


def test_usage_reads_back_what_it_wrote() -> None:
    usage = Usage(120, 30, "provider")
    assert usage.to_dict() == {"input_tokens": 120, "output_tokens": 30, "source": "provider"}
    assert Usage.from_dict(json.loads(json.dumps(usage.to_dict()))) == usage


@pytest.mark.parametrize("part", ["scripts", "pending", "approvals", "calls"])
def test_a_part_that_is_not_a_mapping_gets_one_error(part: str) -> None:
    data = saved("run_result_v1.json")
    data[part] = ["not a mapping"]
    with pytest.raises(UsageError, match="cannot be read"):
        RunResult.from_dict(data)


@pytest.mark.parametrize(
    "value",
    [
        {"b": 1, "a": [1.5, "é", None, True, {"z": 1, "y": [2]}]},
        {"nan": float("nan"), "inf": float("-inf"), "big": 10**40, "small": 1e-300},
        {"where": Path("/tmp/x"), "what": {1, 2}},  # written as their str
        {3: "int key", 2.5: "float key"},
        ["plain", ("tuple",)],
        "text \u2028 with \n escapes",
        7,
    ],
)
def test_call_texts_are_what_json_dumps_writes(value: Any) -> None:
    from tooluse._records import canonical_arguments, render_result

    if isinstance(value, dict):
        expected = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
        assert canonical_arguments(value) == expected
    shown = (
        value
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    )
    assert render_result(value) == shown


def test_a_circular_value_is_refused_as_json_refuses_it() -> None:
    from tooluse._records import canonical_arguments, render_result

    loop: dict[str, Any] = {}
    loop["self"] = loop
    for writer in (canonical_arguments, render_result):
        with pytest.raises(ValueError, match="Circular reference"):
            writer(loop)
