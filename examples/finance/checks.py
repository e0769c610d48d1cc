"""Predicates the finance evals name as ``examples.finance.checks:NAME``.

A predicate takes the answer, or the answer and the `RunResult`, and returns a bool.
"""

from __future__ import annotations

import re

from tooluse import RunResult


def paid_once(answer: str, result: RunResult) -> bool:
    """Exactly one payment went through in the run."""
    return sum(1 for call in result.calls if call.name == "pay_bill" and call.ok) == 1


def quotes_confirmation(answer: str) -> bool:
    """The answer gives the payment's confirmation code."""
    return re.search(r"\bCONF-B\d\b", answer) is not None
