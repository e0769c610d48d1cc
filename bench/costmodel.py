"""The token cost model of Patel et al. (2026), measured on this harness with the oracle.

Runs the fan-out suite at a range of widths N in both conventions with the
oracle (the ground truth as native calls, or as one canonical script), counts
input tokens offline (o200k), fits one line per convention and reports the
intercepts (S; P + ℓ₀), the slopes (c_a + c_r + c_o; γ) and the crossover N*
with its standard error, beside the same arithmetic on the two widths
Patel et al. (2026) measured.

    python bench/costmodel.py [--widths 1 2 5 10 20 40 60 80 100] [--variant discovered listed]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from tooluse._tokens import count_tokens
from tooluse.conventions import CodeConvention
from tooluse.eval import Crossover, FanoutTask, crossover, evaluate, fit_line, paper_crossover
from tooluse.sandbox import Sandbox


def fixed_blocks(variant: str) -> dict[str, int]:
    """What each convention adds to every request, counted the way the runtime counts it."""
    tools = FanoutTask(variant, 1).setup().turns[0].tools
    schemas = sum(count_tokens(t.name + t.description + json.dumps(t.parameters)) for t in tools)
    return {"json_schemas": schemas, "code_prompt": count_tokens(CodeConvention().prompt(tools))}


def measure(variant: str, widths: list[int], sandbox: Sandbox) -> dict[str, list[int]]:
    async def run() -> dict[str, list[int]]:
        tokens: dict[str, list[int]] = {"json": [], "code": []}
        for width in widths:
            task = FanoutTask(variant, width)
            for convention, series in tokens.items():
                row = await evaluate(task, convention, sandbox=sandbox)
                if not row.correct:
                    raise SystemExit(f"the oracle failed {task.id} ({convention}): {row}")
                series.append(row.input_tokens)
        return tokens

    return asyncio.run(run())


def describe(name: str, c: Crossover) -> dict[str, Any]:
    return {
        "source": name,
        "S": round(c.json.intercept, 1),
        "S_se": round(c.json.intercept_se, 1),
        "json_slope": round(c.json.slope, 2),
        "json_slope_se": round(c.json.slope_se, 2),
        "P_plus_l0": round(c.code.intercept, 1),
        "P_plus_l0_se": round(c.code.intercept_se, 1),
        "gamma": round(c.code.slope, 2),
        "gamma_se": round(c.code.slope_se, 2),
        "n_star": None if c.n_star is None else round(c.n_star, 2),
        "n_star_se": None if c.n_star_se is None else round(c.n_star_se, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--widths", type=int, nargs="+", default=[1, 2, 5, 10, 15, 20, 30, 40, 50, 60, 80, 100]
    )
    parser.add_argument("--variant", nargs="+", default=["discovered", "listed"])
    args = parser.parse_args()

    results = [describe("Patel et al. 2026 (2 widths)", paper_crossover())]
    with Sandbox() as sandbox:
        for variant in args.variant:
            tokens = measure(variant, args.widths, sandbox)
            fits = crossover(
                fit_line(args.widths, tokens["json"]), fit_line(args.widths, tokens["code"])
            )
            results.append({**describe(f"ours: fanout/{variant}", fits), **fixed_blocks(variant)})

    print(f"input tokens per entry against N (o200k), widths {args.widths}")
    header = f"{'source':<30}{'S':>14}{'c_a+c_r+c_o':>15}{'P+l0':>14}{'gamma':>13}{'N*':>15}"
    print(header)
    print("-" * len(header))
    for r in results:
        n_star = "none" if r["n_star"] is None else f"{r['n_star']:.1f} ± {r['n_star_se']:.1f}"
        print(
            f"{r['source']:<30}{r['S']:>8,.0f} ± {r['S_se']:<3.0f}"
            f"{r['json_slope']:>8.1f} ± {r['json_slope_se']:<4.1f}"
            f"{r['P_plus_l0']:>8,.0f} ± {r['P_plus_l0_se']:<3.0f}"
            f"{r['gamma']:>7.1f} ± {r['gamma_se']:<3.1f}{n_star:>15}"
        )
    for r in results[1:]:
        print(
            f"{r['source']}: per request, the JSON tool schemas are {r['json_schemas']} tokens "
            f"and the code prompt (convention text and stubs) {r['code_prompt']} tokens"
        )
    print(
        json.dumps(
            {"bench": "costmodel", "tokenizer": "o200k", "widths": args.widths, "results": results}
        )
    )


if __name__ == "__main__":
    main()
