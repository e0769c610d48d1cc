"""Call precision and recall, and field-level argument correctness.

Precision and recall compare tool names as multisets: a call to a needed tool
counts once per needed call. Argument correctness pairs each needed call with
one call of the same tool so that as many fields as possible agree (perfect
pairs first, by maximum matching; the rest by an optimal assignment) and counts
fields over the pairs: a field is right when the comparison says so, and a
field the model added that the truth does not have counts as wrong.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._matching import maximum_matching
from ._task import Call, Score

__all__ = ["CallMetrics", "FieldScore", "call_metrics", "equal_fields", "values_equal"]

FieldScore = Callable[[Call, Call], tuple[int, int]]
"""``(expected, made) -> (fields right, fields compared)`` for two calls of one tool."""

# Past this many unpaired calls of one tool an exact assignment costs seconds;
# such runs are far from right anyway, so pairs are then taken best first.
_EXACT_ASSIGNMENT_LIMIT = 60


@dataclass(frozen=True, slots=True)
class CallMetrics:
    precision: float | None
    recall: float | None
    argument_accuracy: float | None
    made: int
    expected: int
    matched: int
    fields_right: int
    fields_total: int

    def score(self, *, correct: bool, detail: str | None = None) -> Score:
        """The verdict `correct`, with these figures."""
        return Score(
            correct=correct,
            detail=detail,
            precision=self.precision,
            recall=self.recall,
            argument_accuracy=self.argument_accuracy,
            expected_calls=self.expected,
        )


def values_equal(expected: Any, made: Any) -> bool:
    """Equality that reads an int for an equal float as equal, and a tuple as a list."""
    if isinstance(expected, bool) or isinstance(made, bool):
        return type(expected) is type(made) and expected == made
    if isinstance(expected, int | float) and isinstance(made, int | float):
        return math.isclose(float(expected), float(made), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(expected, list | tuple) and isinstance(made, list | tuple):
        return len(expected) == len(made) and all(
            values_equal(e, m) for e, m in zip(expected, made, strict=True)
        )
    if isinstance(expected, Mapping) and isinstance(made, Mapping):
        return expected.keys() == made.keys() and all(
            values_equal(expected[k], made[k]) for k in expected
        )
    return bool(expected == made)


def equal_fields(expected: Call, made: Call) -> tuple[int, int]:
    """Fields compared by `values_equal` over the union of both calls' parameters."""
    keys = set(expected.arguments) | set(made.arguments)
    right = sum(
        1
        for key in keys
        if key in expected.arguments
        and key in made.arguments
        and values_equal(expected.arguments[key], made.arguments[key])
    )
    return right, len(keys)


def call_metrics(
    expected: Sequence[Call], made: Sequence[Call], fields: FieldScore = equal_fields
) -> CallMetrics:
    """Precision, recall and argument accuracy of `made` against `expected`."""
    want = Counter(c.tool for c in expected)
    got = Counter(c.tool for c in made)
    matched = sum(min(count, got[name]) for name, count in want.items())
    precision = matched / len(made) if made else None
    recall = matched / len(expected) if expected else None

    by_tool_expected: dict[str, list[Call]] = defaultdict(list)
    by_tool_made: dict[str, list[Call]] = defaultdict(list)
    for call in expected:
        by_tool_expected[call.tool].append(call)
    for call in made:
        by_tool_made[call.tool].append(call)
    right = total = 0
    for tool, wanted in by_tool_expected.items():
        candidates = by_tool_made.get(tool, [])
        if candidates:
            r, t = _pair_fields(wanted, candidates, fields)
            right += r
            total += t
    accuracy = right / total if total else None
    return CallMetrics(precision, recall, accuracy, len(made), len(expected), matched, right, total)


def _pair_fields(
    wanted: Sequence[Call], candidates: Sequence[Call], fields: FieldScore
) -> tuple[int, int]:
    scores = [[fields(w, c) for c in candidates] for w in wanted]
    perfect = maximum_matching([[r == t for r, t in row] for row in scores])
    right = sum(scores[row][column][0] for row, column in perfect.items())
    total = sum(scores[row][column][1] for row, column in perfect.items())
    rows = [r for r in range(len(wanted)) if r not in perfect]
    columns = [c for c in range(len(candidates)) if c not in set(perfect.values())]
    if not rows or not columns:
        return right, total
    sub = [[scores[r][c] for c in columns] for r in rows]
    if max(len(rows), len(columns)) <= _EXACT_ASSIGNMENT_LIMIT:
        pairs = _best_assignment([[r / t if t else 1.0 for r, t in row] for row in sub])
    else:
        pairs = _greedy_assignment([[r / t if t else 1.0 for r, t in row] for row in sub])
    for i, j in pairs:
        right += sub[i][j][0]
        total += sub[i][j][1]
    return right, total


def _greedy_assignment(value: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    cells = sorted(
        ((v, i, j) for i, row in enumerate(value) for j, v in enumerate(row)), reverse=True
    )
    used_rows: set[int] = set()
    used_columns: set[int] = set()
    pairs = []
    for _, i, j in cells:
        if i not in used_rows and j not in used_columns:
            used_rows.add(i)
            used_columns.add(j)
            pairs.append((i, j))
    return pairs


def _best_assignment(value: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """Pairs of (row, column) maximising the summed value (Hungarian method).

    Rows and columns may differ in number; min(rows, columns) pairs are made.
    """
    transpose = len(value) > len(value[0])
    matrix = (
        [list(col) for col in zip(*value, strict=True)] if transpose else [list(r) for r in value]
    )
    n, m = len(matrix), len(matrix[0])
    cost = [[-v for v in row] for row in matrix]
    u = [0.0] * (n + 1)
    v = [0.0] * (m + 1)
    owner = [0] * (m + 1)  # owner[j]: the row (1-based) holding column j
    way = [0] * (m + 1)
    for i in range(1, n + 1):
        owner[0] = i
        j0 = 0
        best = [math.inf] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0 = owner[j0]
            delta = math.inf
            j1 = 0
            for j in range(1, m + 1):
                if used[j]:
                    continue
                reduced = cost[i0 - 1][j - 1] - u[i0] - v[j]
                if reduced < best[j]:
                    best[j] = reduced
                    way[j] = j0
                if best[j] < delta:
                    delta = best[j]
                    j1 = j
            for j in range(m + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    best[j] -= delta
            j0 = j1
            if owner[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            owner[j0] = owner[j1]
            j0 = j1
    pairs = [(owner[j] - 1, j - 1) for j in range(1, m + 1) if owner[j]]
    return [(j, i) for i, j in pairs] if transpose else pairs
