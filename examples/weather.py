"""Two weather lookups made in parallel in one turn.

python -m examples.weather
"""

from examples._common import run_scenario

TASK = "What's the weather in Paris, and in Tokyo in Fahrenheit?"

if __name__ == "__main__":
    run_scenario("weather.jsonl", TASK)
