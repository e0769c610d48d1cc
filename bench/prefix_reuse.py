"""Prompt tokens evaluated per round on a local model, with the evaluated prefix kept and without.

A local model keeps the tokens it evaluated for the last request, and the next
request evaluates only what follows the part they share: the tools and system
prompt come first and are never reordered, so from the second round on a round
evaluates its new messages alone. This runs one task to the end with a registered
local model and reports, per round, the prompt's tokens, the tokens reused from the
round before and the tokens evaluated, and what evaluating the whole prompt every
round would have cost.

    python bench/prefix_reuse.py [--model qwen2.5-coder-1.5b] [--task TEXT]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples.seed_tools import toolbox
from tooluse import Agent
from tooluse.models import LocalModel, ModelRequest, ModelResponse

TASK = "Convert 100 USD to EUR and tell me if it's enough for a 85 EUR hotel room."


class Measured(LocalModel):
    """A local model that keeps the decoding stats of each request it answers."""

    rounds: list[dict[str, Any]]

    def respond_sync(self, request: ModelRequest, *args: Any, **kwargs: Any) -> ModelResponse:
        response = super().respond_sync(request, *args, **kwargs)
        stats = self.last_stats
        self.rounds.append(
            {
                "prompt": stats.prompt_tokens,
                "reused": stats.reused_tokens,
                "evaluated": stats.prompt_tokens - stats.reused_tokens,
                "prefill_s": round(stats.prefill_seconds, 2),
            }
        )
        return response


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="a registered local model")
    parser.add_argument("--task", default=TASK)
    args = parser.parse_args()

    model = Measured(args.model)
    model.rounds = []
    result = Agent(model, toolbox, max_rounds=6).run(args.task)
    print(f"{args.model}: {result.status}, {len(result.calls)} calls; {args.task}")
    print(f"{'round':>6}{'prompt':>9}{'reused':>9}{'evaluated':>11}{'prefill s':>11}")
    for i, r in enumerate(model.rounds, 1):
        print(f"{i:>6}{r['prompt']:>9,}{r['reused']:>9,}{r['evaluated']:>11,}{r['prefill_s']:>11}")
    whole = sum(r["prompt"] for r in model.rounds)
    evaluated = sum(r["evaluated"] for r in model.rounds)
    print(f"evaluated {evaluated:,} of {whole:,} prompt tokens ({evaluated / whole:.0%})")
    print(
        json.dumps(
            {
                "bench": "prefix_reuse",
                "model": args.model,
                "status": result.status,
                "rounds": model.rounds,
                "prompt_tokens": whole,
                "evaluated_tokens": evaluated,
            }
        )
    )


if __name__ == "__main__":
    main()
