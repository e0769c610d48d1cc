"""The decoding modules import one another in one direction only."""

from __future__ import annotations

import ast
from pathlib import Path

import tooluse.decoding

PACKAGE = Path(tooluse.decoding.__file__).parent


def sibling_imports(module: Path) -> set[str]:
    """The package's modules `module` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_no_module_of_the_package_imports_back_what_imports_it() -> None:
    graph = {
        path.stem: sibling_imports(path)
        for path in PACKAGE.glob("_*.py")
        if path.stem != "__init__"
    }

    def reachable(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(graph.get(start, ()))
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(graph.get(name, ()))
        return seen

    assert graph["_gbnf"] == {"_grammars"}
    assert [name for name in sorted(graph) if name in reachable(name)] == []
