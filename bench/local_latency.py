"""Time to the first valid call on the demo task, per local model, with the model warm.

    .venv/bin/python bench/local_latency.py [--models qwen2.5-coder-1.5b,qwen2.5-coder-0.5b]
                                            [--repeat 3]

For each registered model that is installed: load it, answer one other request
over the same five example tools (which leaves the system prompt and the tools'
descriptions evaluated in the context, as the earlier rounds of a run do), then
time `LocalModel.respond` on the demo task ("Convert 100 USD to EUR …"), tool
choice auto, constrained, `--repeat` times, each time after that other request
again so the task's own tokens are evaluated afresh. Reports the median seconds,
the tokens reused from the prefix, evaluated and sampled, and which call came
back. Goal: the first valid call within 3 s on 2 cores. A cold row (the first
request after loading, nothing reused) is printed beside it. Prints a table,
then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

# `examples` ships with the checkout, not with the package: find it beside bench/.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _options import add_models, add_repeat

from examples.seed_tools import toolbox
from tooluse import Message
from tooluse.models import LocalModel, ModelRequest
from tooluse.models._registry import RegisteredModel, Registry

TASK = "Convert 100 USD to EUR and tell me if it's enough for a €85 hotel room"
OTHER = "What is the weather in Paris, France right now?"


def request(task: str) -> ModelRequest:
    return ModelRequest([Message("user", task)], list(toolbox), "auto")


def timed(model: LocalModel, task: str) -> tuple[float, Any]:
    started = time.perf_counter()
    response = model.respond_sync(request(task))
    return time.perf_counter() - started, response


def measure(name: str, path: Path, repeat: int, entry: RegisteredModel) -> dict[str, Any]:
    # As `--model local:NAME` builds it, with the registry's system prompts for the model.
    model = LocalModel(
        path,
        max_output_tokens=96,
        default_system=entry.default_system,
        parallel_system=entry.parallel_system,
    )
    model.compiler()  # load the model and its tokenizer: not part of a warm request
    cold, _ = timed(model, TASK)
    times: list[float] = []
    response: Any = None
    for _ in range(repeat):
        timed(model, OTHER)
        seconds, response = timed(model, TASK)
        times.append(seconds)
    stats = model.last_stats
    calls = [f"{c.name}({c.arguments})" for c in response.tool_calls] or ["(no call)"]
    return {
        "model": name,
        "cold_s": cold,
        "warm_s": statistics.median(times),
        "reused": stats.reused_tokens,
        "evaluated": stats.prompt_tokens - stats.reused_tokens,
        "sampled": stats.sampled_tokens,
        "forced": stats.forced_tokens,
        "calls": calls,
        "valid": not response.problems and bool(response.tool_calls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_models(parser)
    add_repeat(parser)
    args = parser.parse_args()
    registry = Registry()
    rows = []
    for name in args.models.split(","):
        path = registry.find(name)
        if path is None:
            print(f"{name}: not installed (tooluse models pull {name})", file=sys.stderr)
            continue
        rows.append(measure(name, registry.locate(name), args.repeat, registry[name]))
    print(
        f"{'model':<20}{'cold':>8}{'warm':>8}{'reused':>8}{'evaluated':>11}"
        f"{'sampled':>9}{'forced':>8}  first call"
    )
    for r in rows:
        print(
            f"{r['model']:<20}{r['cold_s']:>7.1f}s{r['warm_s']:>7.1f}s{r['reused']:>8}"
            f"{r['evaluated']:>11}{r['sampled']:>9}{r['forced']:>8}  {'; '.join(r['calls'])}"
        )
    print(json.dumps({"bench": "local_latency", "task": TASK, "rows": rows}))


if __name__ == "__main__":
    main()
