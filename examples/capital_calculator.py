"""A capital lookup followed by a calculation.

python -m examples.capital_calculator
"""

from examples._common import run_scenario

TASK = "What is the capital of France? Also compute sqrt(144) + 2**10."

if __name__ == "__main__":
    run_scenario("capital_calculator.jsonl", TASK)
