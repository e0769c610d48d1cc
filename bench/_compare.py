"""Passed tasks under several settings, side by side: the table two benchmarks print.

A benchmark runs as ``python bench/NAME.py``, which puts this directory on the path,
so each imports this as ``from _compare import compare``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: ``passed[setting][convention][task id]``
Passed = Mapping[str, Mapping[str, Mapping[str, bool]]]


def compare(
    passed: Passed, settings: Sequence[str], conventions: Sequence[str], width: int = 14
) -> dict[str, dict[str, Any]]:
    """Print passed/run per setting and convention, and the tasks each later setting
    passed or failed where the first did not; return the same as the JSON line's part."""
    first_name = settings[0]
    print(f"{'convention':<12}" + "".join(f"{s:>{width}}" for s in settings))
    summary: dict[str, dict[str, Any]] = {}
    for convention in conventions:
        cells = []
        for setting in settings:
            got = passed[setting].get(convention, {})
            cells.append(f"{sum(got.values())}/{len(got)}")
            summary.setdefault(convention, {})[setting] = [sum(got.values()), len(got)]
        print(f"{convention:<12}" + "".join(f"{c:>{width}}" for c in cells))
        first = passed[first_name].get(convention, {})
        for setting in settings[1:]:
            other = passed[setting].get(convention, {})
            gained = sorted(t for t in first if other.get(t) and not first[t])
            lost = sorted(t for t in first if first[t] and not other.get(t))
            print(f"  {setting}: passed where {first_name} failed: {', '.join(gained) or 'none'}")
            print(f"  {setting}: failed where {first_name} passed: {', '.join(lost) or 'none'}")
            summary[convention][f"{setting}_gained"] = gained
            summary[convention][f"{setting}_lost"] = lost
    return summary
