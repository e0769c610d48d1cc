"""A checked plan: its steps, read by the plan convention and run by the dispatcher.

Its own module so the convention's result types (`Plan` in `_base`) can name it
without importing the plan convention itself.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Literal

__all__ = ["PlanProgram", "PlanStep"]


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One line of a plan.

    ``call`` runs `tool` once; ``map`` runs it once per item of `source`, with
    `variable` bound to the item; ``value`` evaluates `source`. `arguments`
    maps the tool's parameter names (as its schema spells them) to expressions.
    """

    name: str
    line: int
    kind: Literal["call", "map", "value"]
    text: str
    needs: tuple[str, ...]
    tool: str | None = None
    arguments: tuple[tuple[str, ast.expr], ...] = ()
    variable: str | None = None
    source: ast.expr | None = None
    condition: ast.expr | None = None


@dataclass(frozen=True, slots=True)
class PlanProgram:
    """A checked plan: its steps in order; the last one's value is the result."""

    code: str
    steps: tuple[PlanStep, ...]

    @property
    def result(self) -> PlanStep:
        return self.steps[-1]
