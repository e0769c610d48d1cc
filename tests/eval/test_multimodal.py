"""`tooluse bench multimodal`: photos drawn here, read through OCR, checked exactly.

The OCR is RapidOCR itself, run on the photos (about a second a photo): the tests that
read few photos stay in the fast tier, the whole bench in every convention is slow.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tooluse import CallRecord, Image, RunResult, RunUsage
from tooluse.eval import Bench, BenchConfig, SuiteOptions, read_rows
from tooluse.eval._dataset import Dataset
from tooluse.eval._multimodal import (
    MULTIMODAL_TASKS,
    NEEDS,
    PHOTOS,
    draw,
    multimodal_tasks,
    ocr_accuracy,
    ocr_table,
    toolbox,
)
from tooluse.eval._task import Call

pytest.importorskip("rapidocr_onnxruntime")

ROOT = Path(__file__).resolve().parents[2]
TOOLUSE = Path(sys.executable).parent / "tooluse"


def tooluse(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLUSE), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200", "NO_COLOR": "1"},
    )


def _digests() -> dict[str, str]:
    return {name: hashlib.sha256(draw(name)).hexdigest() for name in PHOTOS}


def test_the_photos_are_the_same_bytes_each_time_and_in_another_process() -> None:
    first = _digests()
    draw.cache_clear()
    assert _digests() == first
    code = (
        "import hashlib, json\n"
        "from tooluse.eval._multimodal import PHOTOS, draw\n"
        "print(json.dumps({n: hashlib.sha256(draw(n)).hexdigest() for n in PHOTOS}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONHASHSEED": "random"},
    )
    assert json.loads(proc.stdout) == first
    # Each is a PNG of its own, turned as its photo says.
    assert len(set(first.values())) == len(PHOTOS)
    for name, photo in PHOTOS.items():
        width, height = Image(draw(name), "image/png").size
        assert (width > height) == (photo.turned in (0, 180)), name


def test_every_task_says_what_ocr_must_read_and_every_photo_is_asked_about() -> None:
    dataset = Dataset.from_file(MULTIMODAL_TASKS)
    ids = [case.id for case in dataset.cases]
    assert 12 <= len(ids) <= 20
    assert set(ids) == set(NEEDS)
    assert {name for needs in NEEDS.values() for name, _, _ in needs} == set(PHOTOS)
    assert set(dataset.categories()) == {"receipts", "price tables", "signs"}
    # Each task reads a photo and needs a lookup or arithmetic besides, but the signs'
    # opening time, which needs the photo turned.
    for case in dataset.cases:
        tools = [call.tool for call in case.calls]
        assert tools[0] == "read_photo", case.id
        assert len(tools) >= 2 or case.id == "sign-opens", case.id
        # The strings OCR must read are printed on the photo the task reads.
        for name, _, strings in NEEDS[case.id]:
            printed = " ".join(PHOTOS[name].lines).upper().split()
            for string in strings:
                assert " ".join(string.upper().split()) in " ".join(printed), (case.id, string)
    assert {t.name for t in toolbox} >= {"photo", "read_photo", "ocr", "rotate", "calculate"}


def _run(*calls: Call) -> RunResult:
    records = [CallRecord(f"c{i}", c.tool, c.arguments) for i, c in enumerate(calls)]
    return RunResult("", "completed", records, [], [], [], RunUsage(), 1)


def test_reading_a_photo_with_photo_and_ocr_counts_as_read_photo() -> None:
    (task,) = [t for t in multimodal_tasks() if t.id == "sign-opens"]
    fetched = Call("photo", {"name": "sign-bakery"})
    turned, read = Call("rotate", {"degrees": 180}), Call("ocr", {})
    assert task.made_calls([_run(fetched, turned, read)]) == [
        Call("read_photo", {"name": "sign-bakery"})
    ]
    # Fetching the photo without reading it is not reading it.
    assert task.made_calls([_run(fetched, turned)]) == [fetched, turned]


def test_the_oracle_passes_a_sign_task_in_each_convention_each_way_of_reading(
    tmp_path: Path,
) -> None:
    config = BenchConfig(
        suite="multimodal",
        out=tmp_path,
        conventions=("json", "code", "plan", "text"),
        options=SuiteOptions(categories=("signs",), limit=1),
        traces=True,
    )
    bench = Bench(config)
    bench.run()
    rows = read_rows(bench.results)
    assert {(r.entry_id, r.convention) for r in rows} == {
        ("sign-opens", c) for c in ("json", "code", "plan", "text")
    }
    assert all(r.correct for r in rows), [(r.convention, r.detail) for r in rows]
    # The vision calls of a script or a plan are its reading of the photo, not extra calls.
    assert {(r.precision, r.recall) for r in rows} == {(1.0, 1.0)}
    called = {c: _called(tmp_path / "traces" / c / "sign-opens.jsonl") for c in ("json", "code")}
    called["plan"] = _called(tmp_path / "traces" / "plan" / "sign-opens.jsonl")
    # JSON reads by name; a script and a plan pass the image from tool to tool.
    assert called["json"] == ["read_photo"]
    assert called["code"] == called["plan"] == ["photo", "rotate", "ocr"]


def _called(trace: Path) -> list[str]:
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    return [e["name"] for e in events if e["event"] == "call"]


def test_ocr_accuracy_is_measured_apart_from_the_model(tmp_path: Path) -> None:
    checks = ocr_accuracy(["sign-opens", "receipt-upside-down"])
    assert [c.ok for c in checks] == [True, True]
    # As taken, the upside-down receipt's rows come apart: the total is not one line.
    assert checks[1].missing_as_taken == ("TOTAL CHF 50.50",)
    table = ocr_table(checks)
    assert table[0].startswith("OCR (RapidOCR) read every string a task needs in 2/2 tasks")
    assert "1/2 with the photos as taken" in table[0]
    assert "| receipt-upside-down | receipt-books | 1 | all read | missed `TOTAL CHF 50.50` |" in (
        table
    )

    # A model that reads the sign right and answers wrong fails its row, while the OCR
    # report says the photo was read: the error is the model's.
    read = {"id": "c1", "type": "function", "function": {
        "name": "read_photo", "arguments": '{"name": "sign-bakery", "degrees": 180}'}}  # fmt: skip
    replies = tmp_path / "replies.jsonl"
    replies.write_text(
        json.dumps({"tool_calls": [read]}) + "\n" + json.dumps({"content": "It opens at 18:00."})
    )
    out = tmp_path / "out"
    proc = tooluse(
        "bench", "multimodal", "--out", str(out), "--model", f"scripted:{replies}",
        "--conventions", "json", "--categories", "signs", "--limit", "1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (row,) = read_rows(out / "results.jsonl")
    assert row.entry_id == "sign-opens" and not row.correct and row.recall == 1.0
    assert "json: 0/1 passed" in proc.stderr
    assert "read every string a task needs in 1/1 tasks" in proc.stderr
    assert "| sign-opens | sign-bakery | 1 | all read | all read |" in (out / "ocr.md").read_text()


def test_bench_multimodal_oracle_passes_every_task_in_json_code_and_plan(tmp_path: Path) -> None:
    proc = tooluse("bench", "multimodal", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    rows = read_rows(tmp_path / "results.jsonl")
    assert len(rows) == 3 * len(NEEDS)
    assert not [(r.entry_id, r.convention, r.detail) for r in rows if not r.correct]
    assert {r.suite for r in rows} == {"multimodal"}
    assert {(r.precision, r.recall) for r in rows} == {(1.0, 1.0)}
    for convention in ("json", "code", "plan"):
        assert f"{convention}: {len(NEEDS)}/{len(NEEDS)} passed" in proc.stderr
    assert f"in {len(NEEDS)}/{len(NEEDS)} tasks with the photos upright" in proc.stderr
    assert (tmp_path / "ocr.md").read_text().count("| all read |") >= len(NEEDS)
