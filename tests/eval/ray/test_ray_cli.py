"""``tooluse bench … --executor ray`` as a real process: its own Ray, a cluster, bad addresses."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]
TOOLUSE = Path(sys.executable).parent / "tooluse"


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLUSE), "bench", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT / "src"),
            "COLUMNS": "120",
            "NO_COLOR": "1",
        },
    )


def _rows(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


SWEEP = ("--categories", "simple_python,parallel", "--limit", "3", "--conventions", "json,text")


def test_without_an_address_the_sweep_starts_its_own_ray_and_stops_it(tmp_path: Path) -> None:
    proc = bench("bfcl", "--out", str(tmp_path), *SWEEP, "--executor", "ray", "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    rows = _rows(tmp_path)
    assert len(rows) == 12 and all(r["correct"] for r in rows)
    assert "json: 6/6 passed" in proc.stderr and "text: 6/6 passed" in proc.stderr
    assert (tmp_path / "summary.md").is_file()


def test_a_running_cluster_is_used_at_its_address(cluster: ModuleType, tmp_path: Path) -> None:
    address = cluster.get_runtime_context().gcs_address
    half = ("--categories", "simple_python", "--limit", "3", "--conventions", "json,text")
    first = bench("bfcl", "--out", str(tmp_path), *half)
    assert first.returncode == 0, first.stderr
    proc = bench("bfcl", "--out", str(tmp_path), *SWEEP, "--executor", "ray",
                 "--ray-address", address)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "6 of 12 already in" in proc.stderr
    rows = _rows(tmp_path)
    assert len(rows) == 12 and len({(r["entry_id"], r["convention"]) for r in rows}) == 12
    assert all(r["correct"] for r in rows)


def test_an_unreachable_address_is_one_error_line(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    proc = bench("chain", "--out", str(tmp_path), "--executor", "ray",
                 "--ray-address", f"127.0.0.1:{port}")  # fmt: skip
    assert proc.returncode != 0
    assert f"error: cannot reach a Ray cluster at 127.0.0.1:{port}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_ray_options_without_the_ray_executor_are_refused(tmp_path: Path) -> None:
    proc = bench("chain", "--out", str(tmp_path), "--rate-limit", "60")
    assert proc.returncode != 0
    assert "need --executor ray" in proc.stderr
    assert not (tmp_path / "results.jsonl").exists()
