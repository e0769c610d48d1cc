"""The buffer experiment through the real loop, window and store."""

from __future__ import annotations

import ast
from pathlib import Path

import tooluse.context
from tooluse.eval import sim


def test_the_runtime_experiment_measures_what_the_simulation_predicts() -> None:
    harness, agent = sim.run_experiment(sim.ExperimentConfig(turns=150, trials=1))
    assert harness.needed == agent.needed > 20  # the same episode for both
    assert harness.lost > 0 and harness.queries == 0  # truncation alone loses needed items
    assert agent.lost < harness.lost and agent.queries > 0  # offload + query recovers them
    assert harness.peak_fraction <= 0.92 + 0.05 and agent.peak_fraction <= 0.92 + 0.05


def _imports(source: Path, package: str) -> set[str]:
    """The absolute names of the modules `source` imports from."""
    names = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            names.add(".".join(part for part in (base, node.module) if part))
    return names


def test_the_context_package_imports_neither_the_agent_nor_evaluation() -> None:
    package = Path(tooluse.context.__file__).parent
    imported = set().union(*(_imports(f, "tooluse.context") for f in package.glob("*.py")))
    # The package root re-exports Agent, so importing from it counts too.
    assert not {
        m
        for m in imported
        if m in ("tooluse", "tooluse.run._agent") or m.startswith("tooluse.eval")
    }
