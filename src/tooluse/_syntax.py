"""Small readers of Python syntax trees, shared by the parts that read code a model wrote."""

from __future__ import annotations

import ast

__all__ = ["dotted"]


def dotted(node: ast.expr) -> str | None:
    """The name ``a.b.c`` an expression spells, or None when it is not a plain dotted name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None
