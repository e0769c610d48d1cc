"""Whole runs on the local models: does each call what it needs, then answer from it?

    .venv/bin/python bench/local_turns.py [--models qwen2.5-coder-1.5b,qwen2.5-coder-0.5b]
                                          [--max-rounds 6]

BFCL scores a model's first reply. This runs short tasks to the end over the five
example tools (`examples/seed_tools.py`), JSON convention, tool choice auto,
constrained, no system prompt from the caller, for each installed model twice: with
the system prompts the registry gives it (`--model local:NAME`) and with its chat
template's default (`local:PATH.gguf`). A task passes when every call it needs was
made and the answer holds the facts those calls returned; `repeats` counts calls
identical to an earlier call of the same run. Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _options import add_models

from examples.seed_tools import toolbox
from tooluse import Agent
from tooluse.models import LocalModel
from tooluse.models._registry import Registry


@dataclass(frozen=True)
class Task:
    text: str
    #: (tool, a value one of its arguments must hold, case-insensitive)
    needs: tuple[tuple[str, str], ...]
    #: patterns the answer must match (case-insensitive)
    facts: tuple[str, ...]
    #: patterns the answer must not match
    wrong: tuple[str, ...] = ()


TASKS = (
    Task(
        "What is the weather in Paris, France right now? Use the tool.",
        (("get_current_weather", "paris"),),
        (r"\b18\b",),
    ),
    Task("What's the weather in Paris?", (("get_current_weather", "paris"),), (r"\b18\b",)),
    Task("What is the capital of Japan?", (("lookup_capital", "japan"),), ("tokyo",)),
    Task(
        "What is the weather in Paris and in London?",
        (("get_current_weather", "paris"), ("get_current_weather", "london")),
        (r"\b18\b", r"\b14\b"),
    ),
    Task(
        "Convert 100 USD to EUR and tell me if it's enough for a €85 hotel room",
        (("get_exchange_rate", "usd"),),
        (r"\b92\b", "enough"),
        (r"not (be )?enough", "insufficient"),
    ),
)


def run(model: LocalModel, task: Task, max_rounds: int) -> dict[str, Any]:
    started = time.perf_counter()
    result = Agent(model, toolbox, max_rounds=max_rounds).run(task.text)
    made = [(c.name, json.dumps(c.arguments, sort_keys=True)) for c in result.calls]
    repeats = len(made) - len(set(made))
    called = all(
        any(name == tool and value in args.lower() for name, args in made)
        for tool, value in task.needs
    )
    answer = result.answer or ""
    right = all(re.search(p, answer, re.I) for p in task.facts) and not any(
        re.search(p, answer, re.I) for p in task.wrong
    )
    return {
        "task": task.text,
        "status": result.status,
        "calls": len(made),
        "repeats": repeats,
        "passed": result.status == "completed" and called and right,
        "seconds": round(time.perf_counter() - started, 1),
        "answer": answer[:160],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_models(parser)
    parser.add_argument("--max-rounds", type=int, default=6)
    args = parser.parse_args()
    registry = Registry()
    rows: list[dict[str, Any]] = []
    for name in args.models.split(","):
        if registry.find(name) is None:
            print(f"{name}: not installed (tooluse models pull {name})", file=sys.stderr)
            continue
        entry, path = registry[name], registry.locate(name)
        prompts = {
            "registry": (entry.default_system, entry.parallel_system),
            "template": (None, None),
        }
        for label, (default_system, parallel_system) in prompts.items():
            model = LocalModel(path, default_system=default_system, parallel_system=parallel_system)
            for task in TASKS:
                rows.append({"model": name, "prompt": label, **run(model, task, args.max_rounds)})
    print(f"{'model':<20}{'prompt':<10}{'pass':>5}{'calls':>6}{'repeats':>8}  status    task")
    for r in rows:
        print(
            f"{r['model']:<20}{r['prompt']:<10}{'yes' if r['passed'] else 'no':>5}"
            f"{r['calls']:>6}{r['repeats']:>8}  {r['status']:<9} {r['task'][:40]}"
        )
    totals = {
        f"{m} {p}": sum(r["passed"] for r in rows if r["model"] == m and r["prompt"] == p)
        for m, p in dict.fromkeys((r["model"], r["prompt"]) for r in rows)
    }
    for key, passed in totals.items():
        print(f"{key}: {passed}/{len(TASKS)} passed")
    print(json.dumps({"bench": "local_turns", "passed": totals, "rows": rows}))


if __name__ == "__main__":
    main()
