"""The benchmarks start as the README documents them: ``python bench/NAME.py`` from the checkout.

Speed is measured by running them, never here; these runs are small and check
only that each script starts and, where it is cheap, prints its JSON line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, f"bench/{script}", *args],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    "script",
    [
        "decoding.py",
        "context.py",
        "loop_overhead.py",
        "sandbox.py",
        "costmodel.py",
        "mcp_client.py",
        "mcp_server.py",
        "mcp_bench.py",
        "local_latency.py",
        "lint_counts.py",
        "ray_sweep.py",
        "toolsearch.py",
        "durable.py",
        "by_reference.py",
    ],
)
def test_every_bench_script_imports_what_it_needs(script: str) -> None:
    # --help parses after the module's imports, so a missing module fails here.
    proc = bench(script, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:")


@pytest.mark.parametrize(
    ("script", "args", "name"),
    [
        ("prompt_size.py", [], "prompt_size"),
        ("loop_overhead.py", ["--turns", "5", "--repeat", "1"], "loop_overhead"),
        (
            "context.py",
            ["--items", "500", "--queries", "5", "--repeat", "1", "--single-puts", "5"],
            "context",
        ),
    ],
)
def test_a_small_bench_run_ends_with_its_json_line(script: str, args: list[str], name: str) -> None:
    proc = bench(script, *args)
    assert proc.returncode == 0, proc.stderr
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert last["bench"] == name
