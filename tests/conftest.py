"""Shared test setup: the repository root on sys.path so `examples` imports, the tiers'
markers, and fixtures."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The slow parts a test needs, by the folder or file it lives in (a test elsewhere
# that needs one carries the marker itself). `make test-fast` deselects them all;
# the markers are described in pyproject.toml.
MARKS_BY_PATH = {
    # Decoding with llama.cpp: the embedded model in process, or behind its server.
    "models/test_local.py": "model",
    "models/test_local_qwen.py": "model",
    "models/test_local_stream.py": "model",
    "models/test_llama_server.py": "model",
    # The official MCP conformance suite, which runs on node.
    "mcp/test_client_conformance.py": "npm",
    "mcp/test_conformance_server.py": "npm",
    "observe/test_browser.py": "browser",
    "eval/ray": "ray",
}

# Tests that do heavy work a quick run can leave to `make test` (which runs them all, one
# at a time): each one builds, benchmarks or sweeps rather than checking one behaviour
# of the runtime, and a faster test of that behaviour stays in the fast tier. CONTRIBUTING.md
# lists why each is here; a file's path alone marks every test in it.
SLOW = {
    # mkdocs builds the whole site with its API reference.
    "test_docs_site.py::test_the_site_builds_strict_and_documents_every_public_name",
    # Runs `tooluse … --help` in a fresh process for each of the CLI's 27 commands.
    "test_docs.py::test_cli_docs_are_current",
    # Each bench/ script run end to end in its own process.
    "test_bench_scripts.py",
    # Whole bench runs: AgentDojo's banking suite, the tool-search bench, the cost model
    # with its plots.
    "eval/agentdojo/test_bench.py::test_oracle_and_obedient_on_banking",
    "toolsearch/test_bench.py::test_toolsearch_writes_query_and_token_rows_and_a_summary",
    "toolsearch/test_bench.py::test_the_oracle_searches_first_and_passes_in_a_padded_toolbox",
    "eval/test_bench_cli.py::test_costmodel_writes_results_summary_and_plots",
    # Makes a fresh virtualenv and installs into it with pip.
    "test_setup.py::test_bfcl_eval_replaces_a_pip_install_and_leaves_pip_nothing_to_check",
    # Ten thousand tool calls from one sandboxed script, under a 2 s CPU limit that
    # other work on the same cores (another test worker) can push it past.
    "sandbox/test_sandbox_tools.py::test_ten_thousand_calls_without_a_cap",
    # The kill matrix: each test starts two or three processes that launch DBOS on SQLite,
    # and kills one with SIGKILL (durable/test_durable.py stays fast).
    "durable/test_kill.py",
    # Every multimodal task in json, code and plan: about 150 OCR readings with RapidOCR
    # (a sign task in every convention stays in the fast tier).
    "eval/test_multimodal.py::test_bench_multimodal_oracle_passes_every_task_in_json_code_and_plan",
    # Every single-turn BFCL entry (over 3,600) under the oracle, in json and in text; the
    # fast tier runs a fixed sample of them (every eighth entry and every listed one).
    "eval/bfcl/test_oracle.py::test_oracle_passes_every_satisfiable_single_turn_entry",
    # BFCL's own AST checker and ours on every single-turn AST entry and every perturbation
    # of it (one fixture, computed again by each worker that runs one of these); the rules
    # one at a time stay in the fast tier (eval/bfcl/test_ast_check.py).
    "eval/bfcl/test_ast_agreement.py::test_every_entry_of_every_ast_category_is_compared",
    "eval/bfcl/test_ast_agreement.py::test_verdicts_agree_except_listed_disagreements",
    "eval/bfcl/test_ast_agreement.py::test_error_types_agree_when_both_fail",
    "eval/bfcl/test_ast_agreement.py::test_ground_truth_passes_both_unless_unsatisfiable",
    "eval/bfcl/test_ast_agreement.py::"
    "test_greedy_disagreements_have_a_matching_under_bfcls_own_pair_verdicts",
    # Over 1,500 docstrings of griffe, the stdlib and this repository read by both parsers;
    # the cases one at a time stay in the fast tier.
    "tools/test_docstrings.py::test_google_docstrings_read_here_come_out_as_griffe_reads_them",
    # Writes a 100 MB trace and has the viewer serve it.
    "observe/test_view_scale.py::test_a_huge_live_trace_costs_a_page_of_memory_and_an_append_costs_its_bytes",
}

if TYPE_CHECKING:
    from tooluse import Agent


def runs_the_local_model(code: str, lang: str) -> bool:
    """Whether a README or docs/ snippet (run by tests/test_docs.py) decodes with a local model."""
    if lang == "python":
        return "LocalModel(" in code or 'resolve_model("local' in code
    argv = shlex.split(code, comments=True)
    if argv[:1] != ["tooluse"]:
        return False
    if "--model" in argv[:-1]:
        return argv[argv.index("--model") + 1].startswith("local")
    return argv[1:2] == ["run"]  # `tooluse run` runs the local model by default


def runs_a_bench(code: str, lang: str) -> bool:
    """Whether a README or docs/ command is a `tooluse bench` run (seconds to minutes each)."""
    if lang == "python":
        return False
    return shlex.split(code, comments=True)[:2] == ["tooluse", "bench"]


def _deselected_whatever_else(markexpr: str, markers: set[str]) -> bool:
    """Whether `-m markexpr` deselects every test carrying `markers`, whatever other
    markers it has (tried with all of them off, then all on). The expression is pytest's
    (names joined by and, or, not and parentheses); one that is not Python is not judged."""

    class Names(dict[str, bool]):
        def __init__(self, others: bool) -> None:
            super().__init__()
            self.others = others

        def __missing__(self, name: str) -> bool:
            return name in markers or self.others

    try:
        return not any(
            eval(markexpr, {"__builtins__": {}}, Names(others)) for others in (False, True)
        )
    except Exception:
        return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave uncollected a folder or file whose marker `-m` deselects anyway: every test
    worker imports each module it collects, and these import Ray, llama.cpp and the like."""
    markexpr = config.getoption("markexpr", "")
    if not markexpr or not collection_path.is_relative_to(TESTS):
        return None
    where = collection_path.relative_to(TESTS).as_posix()
    markers = {marker for path, marker in MARKS_BY_PATH.items() if where == path}
    if where in SLOW:
        markers.add("slow")
    if markers and _deselected_whatever_else(markexpr, markers):
        return True
    return None


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        where = item.path.relative_to(TESTS).as_posix()
        for path, marker in MARKS_BY_PATH.items():
            if where == path or where.startswith(f"{path}/"):
                item.add_marker(marker)
        if where in SLOW or f"{where}::{getattr(item, 'originalname', item.name)}" in SLOW:
            item.add_marker("slow")
        callspec = getattr(item, "callspec", None)
        if where == "test_docs.py" and callspec is not None:
            snippets = [p for p in callspec.params.values() if hasattr(p, "code")]
            if any(runs_the_local_model(s.code, s.lang) for s in snippets):
                item.add_marker("model")
            if any(runs_a_bench(s.code, s.lang) for s in snippets):
                item.add_marker("slow")


@pytest.fixture
def agents() -> Iterator[list[Agent]]:
    """Agents a test made, closed when it ends (their sandboxes stopped)."""
    made: list[Agent] = []
    yield made
    for agent in made:
        agent.close()
