"""The USD→EUR hotel trace: the validator catches a typo'd argument key
(`traget`), the model reads the error and corrects itself.

    python -m examples.hotel
"""

from examples._common import run_scenario

TASK = "Convert 100 USD to EUR and tell me if it's enough for a €85 hotel room."

if __name__ == "__main__":
    run_scenario("hotel.jsonl", TASK)
