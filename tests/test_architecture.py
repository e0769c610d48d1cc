"""The layering that docs/architecture.md describes, read off the modules' imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "tooluse"

# The part a module belongs to: its subpackage, or its own name at the top level.
RUNTIME_TOP = {
    "_agent",
    "_loop",
    "_dispatch",
    "_scripts",
    "_validation",
    "_running",
    "_approval",
    "_provenance",
}

# part → parts it must never import (at module level or inside a function).
MUST_NOT = {
    "tools": {"models", "conventions", "sandbox", "context", "eval", "cli", *RUNTIME_TOP},
    "sandbox": {"tools", "models", "conventions", "context", "eval", "cli", *RUNTIME_TOP},
    "decoding": {"tools", "models", "conventions", "sandbox", "context", "eval", "cli"},
    "models": {"conventions", "sandbox", "context", "eval", "cli", *RUNTIME_TOP},
    "conventions": {"sandbox", "eval", "cli", "_dispatch", "_agent", "_loop", "_scripts"},
    "context": {"eval", "cli", "_agent", "_loop", "_dispatch", "_scripts"},
    "_dispatch": {"models", "conventions", "context", "eval", "cli", "_agent", "_loop"},
    "_loop": {"sandbox", "eval", "cli", "_dispatch", "_scripts"},
    # The policy decides; it never executes, so it sits below the dispatcher.
    "_approval": {
        "models",
        "conventions",
        "sandbox",
        "context",
        "eval",
        "cli",
        "_agent",
        "_loop",
        "_dispatch",
        "_scripts",
        "_running",
    },
    "_agent": {"eval", "cli"},
    # The linter reads tools; it never runs them or asks a model.
    "lint": {"models", "conventions", "sandbox", "context", "eval", "cli", *RUNTIME_TOP},
    # The index and what a run has loaded; the conventions' renderings come from above.
    "search": {
        "models",
        "conventions",
        "sandbox",
        "eval",
        "cli",
        "_agent",
        "_loop",
        "_dispatch",
        "_scripts",
    },
}
ONLY_EXCEPTIONS = {"tools", "sandbox", "decoding"}


def part_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imported_parts(path: Path) -> set[str]:
    """Every part of tooluse that a module imports, wherever the import stands."""
    package = list(path.relative_to(SRC).parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[list[str]] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = node.module.split(".") if node.module else []
                targets = [base + module] if module else [[*base, a.name] for a in node.names]
            elif node.module and node.module.split(".")[0] == "tooluse":
                targets = [node.module.split(".")[1:]]
        elif isinstance(node, ast.Import):
            targets = [a.name.split(".")[1:] for a in node.names if a.name.startswith("tooluse.")]
        found.update(t[0] for t in targets if t)
    return found - {part_of(path)}


def modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("part", sorted(MUST_NOT))
def test_no_part_imports_what_it_must_not_touch(part: str) -> None:
    wrong = [
        f"{path.relative_to(SRC)} imports {name}"
        for path in modules()
        if part_of(path) == part
        for name in sorted(imported_parts(path) & MUST_NOT[part])
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("part", sorted(ONLY_EXCEPTIONS))
def test_the_lowest_parts_import_only_the_exceptions(part: str) -> None:
    wrong = [
        f"{path.relative_to(SRC)} imports {name}"
        for path in modules()
        if part_of(path) == part
        for name in sorted(imported_parts(path) - {"_exceptions"})
    ]
    assert not wrong, "\n".join(wrong)


def test_the_runtime_never_imports_evaluation() -> None:
    wrong = [
        str(path.relative_to(SRC))
        for path in modules()
        if part_of(path) not in {"eval", "cli", "view"} and "eval" in imported_parts(path)
    ]
    assert not wrong


def test_the_runtime_never_imports_the_viewer() -> None:
    wrong = [
        str(path.relative_to(SRC))
        for path in modules()
        if part_of(path) not in {"view", "cli"} and "view" in imported_parts(path)
    ]
    assert not wrong


def _imports_ray(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        if any(name.split(".")[0] == "ray" for name in names):
            return True
    return False


def test_only_the_ray_executor_imports_ray() -> None:
    # Ray is an optional extra for evaluation sweeps: nothing else may need it.
    importers = {str(path.relative_to(SRC)) for path in modules() if _imports_ray(path)}
    assert importers == {"eval/_ray.py"}


def test_the_checker_sees_imports() -> None:
    # The checks above pass trivially if the reader finds nothing: it must find these.
    assert {"_exceptions", "tools", "sandbox"} <= imported_parts(SRC / "_scripts.py")
    assert "_exceptions" in imported_parts(SRC / "sandbox" / "_sandbox.py")
    assert "conventions" in imported_parts(SRC / "eval" / "bfcl" / "_java_js.py")
