"""Every error tooluse raises belongs to one tree, rooted at ToolUseError, drawn in its docs.

The CLI turns a `ToolUseError` into one ``error:`` line, and callers catch
``except ToolUseError``; a public exception class outside the tree escapes both.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import types

import pytest

import tooluse
from tooluse import _exceptions
from tooluse.decoding import GrammarError

# Signals, not failures; `tooluse._exceptions` says why each stands outside the tree.
SIGNALS = {"ModelRetry"}


def _modules() -> list[types.ModuleType]:
    names = [info.name for info in pkgutil.walk_packages(tooluse.__path__, "tooluse.")]
    return [tooluse, *(importlib.import_module(name) for name in sorted(names))]


def _public_exceptions() -> dict[str, type[BaseException]]:
    """Exception classes defined at module level under a public name, by class name."""
    found: dict[str, type[BaseException]] = {}
    for module in _modules():
        for name, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                # A warning category is passed to warnings.warn, never raised.
                and not issubclass(value, Warning)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[name] = value
    return found


def _drawn_tree() -> dict[str, str]:
    """The parent of each class drawn under ToolUseError in `_exceptions`' docstring."""
    doc = _exceptions.__doc__ or ""
    lines = doc[doc.index("    ToolUseError\n") :].split("\n\n", 1)[0].splitlines()
    parents: dict[str, str] = {}
    path: list[tuple[int, str]] = []
    for line in lines:
        match = re.search(r"[A-Z]\w+", line)
        assert match is not None, line
        depth, name = match.start(), match.group()
        while path and path[-1][0] >= depth:
            path.pop()
        if path:
            parents[name] = path[-1][1]
        path.append((depth, name))
    return parents


def test_every_public_exception_derives_from_tooluse_error() -> None:
    offenders = sorted(
        f"{cls.__module__}.{name} ({', '.join(b.__name__ for b in cls.__bases__)})"
        for name, cls in _public_exceptions().items()
        if name not in SIGNALS and not issubclass(cls, tooluse.ToolUseError)
    )
    assert not offenders, "outside the ToolUseError tree:\n" + "\n".join(offenders)


def test_the_docstring_draws_every_exception_under_its_real_parent() -> None:
    drawn = _drawn_tree()
    wrong = []
    for name, cls in _public_exceptions().items():
        if name in SIGNALS or name == "ToolUseError":
            continue
        parents = [b.__name__ for b in cls.__bases__]
        if name not in drawn:
            wrong.append(f"{name} is not drawn (its bases: {', '.join(parents)})")
        elif drawn[name] not in parents:
            wrong.append(f"{name} is drawn under {drawn[name]}, but its bases are {parents}")
    assert not wrong, "\n".join(wrong)


def test_the_signals_are_named_in_the_docstring() -> None:
    doc = _exceptions.__doc__ or ""
    outside = doc[doc.index("Outside the tree") :]
    for name in SIGNALS:
        assert name in outside


def test_every_drawn_class_exists() -> None:
    found = _public_exceptions()
    assert sorted(set(_drawn_tree()) - set(found)) == []


@pytest.mark.parametrize("cls", [GrammarError])
def test_classes_that_joined_the_tree_stay_value_errors(cls: type[Exception]) -> None:
    assert issubclass(cls, tooluse.UsageError) and issubclass(cls, ValueError)
