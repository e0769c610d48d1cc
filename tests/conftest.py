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


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        where = item.path.relative_to(TESTS).as_posix()
        for path, marker in MARKS_BY_PATH.items():
            if where == path or where.startswith(f"{path}/"):
                item.add_marker(marker)
        callspec = getattr(item, "callspec", None)
        if where == "test_docs.py" and callspec is not None:
            snippets = [p for p in callspec.params.values() if hasattr(p, "code")]
            if any(runs_the_local_model(s.code, s.lang) for s in snippets):
                item.add_marker("model")


@pytest.fixture
def agents() -> Iterator[list[Agent]]:
    """Agents a test made, closed when it ends (their sandboxes stopped)."""
    made: list[Agent] = []
    yield made
    for agent in made:
        agent.close()
