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
        "tool_descriptions.py",
        "answer_check.py",
        "local_levers.py",
        "prefix_reuse.py",
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
        (
            "tool_descriptions.py",
            ["--model", "oracle", "--limit", "1", "--out", "{tmp}/descriptions"],
            "tool_descriptions",
        ),
    ],
)
def test_a_small_bench_run_ends_with_its_json_line(
    script: str, args: list[str], name: str, tmp_path: Path
) -> None:
    proc = bench(script, *(a.format(tmp=tmp_path) for a in args))
    assert proc.returncode == 0, proc.stderr
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert last["bench"] == name


def test_the_oracle_passes_every_way_of_describing_the_everyday_tools(tmp_path: Path) -> None:
    # The three ways differ only in what the model is shown: the oracle's calls and
    # answers pass whatever the descriptions say.
    proc = bench("tool_descriptions.py", "--model", "oracle", "--conventions", "json,code",
                 "--limit", "1", "--out", str(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    passed = json.loads(proc.stdout.strip().splitlines()[-1])["passed"]
    for convention in ("json", "code"):
        ways = [passed[convention][way] for way in ("shipped", "plain", "examples")]
        assert ways == [[9, 9]] * 3, (convention, ways)


def test_descriptions_lose_their_example_values_and_nothing_else() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from tool_descriptions import plain_toolbox, without_examples  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert without_examples("City name, e.g. 'Paris'") == "City name"
    assert without_examples("The arithmetic, e.g. '(120 + 35) * 0.17'") == "The arithmetic"
    assert without_examples("Unit of value: km, mi") == "Unit of value: km, mi"
    described = [
        p.get("description", "") for t in plain_toolbox for p in t.parameters["properties"].values()
    ]
    assert described and not any("e.g." in d for d in described)
    assert "City name" in described
