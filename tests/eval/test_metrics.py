"""Call precision, recall and field-level argument correctness on hand-made cases."""

from __future__ import annotations

import itertools
import random

import pytest

from tooluse.eval import Call, call_metrics
from tooluse.eval._metrics import _best_assignment, values_equal
from tooluse.eval.bfcl._single_turn import BfclTask, _Entry


def test_perfect_calls_score_one_everywhere() -> None:
    calls = [Call("a", {"x": 1}), Call("b", {"y": "z"})]
    m = call_metrics(calls, list(reversed(calls)))
    assert (m.precision, m.recall, m.argument_accuracy) == (1.0, 1.0, 1.0)


def test_precision_counts_extra_and_wrong_tools() -> None:
    expected = [Call("a", {"x": 1})]
    made = [Call("a", {"x": 1}), Call("a", {"x": 1}), Call("c", {})]
    m = call_metrics(expected, made)
    assert m.precision == pytest.approx(1 / 3)
    assert m.recall == 1.0
    assert m.argument_accuracy == 1.0


def test_recall_counts_missing_calls_per_needed_call() -> None:
    expected = [Call("a", {"x": 1}), Call("a", {"x": 2}), Call("b", {})]
    made = [Call("a", {"x": 2})]
    m = call_metrics(expected, made)
    assert m.precision == 1.0
    assert m.recall == pytest.approx(1 / 3)
    # The one call is paired with the needed call it matches, not the first one listed.
    assert m.argument_accuracy == 1.0


def test_argument_accuracy_is_field_level_and_counts_extra_fields() -> None:
    expected = [Call("f", {"city": "Paris", "unit": "celsius", "days": 3})]
    made = [Call("f", {"city": "Paris", "unit": "kelvin", "days": 3.0, "verbose": True})]
    m = call_metrics(expected, made)
    assert (m.fields_right, m.fields_total) == (2, 4)
    assert m.argument_accuracy == 0.5


def test_missing_field_counts_as_wrong() -> None:
    m = call_metrics([Call("f", {"a": 1, "b": 2})], [Call("f", {"a": 1})])
    assert m.argument_accuracy == 0.5


def test_pairs_maximise_right_fields_across_calls_of_one_tool() -> None:
    expected = [Call("f", {"a": 1, "b": 1}), Call("f", {"a": 2, "b": 2})]
    # Greedy in listed order would pair the first call with the first expected one.
    made = [Call("f", {"a": 2, "b": 9}), Call("f", {"a": 1, "b": 1})]
    m = call_metrics(expected, made)
    assert (m.fields_right, m.fields_total) == (3, 4)


def test_no_calls_and_nothing_expected_have_no_ratios() -> None:
    m = call_metrics([], [])
    assert (m.precision, m.recall, m.argument_accuracy) == (None, None, None)
    m = call_metrics([], [Call("a", {})])
    assert m.precision == 0.0 and m.recall is None
    m = call_metrics([Call("a", {})], [])
    assert m.precision is None and m.recall == 0.0


def test_values_equal_reads_ints_as_floats_but_not_bools() -> None:
    assert values_equal(3, 3.0)
    assert values_equal([1, (2, 3)], [1.0, [2, 3]])
    assert not values_equal(True, 1)
    assert not values_equal({"a": 1}, {"a": 1, "b": 2})


def test_best_assignment_is_optimal() -> None:
    rng = random.Random(7)
    for rows, columns in [(3, 3), (2, 4), (4, 2), (5, 5)]:
        for _ in range(20):
            value = [[rng.random() for _ in range(columns)] for _ in range(rows)]
            pairs = _best_assignment(value)
            assert len(pairs) == min(rows, columns)
            assert len({i for i, _ in pairs}) == len({j for _, j in pairs}) == len(pairs)
            if rows <= columns:
                best = max(
                    sum(value[i][c[i]] for i in range(rows))
                    for c in itertools.permutations(range(columns), rows)
                )
            else:
                best = max(
                    sum(value[r[j]][j] for j in range(columns))
                    for r in itertools.permutations(range(rows), columns)
                )
            assert sum(value[i][j] for i, j in pairs) == pytest.approx(best)


def test_bfcl_fields_are_judged_by_bfcls_rules() -> None:
    function = {
        "name": "weather",
        "parameters": {
            "type": "dict",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "unit": {"type": "string"},
            },
            "required": ["city"],
        },
    }
    answer = [{"weather": {"city": ["Paris, France"], "days": [3], "unit": ["", "celsius"]}}]
    task = BfclTask(_Entry("t", "simple_python", [function], [[]], answer))
    expected = Call("weather", answer[0]["weather"])
    # Case, spaces and punctuation are ignored in strings; the optional unit may be left out.
    assert task._field_score(expected, Call("weather", {"city": "paris france", "days": 3})) == (
        2,
        2,
    )
    assert task._field_score(expected, Call("weather", {"city": "Paris", "days": "3"})) == (0, 2)
    assert task._field_score(expected, Call("weather", {"city": "Paris, France", "x": 1})) == (1, 3)
