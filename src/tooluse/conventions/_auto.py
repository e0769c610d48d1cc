"""The auto convention: json, code or plan, chosen for each run from the cost model.

Patel et al. (2026) price JSON calling at ``S + N·(c_a + c_r + c_o)`` tokens and
programmatic calling at ``(P + ℓ₀) + γ·N``; below the crossover N* the first is
cheaper, above it the second. A `Profile` holds those lines for one model, for
each convention (json, code and plan) and for the two shapes of task the
fan-out suite measures: the items to visit are listed in the task
(``listed``), or a first call discovers them (``discovered``: a result feeds
later arguments). `tooluse bench costmodel` measures a profile and stores it
per model; without one, `ORACLE_PROFILE` (the oracle's own measurement) is used.

The rule, for a run:

1. Candidates are the conventions whose profiled accuracy is within
   `ACCURACY_SLACK` of the best one's.
2. With an expected width N (the values of the run's `Expect`), the shape is
   ``listed`` when every expected value is written in the task, else
   ``discovered``; auto takes the candidate with the fewest predicted tokens at N.
3. Without one, the width is unknown: auto takes the candidate whose worst
   ratio to the cheapest, over widths 1 to `UNKNOWN_WIDTHS` in both shapes, is
   smallest (the choice that can cost least if guessed wrong).

The choice is made once, before the first request, so the system prompt and
tools stay the same for the whole run and a provider's prompt cache keeps them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..models import ModelResponse
from ..tools import Toolbox
from ._base import Convention, Interpretation, Prepared

if TYPE_CHECKING:
    from .._expect import Expect

__all__ = [
    "ACCURACY_SLACK",
    "ORACLE_PROFILE",
    "AutoConvention",
    "Choice",
    "Profile",
    "profile_dir",
    "profile_path",
]

#: How far below the most accurate convention a candidate may be.
ACCURACY_SLACK = 0.05
#: The widths an unknown task is assumed to lie in.
UNKNOWN_WIDTHS = 50
SHAPES = ("listed", "discovered")
CHOICES = ("json", "code", "plan")


@dataclass(frozen=True, slots=True)
class Line:
    intercept: float
    slope: float

    def at(self, width: float) -> float:
        return self.intercept + self.slope * width


@dataclass(frozen=True, slots=True)
class Profile:
    """One model's cost lines (input tokens against width) and accuracy, per convention."""

    model: str
    #: ``lines[shape][convention]``
    lines: Mapping[str, Mapping[str, Line]]
    accuracy: Mapping[str, float] = field(default_factory=dict)
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "lines": {
                shape: {c: [line.intercept, line.slope] for c, line in by.items()}
                for shape, by in self.lines.items()
            },
            "accuracy": dict(self.accuracy),
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Profile:
        return cls(
            model=str(data["model"]),
            lines={
                shape: {c: Line(float(v[0]), float(v[1])) for c, v in by.items()}
                for shape, by in data["lines"].items()
            },
            accuracy={c: float(v) for c, v in data.get("accuracy", {}).items()},
            source=str(data.get("source", "")),
        )

    def conventions(self) -> list[str]:
        common = set(CHOICES)
        for by in self.lines.values():
            common &= set(by)
        return [c for c in CHOICES if c in common]


#: The oracle's lines, from ``tooluse bench costmodel --conventions json,code,plan``
#: (input tokens summed over a run; widths 1 to 100, twelve points, R² > 0.9999).
ORACLE_PROFILE = Profile(
    model="oracle",
    lines={
        "listed": {
            "json": Line(171.1, 27.15),
            "code": Line(448.7, 17.16),
            "plan": Line(423.7, 17.16),
        },
        "discovered": {
            "json": Line(448.4, 27.12),
            "code": Line(540.6, 0.01),
            "plan": Line(514.6, 0.01),
        },
    },
    accuracy={"json": 1.0, "code": 1.0, "plan": 1.0},
    source="built in: the oracle's measurement",
)


@dataclass(frozen=True, slots=True)
class Choice:
    convention: str
    reason: str


def choose(profile: Profile, width: int | None, shape: str | None) -> Choice:
    """The convention auto runs with; see the module's docstring for the rule."""
    known = profile.conventions() or ["json"]
    best = max((profile.accuracy.get(c, 1.0) for c in known), default=1.0)
    candidates = [c for c in known if profile.accuracy.get(c, 1.0) >= best - ACCURACY_SLACK]
    if width is not None and shape is not None and shape in profile.lines:
        lines = profile.lines[shape]
        costs = {c: lines[c].at(width) for c in candidates}
        pick = min(candidates, key=lambda c: costs[c])
        shown = ", ".join(f"{c} {costs[c]:,.0f}" for c in candidates)
        return Choice(pick, f"width {width}, {shape}: predicted input tokens {shown}")
    worst: dict[str, float] = {}
    for c in candidates:
        ratios = []
        for by in profile.lines.values():
            for n in range(1, UNKNOWN_WIDTHS + 1):
                cheapest = min(by[o].at(n) for o in candidates)
                ratios.append(by[c].at(n) / cheapest if cheapest > 0 else 1.0)
        worst[c] = max(ratios, default=1.0)
    pick = min(candidates, key=lambda c: worst[c])
    shown = ", ".join(f"{c} {worst[c]:.2f}x" for c in candidates)
    return Choice(
        pick, f"width unknown: worst ratio to the cheapest over 1-{UNKNOWN_WIDTHS}: {shown}"
    )


def task_shape(task: str, expect: Sequence[Expect]) -> tuple[int | None, str | None]:
    """The expected width and shape of a task, from its expectations (None if none say)."""
    values = [v for e in expect for v in e.values]
    if not values:
        counts = [e.calls for e in expect if e.calls is not None]
        return (sum(counts), "discovered") if counts else (None, None)
    folded = task.casefold()
    listed = all(str(v).casefold() in folded for v in values)
    return len(values), "listed" if listed else "discovered"


def profile_dir() -> Path:
    """Where measured profiles are kept: ``$TOOLUSE_PROFILES`` or the user cache."""
    import os

    root = os.environ.get("TOOLUSE_PROFILES")
    if root:
        return Path(root)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "tooluse" / "profiles"


def profile_path(model: str) -> Path:
    return profile_dir() / (re.sub(r"[^A-Za-z0-9_.-]+", "_", model).strip("_") + ".json")


def load_profile(model: str) -> Profile | None:
    path = profile_path(model)
    try:
        return Profile.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


class AutoConvention(Convention):
    """Picks json, code or plan for each run from a cost `Profile` and the task's shape.

    Args:
        profile: the model's profile; by default the one `tooluse bench costmodel`
            stored for the agent's model, else `ORACLE_PROFILE`.
    """

    name = "auto"

    def __init__(self, profile: Profile | None = None) -> None:
        self.profile = profile

    def for_run(self, task: str, expect: Sequence[Expect], *, model: str = "") -> Convention:
        from . import get_convention

        profile = self.profile or load_profile(model) or ORACLE_PROFILE
        width, shape = task_shape(task, expect)
        choice = choose(profile, width, shape)
        chosen = get_convention(choice.convention)
        chosen.chosen_by = f"auto ({profile.source or profile.model}): {choice.reason}"
        return chosen

    def prepare(self, tools: Toolbox, system_prompt: str | None) -> Prepared:
        raise TypeError("the auto convention chooses another for each run: call for_run first")

    def interpret(self, response: ModelResponse) -> Interpretation:
        raise TypeError("the auto convention chooses another for each run: call for_run first")
