"""A model's cost profile, fitted from a cost-model run, for the auto convention."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ..conventions._auto import CHOICES, SHAPES, Line, Profile, profile_path
from ._costmodel import fit_line
from ._row import Row

__all__ = ["fit_profile", "save_profile"]


def fit_profile(rows: Sequence[Row], model: str) -> Profile | None:
    """Lines of input tokens against width per shape and convention; None if too few rows."""
    lines: dict[str, dict[str, Line]] = {}
    accuracy: dict[str, float] = {}
    for convention in CHOICES:
        mine = [r for r in rows if r.convention == convention and r.category in SHAPES]
        if mine:
            accuracy[convention] = sum(r.correct for r in mine) / len(mine)
        for shape in SHAPES:
            points = [
                (r.width, r.input_tokens)
                for r in mine
                if r.category == shape and r.width is not None and r.input_tokens is not None
            ]
            if len({w for w, _ in points}) < 2:
                continue
            fit = fit_line([w for w, _ in points], [t for _, t in points])
            lines.setdefault(shape, {})[convention] = Line(
                round(fit.intercept, 1), round(fit.slope, 2)
            )
    if not lines:
        return None
    return Profile(model, lines, accuracy, source=f"measured for {model}")


def save_profile(profile: Profile, out: Path) -> list[Path]:
    """Write the profile into `out` and where the auto convention looks for it."""
    text = json.dumps(profile.to_dict(), indent=2) + "\n"
    written = []
    for path in (out / "profile.json", profile_path(profile.model)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
