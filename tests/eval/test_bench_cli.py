"""``tooluse bench`` end to end, as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLUSE = Path(sys.executable).parent / "tooluse"
PNG = b"\x89PNG\r\n\x1a\n"


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLUSE), "bench", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={**os.environ, "COLUMNS": "120", "NO_COLOR": "1"},
    )


def _rows(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_costmodel_writes_results_summary_and_plots(tmp_path: Path) -> None:
    proc = bench("costmodel", "--model", "oracle", "--out", str(tmp_path), "--widths", "2,6,12")
    assert proc.returncode == 0, proc.stderr
    rows = _rows(tmp_path)
    assert len(rows) == 2 * 3 * 2
    assert all(row["correct"] and row["token_source"] == "o200k" for row in rows)
    summary = (tmp_path / "summary.md").read_text()
    assert "counted offline with the o200k_base tokenizer (12 rows)" in summary
    assert (
        "| Patel et al. 2026 | input tokens | 30, 48 | 996 | 85.4 | 3,122 | 8.6 | 27.7 |" in summary
    )
    assert "| ours: fanout/discovered | input tokens |" in summary
    for name in ("tokens_vs_n.png", "accuracy_vs_width.png", "accuracy_by_category.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG), name
        assert f"]({name})" in summary
    # Both fan-out variants beside Patel et al.'s figures: S, c, P + ℓ₀, γ and N*.
    table = proc.stderr.splitlines()
    header = next(i for i, line in enumerate(table) if line.startswith("source "))
    assert table[header].split() == ["source", "S", "c", "(json)", "P+ℓ₀", "γ", "(code)", "N*"]
    names = [line.split()[0] for line in table[header + 1 : header + 4]]
    assert names == ["fanout/discovered", "fanout/listed", "Patel"]
    assert table[header + 3].split() == [
        "Patel",
        "et",
        "al.",
        "2026",
        "996",
        "85.4",
        "3,122",
        "8.6",
        "27.7",
    ]
    listed = table[header + 2].split()
    assert len(listed) == 8 and listed[6] == "±"

    again = bench("costmodel", "--out", str(tmp_path), "--widths", "2,6,12")
    assert again.returncode == 0, again.stderr
    assert "12 of 12 already in" in again.stderr
    assert len(_rows(tmp_path)) == 12


def test_bfcl_with_worker_processes(tmp_path: Path) -> None:
    proc = bench(
        "bfcl",
        "--out", str(tmp_path),
        "--categories", "simple_python,irrelevance,multi_turn_base",
        "--limit", "2",
        "--workers", "2",
        "--conventions", "json,code,text",
        "--traces",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = _rows(tmp_path)
    # Each worker wrote its entries' traces: one file per entry and convention, every
    # turn of a multi-turn entry a run of its own in it.
    for row in rows:
        trace = tmp_path / "traces" / row["convention"] / f"{row['entry_id']}.jsonl"
        events = [json.loads(line) for line in trace.read_text().splitlines()]
        ends = [e for e in events if e["event"] == "run_end"]
        assert len(ends) == row["turns"] and ends[-1]["status"] == row["status"]
        assert sum(e["event"] == "call" for e in events) == row["calls"]
    assert {(r["category"], r["convention"]) for r in rows} == {
        (c, v)
        for c in ("simple_python", "irrelevance", "multi_turn_base")
        for v in ("json", "code", "text")
    }
    assert len(rows) == 18 and all(r["correct"] for r in rows)
    summary = (tmp_path / "summary.md").read_text()
    assert "| multi_turn_base | code | 2 | 100.0% | 100.0% (" in summary
    assert "| multi_turn_base | text | 2 | 100.0% | 100.0% (" in summary
    # Irrelevance entries make no call: there is nothing to be valid.
    assert "| irrelevance | text | 2 | 100.0% | – |" in summary
    assert "text: 6/6 passed, schema-valid 100.0% of" in proc.stderr
    assert (tmp_path / "accuracy_by_category.png").read_bytes().startswith(PNG)


def test_bad_options_are_one_line_errors(tmp_path: Path) -> None:
    proc = bench("fanout", "--out", str(tmp_path), "--categories", "sideways")
    assert proc.returncode == 2
    assert "unknown fanout categories: sideways" in proc.stderr
    proc = bench("chain", "--out", str(tmp_path), "--conventions", "yaml")
    assert proc.returncode == 2 and "unknown conventions yaml" in proc.stderr
    proc = bench("costmodel", "--out", str(tmp_path), "--conventions", "json,text")
    assert proc.returncode == 2
    assert "the cost model fits JSON against code" in proc.stderr


def test_a_call_policy_beside_the_model_still_gets_plots_and_its_summary_line(
    tmp_path: Path,
) -> None:
    proc = bench(
        "bfcl", "--out", str(tmp_path), "--categories", "simple_python", "--limit", "2",
        "--conventions", "json", "--tool-choice", "required",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert {r["model"] for r in _rows(tmp_path)} == {"oracle tool_choice=required"}
    assert "json: 2/2 passed, schema-valid 100.0% of 2 emitted" in proc.stderr
    assert (tmp_path / "accuracy_by_category.png").read_bytes().startswith(PNG)
    assert "](accuracy_by_category.png)" in (tmp_path / "summary.md").read_text()


def test_the_summary_gives_the_scorer_s_reason_for_a_failure(tmp_path: Path) -> None:
    wrong = {"name": "calculate_triangle_area", "arguments": '{"base": 12, "height": 5}'}
    script = tmp_path / "wrong.jsonl"
    script.write_text(
        json.dumps({"tool_calls": [{"id": "c1", "type": "function", "function": wrong}]}) + "\n"
    )
    out = tmp_path / "out"
    proc = bench(
        "bfcl", "--out", str(out), "--model", f"scripted:{script}", "--categories",
        "simple_python", "--limit", "1", "--conventions", "json", "--max-rounds", "1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (row,) = _rows(out)
    assert row["status"] == "max_rounds" and not row["correct"]
    (line,) = [x for x in (out / "summary.md").read_text().splitlines() if "simple_python_0" in x]
    assert "Invalid value for parameter 'base'" in line
    assert "no final answer after 1 rounds" in line


def test_an_unknown_model_is_one_error_line_before_anything_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = bench("fanout", "--out", str(out), "--model", "nosuch", "--widths", "2")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: unknown model spec 'nosuch'")
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_an_unwritable_out_is_one_error_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    proc = bench("chain", "--out", str(blocker / "out"), "--widths", "2")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: cannot write {blocker / 'out' / 'results.jsonl'}")
    assert "Traceback" not in proc.stderr
    assert blocker.read_text() == "not a directory"

    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "traces").write_text("a file where the traces would go")
    proc = bench("chain", "--out", str(taken), "--widths", "2", "--traces")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: cannot write traces to {taken / 'traces'}")
    assert "Traceback" not in proc.stderr
