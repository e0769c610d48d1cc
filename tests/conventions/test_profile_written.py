"""A stored cost profile: read back as earlier releases wrote it, refused by name in a
version this release does not read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tooluse import UsageError
from tooluse.conventions._auto import Line, Profile, load_profile

DATA = Path(__file__).resolve().parents[1] / "data"


def saved() -> dict[str, Any]:
    """A profile as the release before the versioned form stored it (see tests/data)."""
    data: dict[str, Any] = json.loads((DATA / "profile_v0.json").read_text())
    return data


def test_a_profile_stored_by_the_earlier_release_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLUSE_PROFILES", str(tmp_path))
    (tmp_path / "my-model.json").write_text((DATA / "profile_v0.json").read_text())
    profile = load_profile("my-model")
    assert profile is not None and profile.model == "my-model"
    assert profile.lines["listed"]["json"] == Line(171.1, 27.15)
    assert profile.accuracy == {"json": 0.9, "code": 0.8, "plan": 0.85}
    assert profile.to_dict() == {"version": 1, **saved()}


def test_a_profile_carries_its_version_and_reads_back() -> None:
    written = json.loads(json.dumps(Profile.from_dict(saved()).to_dict()))
    assert written["version"] == 1
    assert Profile.from_dict(written) == Profile.from_dict(saved())


def test_a_stored_profile_in_an_unknown_version_is_refused_naming_it_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(UsageError) as refused:
        Profile.from_dict({**saved(), "version": 99})
    assert "version 99" in str(refused.value) and "reads versions 0, 1" in str(refused.value)
    monkeypatch.setenv("TOOLUSE_PROFILES", str(tmp_path))
    (tmp_path / "my-model.json").write_text(json.dumps({**saved(), "version": 99}))
    with pytest.raises(UsageError) as refused:
        load_profile("my-model")
    assert "version 99" in str(refused.value) and "my-model.json" in str(refused.value)
