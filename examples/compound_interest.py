"""Compound interest, composed from calculator calls, each using the result of the one before.

python -m examples.compound_interest
"""

from examples._common import run_scenario

TASK = (
    "Compute the compound interest on $1000 at 5% for 3 years, then divide it by log2 of 8 billion."
)

if __name__ == "__main__":
    run_scenario("compound_interest.jsonl", TASK)
