"""``tooluse eval FILE --executor ray``: Ray's workers rebuild the tasks from the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TOOLUSE = Path(sys.executable).parent / "tooluse"


def test_a_task_file_runs_on_ray_with_its_rows_and_traces(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            str(TOOLUSE), "eval", "examples/finance/evals.yaml",
            "--tools", "examples.finance.tools:toolbox", "--out", str(tmp_path),
            "--executor", "ray", "--workers", "2", "--traces",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200", "NO_COLOR": "1"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 20 and all(r["correct"] for r in rows)
    assert {r["suite"] for r in rows} == {"finance"}
    assert "json: 10/10 passed" in proc.stderr and "code: 10/10 passed" in proc.stderr
    for row in rows:
        trace = tmp_path / "traces" / row["convention"] / f"{row['entry_id']}.jsonl"
        events = [json.loads(line) for line in trace.read_text().splitlines()]
        assert sum(e["event"] == "call" for e in events) == row["calls"]
