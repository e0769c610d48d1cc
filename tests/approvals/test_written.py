"""Approvals written down: requests, records, provenance and the store, as this release
and the one before it wrote them, and refused by name in a version this release does not read."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tooluse import AlreadyResumedError, ApprovalStore, UsageError
from tooluse._records import call_key
from tooluse.policy._approval import ApprovalRecord, ApprovalRequest
from tooluse.policy._provenance import Provenance

from ._bank import ATTACKER, LANDLORD

DATA = Path(__file__).resolve().parents[1] / "data"


def saved(name: str) -> Any:
    """What the release before the versioned forms wrote (see tests/data)."""
    return json.loads((DATA / name).read_text())


def test_a_request_written_by_the_earlier_release_reads_back_bound_to_its_call() -> None:
    data = saved("approval_request_v0.json")
    request = ApprovalRequest.from_dict(data)
    assert (request.call_id, request.tool, request.caller) == ("c3", "send_money", "model")
    assert request.arguments == {"recipient": ATTACKER, "amount": 900}
    # The decision stays bound to the same call: the stored key is the call's key.
    assert request.key == data["key"] == call_key("send_money", request.arguments)
    # A request is written inside a result or a trace event, whose version covers it.
    assert request.to_dict() == data
    assert ApprovalRequest.from_dict(json.loads(json.dumps(request.to_dict()))) == request


def test_records_written_by_the_earlier_release_read_back_whole() -> None:
    data = saved("approval_record_v0.json")
    records = [ApprovalRecord.from_dict(d) for d in data]
    assert [(r.decision, r.by) for r in records] == [("defer", "policy"), ("allow", "decision")]
    assert records[1].edited == {"recipient": LANDLORD, "amount": 850}
    assert [r.to_dict() for r in records] == [{"version": 1, **d} for d in data]


def test_provenance_written_by_the_earlier_release_still_flags_the_injected_value() -> None:
    data = saved("provenance_v0.json")
    provenance = Provenance.from_dict(data)
    (found,) = provenance.suspicious({"recipient": ATTACKER, "amount": 900})
    assert (found.argument, found.sources) == ("recipient", ("read_inbox",))
    assert provenance.suspicious({"recipient": LANDLORD}) == []
    assert provenance.to_dict() == {"version": 1, **data}


@pytest.mark.parametrize(
    ("cls", "name"),
    [(ApprovalRecord, "approval_record_v0.json"), (Provenance, "provenance_v0.json")],
)
def test_each_form_carries_its_version_and_reads_back(cls: Any, name: str) -> None:
    data = saved(name)
    value = cls.from_dict(data[0] if isinstance(data, list) else data)
    written = json.loads(json.dumps(value.to_dict()))
    assert written["version"] == 1
    assert cls.from_dict(written).to_dict() == written


@pytest.mark.parametrize(
    ("cls", "name"),
    [(ApprovalRecord, "approval_record_v0.json"), (Provenance, "provenance_v0.json")],
)
def test_a_form_in_an_unknown_version_is_refused_by_name(cls: Any, name: str) -> None:
    data = saved(name)
    data = {**(data[0] if isinstance(data, list) else data), "version": 99}
    with pytest.raises(UsageError) as refused:
        cls.from_dict(data)
    assert "version 99" in str(refused.value) and "reads versions 0, 1" in str(refused.value)
    assert cls.__name__ in str(refused.value)


@pytest.mark.parametrize(
    ("cls", "name", "change"),
    [
        (ApprovalRecord, "approval_record_v0.json", {"decision": "maybe"}),
        (ApprovalRecord, "approval_record_v0.json", {"by": "nobody"}),
        (ApprovalRequest, "approval_request_v0.json", {"caller": "someone"}),
        (ApprovalRequest, "approval_request_v0.json", {"arguments": ["not", "a", "dict"]}),
        (Provenance, "provenance_v0.json", {"untrusted": [["read_inbox"]]}),
    ],
)
def test_a_form_that_is_not_one_gets_one_error_naming_it(
    cls: Any, name: str, change: dict[str, Any]
) -> None:
    data = saved(name)
    data = {**(data[0] if isinstance(data, list) else data), **change}
    with pytest.raises(UsageError) as refused:
        cls.from_dict(data)
    assert cls.__name__ in str(refused.value)
    assert next(iter(change)) in str(refused.value)


def store_from(tmp_path: Path, dump: str) -> Path:
    path = tmp_path / "approvals.db"
    with sqlite3.connect(path) as db:
        db.executescript(dump)
    db.close()
    return path


def test_a_store_written_by_the_earlier_release_still_refuses_its_resumed_pauses(
    tmp_path: Path,
) -> None:
    path = store_from(tmp_path, (DATA / "approval_store_v0.sql").read_text())
    with ApprovalStore(path) as store:
        earlier = store.resumed("saved-0f3a")
        assert earlier is not None
        assert (earlier.task, earlier.decisions) == ("pay the rent", ("c3",))
        with pytest.raises(AlreadyResumedError):
            store.claim("saved-0f3a", task="pay the rent", decisions=["c3"])
        store.claim("another", task="pay the rent", decisions=["c1"])
    with ApprovalStore(path) as store:
        assert store.resumed("another") is not None


def test_a_store_carries_its_version(tmp_path: Path) -> None:
    ApprovalStore(tmp_path / "new.db").close()
    with sqlite3.connect(tmp_path / "new.db") as db:
        assert db.execute("PRAGMA user_version").fetchone() == (1,)
    db.close()
    # A store of the earlier release is marked as this one's once opened: same table.
    path = store_from(tmp_path, (DATA / "approval_store_v0.sql").read_text())
    ApprovalStore(path).close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (1,)
    db.close()


def test_a_store_in_an_unknown_version_is_refused_by_name_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    dump = (DATA / "approval_store_v0.sql").read_text()
    path = store_from(tmp_path, dump + "PRAGMA user_version = 99;\n")
    with pytest.raises(UsageError) as refused:
        ApprovalStore(path)
    assert "version 99" in str(refused.value) and str(path) in str(refused.value)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (99,)
        assert db.execute("SELECT pause FROM tooluse_resumed").fetchall() == [("saved-0f3a",)]
    db.close()


def test_a_request_in_doubt_says_so_in_its_written_form_and_reads_back() -> None:
    request = ApprovalRequest("c9", "send_money", {"amount": 1}, "model", "in doubt", in_doubt=True)
    data = request.to_dict()
    assert data["in_doubt"] is True
    assert ApprovalRequest.from_dict(json.loads(json.dumps(data))) == request
    plain = ApprovalRequest("c9", "send_money", {"amount": 1}, "model", "asked")
    assert "in_doubt" not in plain.to_dict()  # written as before in_doubt existed
