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
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._exceptions import UsageError
from .._written import VERSION, version_of
from ..models import ModelResponse
from ..tools import Toolbox
from ._base import Convention, Interpretation, Prepared
from ._code import CodeConvention
from ._json import JsonConvention
from ._plan import PlanConvention

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
#: The version of the form `Profile.to_dict` writes (and `tooluse bench costmodel` stores).
PROFILE_VERSION = 1
#: The versions `Profile.from_dict` reads: 0 is the form of earlier releases, unversioned.
READ_VERSIONS = (0, 1)
#: The widths an unknown task is assumed to lie in.
UNKNOWN_WIDTHS = 50
SHAPES = ("listed", "discovered")
CHOICES = ("json", "code", "plan")
#: The convention each choice names; imported here, not looked up by name in the
#: package, so the package can list this convention without a cycle.
_CHOSEN: dict[str, type[Convention]] = {
    "json": JsonConvention,
    "code": CodeConvention,
    "plan": PlanConvention,
}


@dataclass(frozen=True, slots=True)
class Line:
    intercept: float
    slope: float

    def at(self, width: float) -> float:
        return self.intercept + self.slope * width


def _kind(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__}"


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _line(value: Any) -> Any:
    """``[intercept, slope]`` as a `Line`; anything else as it is."""
    if isinstance(value, list | tuple) and len(value) == 2 and all(map(_finite, value)):
        return Line(float(value[0]), float(value[1]))
    return value


#: A field a stored profile leaves out (`Profile.from_dict` says so itself).
_ABSENT: Any = object()


def _problems(model: Any, lines: Any, accuracy: Any, source: Any) -> list[str]:
    """What is wrong with a profile made of these fields; empty when nothing is."""
    shapes, choices = ", ".join(SHAPES), ", ".join(CHOICES)
    problems: list[str] = []
    if model is not _ABSENT and (not isinstance(model, str) or not model):
        problems.append(f"model must be the model's name, not {model!r}")
    if not isinstance(source, str):
        problems.append(f"source must be a string, not {_kind(source)}")
    if not isinstance(lines, Mapping):
        if lines is not _ABSENT:
            problems.append(
                f"lines must map each shape ({shapes}) to the lines of its conventions, "
                f"not {_kind(lines)}"
            )
    elif not lines:
        problems.append(f"lines is empty: it needs the lines of a shape ({shapes})")
    else:
        for shape, by in lines.items():
            if shape not in SHAPES:
                problems.append(f"lines has an unknown shape {shape!r}; the shapes are {shapes}")
            elif not isinstance(by, Mapping) or not by:
                problems.append(
                    f"lines[{shape!r}] must map each convention ({choices}) to its line, not {by!r}"
                )
            else:
                for convention, line in by.items():
                    if convention not in CHOICES:
                        problems.append(
                            f"lines[{shape!r}] has an unknown convention {convention!r}; auto "
                            f"chooses among {choices}"
                        )
                    elif not (
                        isinstance(line, Line) and _finite(line.intercept) and _finite(line.slope)
                    ):
                        problems.append(
                            f"lines[{shape!r}][{convention!r}] must be a line: [intercept, slope] "
                            f"of two finite numbers, not {line!r}"
                        )
        if not problems and not set.intersection(*(set(by) for by in lines.values())):
            problems.append(
                "no convention has lines for every shape, so auto has nothing to compare"
            )
    if not isinstance(accuracy, Mapping):
        problems.append(
            f"accuracy must map each convention ({choices}) to a number from 0 to 1, "
            f"not {_kind(accuracy)}"
        )
    else:
        for convention, value in accuracy.items():
            if convention not in CHOICES:
                problems.append(f"accuracy has an unknown convention {convention!r}")
            elif not (_finite(value) and 0 <= value <= 1):
                problems.append(
                    f"accuracy[{convention!r}] must be a number from 0 to 1, not {value!r}"
                )
    return problems


@dataclass(frozen=True, slots=True)
class Profile:
    """One model's cost lines (input tokens against width) and accuracy, per convention.

    A profile of the wrong shape is refused when it is made, with a `UsageError`
    that says each thing wrong with it.
    """

    model: str
    #: ``lines[shape][convention]``
    lines: Mapping[str, Mapping[str, Line]]
    accuracy: Mapping[str, float] = field(default_factory=dict)
    source: str = ""

    def __post_init__(self) -> None:
        problems = _problems(self.model, self.lines, self.accuracy, self.source)
        if problems:
            raise UsageError(f"the cost profile cannot be used: {'; '.join(problems)}")

    def to_dict(self) -> dict[str, Any]:
        """The written form (JSON values, each line as ``[intercept, slope]``), with ``version``."""
        return {
            VERSION: PROFILE_VERSION,
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
        """The profile `to_dict` wrote; a `UsageError` says what is wrong with one that is not."""
        if not isinstance(data, Mapping):
            raise UsageError(
                "the cost profile cannot be used: it must be a JSON object with model, lines "
                f"and accuracy, not {_kind(data)}"
            )
        # The form is checked here rather than by pydantic, so that every problem with a
        # profile is named at once, in the profile's own terms.
        version_of(data, "the cost profile", READ_VERSIONS, advice="use the release that wrote it")
        lines = data.get("lines", _ABSENT)
        if isinstance(lines, Mapping):
            # What has the shape of a line becomes one; anything else is left as it is, for
            # the check to name.
            lines = {
                shape: {c: _line(v) for c, v in by.items()} if isinstance(by, Mapping) else by
                for shape, by in lines.items()
            }
        fields: dict[str, Any] = {
            "model": data.get("model", _ABSENT),
            "lines": lines,
            "accuracy": data.get("accuracy", {}),
            "source": data.get("source", ""),
        }
        problems = [f"it has no {key!r}" for key in ("model", "lines") if key not in data]
        problems += _problems(**fields)  # a missing model or lines is said above
        if problems:
            raise UsageError(f"the cost profile cannot be used: {'; '.join(problems)}")
        return cls(**fields)

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
    """The profile stored for `model`, None if there is none.

    A stored profile that cannot be read or used is a `UsageError` naming the
    file, rather than a choice silently made without it.
    """
    path = profile_path(model)
    again = f"measure it again with `tooluse bench costmodel --model {model}`, or delete it"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # unreadable, or not UTF-8
        raise UsageError(f"cannot read the cost profile {path}: {exc}; {again}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"the cost profile {path} is not JSON ({exc}); {again}") from None
    try:
        return Profile.from_dict(data)
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}; {again}") from None


class AutoConvention(Convention):
    """Picks json, code or plan for each run from a cost `Profile` and the task's shape.

    Args:
        profile: the model's profile, or its dict form (`Profile.to_dict`); by
            default the one `tooluse bench costmodel` stored for the agent's model,
            else `ORACLE_PROFILE`. One of the wrong shape is a `UsageError`.
    """

    name = "auto"

    def __init__(self, profile: Profile | Mapping[str, Any] | None = None) -> None:
        if isinstance(profile, Mapping):
            profile = Profile.from_dict(profile)
        elif profile is not None and not isinstance(profile, Profile):
            raise UsageError(
                f"AutoConvention takes a Profile or its dict form, not {_kind(profile)}"
            )
        self.profile: Profile | None = profile

    def for_run(self, task: str, expect: Sequence[Expect], *, model: str = "") -> Convention:
        profile = self.profile or load_profile(model) or ORACLE_PROFILE
        width, shape = task_shape(task, expect)
        choice = choose(profile, width, shape)
        chosen = _CHOSEN[choice.convention]()
        chosen.chosen_by = f"auto ({profile.source or profile.model}): {choice.reason}"
        return chosen

    def prepare(self, tools: Toolbox, system_prompt: str | None) -> Prepared:
        raise TypeError("the auto convention chooses another for each run: call for_run first")

    def interpret(self, response: ModelResponse) -> Interpretation:
        raise TypeError("the auto convention chooses another for each run: call for_run first")
