"""The layout docs/architecture.md describes, read off the modules' imports with `ast`.

Every import counts wherever it stands: at the top, inside a function, or under
``if TYPE_CHECKING:``. Nothing here imports or runs the package.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "tooluse"
DOC = ROOT / "docs" / "architecture.md"

#: The layers, bottom up. A unit (a subpackage, a module at the top of the package, or
#: ``tooluse``, the package's own ``__init__`` that re-exports the public names) may
#: import units of lower layers only: never one of its own layer, never one above.
LAYERS: tuple[frozenset[str], ...] = (
    # Basics every part shares; they import nothing of ours but the basics below them.
    frozenset({"_exceptions", "_frozen", "_eventloop", "_tokens", "_imports", "_closing"}),
    # Media values (images, audio, resources): what tools, messages and backends share.
    frozenset({"media"}),
    # The versioned written form of what is written down, and the reading of Python-call
    # text (its errors are InvalidCallErrors); then the records of calls.
    frozenset({"_messages", "_written", "_syntax"}),
    frozenset({"_records"}),
    # Tools, the isolated sandbox and constrained decoding know nothing of each other.
    frozenset({"tools", "sandbox", "decoding"}),
    # What stands on tools alone: the model backends (and decoding), the context window,
    # the linter, and `Expect`, which names a toolbox.
    frozenset({"models", "context", "lint", "_expect", "vision"}),
    # Reading replies (conventions), deciding on calls (policy), finding tools (search).
    frozenset({"conventions", "policy", "search"}),
    # The only place a tool runs, and the typed events that tell what a run did.
    frozenset({"dispatch", "events"}),
    # Runs recorded as DBOS workflows: the dispatcher's calls and the model's replies as steps.
    frozenset({"durable"}),
    # The agent, its loop, streams, traces and results.
    frozenset({"run"}),
    # The MCP bridge and the public face of the package.
    frozenset({"mcp", "tooluse"}),
    # Evaluation drives the public agent like any user.
    frozenset({"eval"}),
    frozenset({"view"}),
    frozenset({"cli"}),
)

#: Module import cycles that are allowed, each with why: none.
ALLOWED_CYCLES: dict[frozenset[str], str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def unit_of(module: str) -> str:
    """``tooluse.run._agent`` → ``run``, ``tooluse._messages`` → ``_messages``, the root itself
    → ``tooluse``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "tooluse"


@dataclass(frozen=True)
class Import:
    importer: str
    target: str  # the module imported: the name's own module if it is one, else the package's
    name: str | None  # the name imported from `target`, if one was
    line: int


def imports_of(module: str) -> Iterator[Import]:
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "tooluse":
                    yield Import(module, alias.name, None, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != "tooluse":
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if full in MODULES:
                    yield Import(module, full, None, node.lineno)
                else:
                    yield Import(module, source, alias.name, node.lineno)


@functools.cache
def all_imports() -> list[Import]:
    """Every import of the package's modules (parsed when a test first asks, not at
    collection, which each test worker does)."""
    return [i for m in MODULES for i in imports_of(m)]


def layer_of(unit: str) -> int:
    found = [i for i, layer in enumerate(LAYERS) if unit in layer]
    assert found, f"{unit} is in no layer: add it to LAYERS (and to docs/architecture.md)"
    return found[0]


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(m) for m in MODULES}
    named = set().union(*LAYERS)
    assert units == named, (sorted(units - named), sorted(named - units))


def test_each_unit_imports_only_the_layers_below_it() -> None:
    wrong = [
        f"{i.importer}:{i.line} imports {i.target} ({unit_of(i.importer)} may not use "
        f"{unit_of(i.target)})"
        for i in all_imports()
        if unit_of(i.importer) != unit_of(i.target)
        and layer_of(unit_of(i.target)) >= layer_of(unit_of(i.importer))
    ]
    assert not wrong, "\n".join(wrong)


def _cycles() -> list[frozenset[str]]:
    """The strongly connected parts of the module graph that hold more than one module."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for i in all_imports():
        if i.target != i.importer:
            graph[i.importer].add(i.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.add(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(frozenset(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_import_cycles() -> None:
    cycles = _cycles()
    wrong = [sorted(c) for c in cycles if c not in ALLOWED_CYCLES]
    assert not wrong, wrong
    stale = [sorted(c) for c in ALLOWED_CYCLES if c not in cycles]
    assert not stale, f"these cycles are gone: delete their allowance in ALLOWED_CYCLES: {stale}"


def test_no_private_name_is_imported_from_another_unit() -> None:
    wrong = [
        f"{i.importer}:{i.line} imports {i.name} from {i.target}"
        for i in all_imports()
        if i.name is not None
        and i.name.startswith("_")
        and unit_of(i.importer) != unit_of(i.target)
    ]
    assert not wrong, "\n".join(wrong)


def test_only_the_ray_executor_imports_ray() -> None:
    # Ray is an optional extra for evaluation sweeps: nothing else may need it.
    def imports_ray(path: Path) -> bool:
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

    importers = {m for m, path in MODULES.items() if imports_ray(path)}
    assert importers == {"tooluse.eval._ray"}


# --- the page -------------------------------------------------------------------------

_CODE = re.compile(r"`([^`\n]+)`")


def _doc_names() -> set[str]:
    return set(_CODE.findall(DOC.read_text(encoding="utf-8")))


def _packages() -> set[str]:
    return {
        str(p.parent.relative_to(SRC)) + "/" for p in SRC.rglob("__init__.py") if p.parent != SRC
    }


def test_the_page_names_every_package() -> None:
    missing = sorted(_packages() - _doc_names())
    assert not missing, f"docs/architecture.md does not name {missing} (as `name/`)"


def test_every_package_and_module_the_page_names_exists() -> None:
    files = {str(p.relative_to(SRC)) for p in SRC.rglob("*.py")}
    packages = _packages()
    wrong = []
    for name in sorted(_doc_names()):
        if re.fullmatch(r"[a-z_]+(/[a-z_]+)*/", name):
            if name not in packages:
                wrong.append(name)
        # Modules are named by their path under src/tooluse (tests by theirs in the repo).
        elif (
            re.fullmatch(r"([a-z_]+/)*_?[a-z_]+\.py", name)
            and name not in files
            and not (ROOT / name).is_file()
        ):
            wrong.append(name)
    assert not wrong, f"docs/architecture.md names what does not exist: {wrong}"


def test_the_checks_see_imports() -> None:
    # The checks above pass trivially if the reader finds nothing: it must find these,
    # a deferred import and one under TYPE_CHECKING among them.
    found = {(i.importer, i.target) for i in all_imports()}
    assert ("tooluse.run._agent", "tooluse.run._stream") in found
    assert ("tooluse.eval._runner", "tooluse.eval._ray") in found  # inside a method
    assert ("tooluse._expect", "tooluse.tools") in found  # under TYPE_CHECKING
    assert {"tools/", "sandbox/", "eval/bfcl/"} <= _packages()


@pytest.mark.parametrize("unit", ["_exceptions", "tools", "sandbox", "decoding"])
def test_the_lowest_parts_import_only_the_exceptions(unit: str) -> None:
    wrong = sorted(
        f"{i.importer} imports {i.target}"
        for i in all_imports()
        if unit_of(i.importer) == unit
        and unit_of(i.target) not in {unit, "_exceptions", *(("media",) if unit == "tools" else ())}
    )
    assert not wrong, "\n".join(wrong)
