"""Agreement of ``tooluse.eval.check_ast`` with BFCL's own AST checker.

For every ground-truth answer of every single-turn AST category shipped in
bfcl-eval, both checkers judge the output built from the ground truth and every
perturbation of it (see ``_bfcl_cases.cases``: wrong values, wrong types and literal
forms, missing, extra and optional parameters, string spellings BFCL ignores,
alternative Java/JavaScript syntax, wrong and underscored function names, and for
several calls dropped, duplicated, reversed and rotated calls). Every difference in
pass/fail, and every difference in error type when both fail, must be listed below
with its reason; so must every ground truth that neither checker can pass.

Run with ``-s`` to see the counts.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from tooluse.eval import check_ast
from tooluse.eval.bfcl._java_js import java_value, js_value
from tooluse.eval.bfcl._single_turn import AST_CATEGORIES

from ._bfcl_cases import Case, cases
from ._official import Entry, OfficialChecker, load_official

GREEDY_FIRST_FIT = (
    "BFCL pairs parallel calls first-fit: the first expected call accepts 'Microsoft' or "
    "'Apple' for 2022-01-01, so when the Apple call comes before the Microsoft one it "
    "takes the Apple call and the expected Apple call is left without a partner; a "
    "one-to-one matching pairs all four"
)
BARE_DICT_OPTION = (
    "the answer gives meta's 'format' as a bare string instead of a list of options; "
    "BFCL compares the value with the string's characters, so no output can pass, "
    "while we read a bare value as the only option"
)

KNOWN_DISAGREEMENTS: dict[tuple[str, str], str] = {
    ("parallel_178", "reversed"): GREEDY_FIRST_FIT,
    ("parallel_178", "rotated:1"): GREEDY_FIRST_FIT,
    ("parallel_178", "rotated:2"): GREEDY_FIRST_FIT,
    ("simple_java_64", "ground_truth"): BARE_DICT_OPTION,
    ("simple_java_64", "alternative_syntax:0"): BARE_DICT_OPTION,
    ("simple_java_64", "dots_as_underscores:underscored"): BARE_DICT_OPTION,
}
"""Cases where one checker passes and the other fails, with the reason."""

KNOWN_ERROR_TYPE_DIFFERENCES: dict[tuple[str, str], str] = {
    # BFCL stops at the malformed 'meta' answer before reaching the perturbed parameter.
    ("simple_java_64", "wrong_value:0:onScriptError"): BARE_DICT_OPTION,
    ("simple_java_64", "wrong_type_not_text:0:onScriptError"): BARE_DICT_OPTION,
    ("simple_java_64", "extra_param:0"): BARE_DICT_OPTION,
}
"""Cases where both checkers fail but name different errors."""

UNSATISFIABLE_GROUND_TRUTH: dict[str, str] = {
    "simple_java_36": (
        "ArrayList of 'any': BFCL keeps each element as text, but the answer holds the "
        "number 42 and the boolean true"
    ),
    "simple_java_65": (
        "ArrayList of 'any': BFCL keeps each element as text, but the answer holds booleans"
    ),
    "live_simple_106-63-0": "required parameter 'auto_loan_payment_start' has no answer",
    "live_simple_112-68-0": "required parameters have empty option lists",
    "live_multiple_507-149-4": "required 'origin_airport' has only the option \"\"",
    "live_multiple_862-181-3": "answer uses 'journey_start_time', not a parameter of the function",
    "live_multiple_964-207-0": "answer names 'question', the function requires 'statement'",
}
"""Entries whose ground truth neither checker accepts, whatever the output."""

EXPECTED_ENTRIES = {
    "simple_python": 400,
    "simple_java": 100,
    "simple_javascript": 50,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "live_simple": 258,
    "live_multiple": 1053,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
}


@dataclass(frozen=True)
class Outcome:
    passed: bool
    error_type: str | None
    raised: str | None = None

    def describe(self) -> str:
        if self.raised is not None:
            return f"raised {self.raised}"
        return "pass" if self.passed else f"fail ({self.error_type})"


@dataclass
class Comparison:
    entries: Counter[str] = field(default_factory=Counter)
    cases: Counter[str] = field(default_factory=Counter)
    disagreements: dict[tuple[str, str], tuple[Outcome, Outcome]] = field(default_factory=dict)
    error_type_differences: dict[tuple[str, str], tuple[Outcome, Outcome]] = field(
        default_factory=dict
    )
    ground_truth_failures: dict[str, tuple[Outcome, Outcome]] = field(default_factory=dict)
    entries_by_id: dict[str, Entry] = field(default_factory=dict)
    cases_by_key: dict[tuple[str, str], Case] = field(default_factory=dict)


def _official_outcome(official: OfficialChecker, entry: Entry, case: Case) -> Outcome:
    try:
        result = official.verdict(entry, case.calls, dots_as_underscores=case.dots_as_underscores)
    except Exception as exc:  # BFCL's checker crashes on some malformed answers
        return Outcome(False, None, raised=type(exc).__name__)
    return Outcome(bool(result["valid"]), result.get("error_type"))


def _our_outcome(entry: Entry, case: Case) -> Outcome:
    verdict = check_ast(
        entry.functions,
        case.calls,
        entry.ground_truth,
        entry.category,
        dots_as_underscores=case.dots_as_underscores,
    )
    return Outcome(verdict.passed, verdict.error_type)


@pytest.fixture(scope="module")
def comparison() -> Comparison:
    official = load_official()
    result = Comparison()
    for category in AST_CATEGORIES:
        for entry in official.load(category):
            result.entries[category] += 1
            result.entries_by_id[entry.id] = entry
            for case in cases(entry):
                key = (entry.id, case.label)
                result.cases[case.label.split(":")[0]] += 1
                ours = _our_outcome(entry, case)
                theirs = _official_outcome(official, entry, case)
                if case.label == "ground_truth" and not (ours.passed and theirs.passed):
                    result.ground_truth_failures[entry.id] = (ours, theirs)
                if ours.passed != theirs.passed or theirs.raised is not None:
                    result.disagreements[key] = (ours, theirs)
                    result.cases_by_key[key] = case
                elif not ours.passed and ours.error_type != theirs.error_type:
                    result.error_type_differences[key] = (ours, theirs)
    _print_summary(result)
    return result


def _print_summary(result: Comparison) -> None:
    reasons = Counter(KNOWN_DISAGREEMENTS.get(key, "UNEXPLAINED") for key in result.disagreements)
    print()
    print(f"entries compared: {sum(result.entries.values())} {dict(result.entries)}")
    perturbations = sum(result.cases.values()) - result.cases["ground_truth"]
    print(f"perturbations compared: {perturbations} {dict(result.cases)}")
    print(f"pass/fail disagreements: {len(result.disagreements)}")
    for reason, count in reasons.items():
        print(f"  {count} x {reason}")
    print(f"error-type differences when both fail: {len(result.error_type_differences)}")
    print(f"ground truths not passed by both: {len(result.ground_truth_failures)}")


def _listing(items: dict[Any, tuple[Outcome, Outcome]]) -> str:
    return "\n".join(
        f"  {key}: ours {ours.describe()}, BFCL {theirs.describe()}"
        for key, (ours, theirs) in sorted(items.items())
    )


def test_every_entry_of_every_ast_category_is_compared(comparison: Comparison) -> None:
    assert dict(comparison.entries) == EXPECTED_ENTRIES
    assert comparison.cases["ground_truth"] == sum(EXPECTED_ENTRIES.values())


def test_verdicts_agree_except_listed_disagreements(comparison: Comparison) -> None:
    unexplained = {
        key: outcomes
        for key, outcomes in comparison.disagreements.items()
        if key not in KNOWN_DISAGREEMENTS
    }
    stale = set(KNOWN_DISAGREEMENTS) - set(comparison.disagreements)
    assert not unexplained, "unexplained disagreements:\n" + _listing(unexplained)
    assert not stale, f"listed disagreements that no longer occur: {sorted(stale)}"


def test_error_types_agree_when_both_fail(comparison: Comparison) -> None:
    unexplained = {
        key: outcomes
        for key, outcomes in comparison.error_type_differences.items()
        if key not in KNOWN_ERROR_TYPE_DIFFERENCES
    }
    stale = set(KNOWN_ERROR_TYPE_DIFFERENCES) - set(comparison.error_type_differences)
    assert not unexplained, "unexplained error-type differences:\n" + _listing(unexplained)
    assert not stale, f"listed differences that no longer occur: {sorted(stale)}"


def test_ground_truth_passes_both_unless_unsatisfiable(comparison: Comparison) -> None:
    failing = {
        entry_id: (ours, theirs)
        for entry_id, (ours, theirs) in comparison.ground_truth_failures.items()
        if (entry_id, "ground_truth") not in KNOWN_DISAGREEMENTS
    }
    assert all(not ours.passed and not theirs.passed for ours, theirs in failing.values())
    assert set(failing) == set(UNSATISFIABLE_GROUND_TRUTH), _listing(failing)


def test_greedy_disagreements_have_a_matching_under_bfcls_own_pair_verdicts(
    comparison: Comparison,
) -> None:
    """Where only BFCL rejects parallel calls, its own pairwise verdicts admit a pairing."""
    official = load_official()
    greedy = [key for key, reason in KNOWN_DISAGREEMENTS.items() if reason == GREEDY_FIRST_FIT]
    assert greedy
    for key in greedy:
        ours, theirs = comparison.disagreements[key]
        assert ours.passed
        assert theirs.error_type == "parallel_function_checker_no_order:cannot_find_match"
        entry = comparison.entries_by_id[key[0]]
        calls = comparison.cases_by_key[key].calls
        accepts = [
            [official.pair_passes(entry, call, row) for call in calls]
            for row in range(len(entry.ground_truth))
        ]
        assert any(
            all(accepts[row][column] for row, column in enumerate(order))
            for order in itertools.permutations(range(len(calls)))
        ), key


def test_java_and_javascript_text_converts_as_in_bfcl() -> None:
    """Every argument text the cases produce converts to the same value and type."""
    official = load_official()
    compared: set[tuple[str, str, str | None]] = set()
    differences = []
    for category, ours, theirs in (
        ("simple_java", java_value, official.java_convert),
        ("simple_javascript", js_value, official.js_convert),
    ):
        for entry in official.load(category):
            properties = entry.functions[0]["parameters"]["properties"]
            for case in cases(entry):
                for call in case.calls:
                    for param, text in next(iter(call.values())).items():
                        if param not in properties or not isinstance(text, str):
                            continue
                        spec = properties[param]
                        item_type = spec.get("items", {}).get("type")
                        key = (text, spec["type"], item_type)
                        if key in compared:
                            continue
                        compared.add(key)
                        mine = ours(text, spec["type"], item_type)
                        bfcl = theirs(text, spec["type"], item_type)
                        # repr tells 1 from 1.0 and True from 1.
                        if repr(mine) != repr(bfcl):
                            differences.append((category, key, mine, bfcl))
    print(f"\nJava/JavaScript argument texts converted by both: {len(compared)}")
    assert len(compared) > 500
    assert not differences, differences
