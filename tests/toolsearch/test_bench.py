"""``tooluse bench toolsearch`` and padded BFCL runs, end to end as real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLUSE = Path(sys.executable).parent / "tooluse"


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLUSE), "bench", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "120", "NO_COLOR": "1"},
    )


def rows(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_toolsearch_writes_query_and_token_rows_and_a_summary(tmp_path: Path) -> None:
    proc = bench("toolsearch", "--out", str(tmp_path), "--tools", "300")
    assert proc.returncode == 0, proc.stderr
    written = rows(tmp_path)
    queries = [r for r in written if r["kind"] == "query"]
    tokens = [r for r in written if r["kind"] == "tokens"]
    assert queries and {r["toolbox_size"] for r in queries} == {300}
    assert set(queries[0]) == {"kind", "query_id", "target", "rank", "latency_ms", "toolbox_size"}
    assert all(r["rank"] is None or 1 <= int(str(r["rank"])) <= 10 for r in queries)
    # Most questions find their function (a failing search would rank nothing).
    assert sum(1 for r in queries if r["rank"] == 1) > len(queries) / 2
    sizes = [r["toolbox_size"] for r in tokens]
    assert sizes[:2] == [100, 1000] and int(str(sizes[2])) > 1000
    for r in tokens:
        assert int(str(r["with_search"])) < int(str(r["all_schemas"]))
    summary = (tmp_path / "summary.md").read_text()
    header = "| toolbox | queries | Recall@1 | Recall@3 | Recall@5 | MRR | p50 ms | p95 ms |"
    assert header in summary
    assert "| toolbox | all schemas | with search | share |" in summary
    final = json.loads(proc.stdout.strip().splitlines()[-1])
    assert final["sizes"][0]["toolbox_size"] == 300


def test_toolsearch_refuses_a_size_it_cannot_read(tmp_path: Path) -> None:
    proc = bench("toolsearch", "--out", str(tmp_path), "--tools", "many")
    assert proc.returncode == 2
    assert "error: --tools takes 'all' or sizes, comma-separated; got 'many'" in proc.stderr
    assert not (tmp_path / "results.jsonl").exists()


def test_the_oracle_searches_first_and_passes_in_a_padded_toolbox(tmp_path: Path) -> None:
    proc = bench(
        "bfcl",
        "--model",
        "oracle",
        "--conventions",
        "json,code,text",
        "--categories",
        "simple_python,parallel_multiple",
        "--limit",
        "2",
        "--tool-search",
        "always",
        "--toolbox-size",
        "80",
        "--out",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    written = rows(tmp_path)
    assert len(written) == 2 * 2 * 3
    for row in written:
        assert row["model"] == "oracle tool_search=always toolbox=80"
        assert row["correct"], row
        assert row["rejected"] == 0, row
        # The searches ran and were recorded, but not scored as BFCL calls.
        assert int(str(row["calls"])) > int(str(row["expected_calls"])), row
