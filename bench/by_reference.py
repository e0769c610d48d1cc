"""Data by reference, measured: fan-out with large per-item results, with handles and without.

Runs the fan-out suite (discovered variant) with the oracle at a range of widths N,
where each ``get_stock`` result is a record of about 2 KB (its count first, then a
history of movements), in three ways:

* ``json``: JSON calling, every result shown whole (``Limits(result_limit=None)``);
* ``json+handles``: JSON calling, each record over the result limit shown as a
  handle with its shape and a preview (``--limit`` characters, default 1,000);
* ``code``: programmatic calling, the records stay in the script.

It counts input tokens per entry offline (o200k), fits one line per way and reports
each slope and the crossover N* of each JSON way against code, as
``bench/costmodel.py`` does for the plain suite.

    python bench/by_reference.py [--widths 1 2 5 10 20 40] [--record-chars 2000]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from tooluse.eval import FanoutTask, crossover, evaluate, fit_line
from tooluse.sandbox import Sandbox

WAYS = {"json": ("json", None), "json+handles": ("json", "limit"), "code": ("code", None)}


def measure(widths: list[int], record_chars: int, limit: int) -> dict[str, list[int]]:
    async def run(sandbox: Sandbox) -> dict[str, list[int]]:
        tokens: dict[str, list[int]] = {way: [] for way in WAYS}
        for width in widths:
            for way, (convention, handles) in WAYS.items():
                task = FanoutTask(
                    "discovered",
                    width,
                    record_chars=record_chars,
                    result_limit=limit if handles else None,
                )
                row = await evaluate(task, convention, sandbox=sandbox)
                if not row.correct:
                    raise SystemExit(f"the oracle failed {task.id} ({way}): {row}")
                tokens[way].append(row.input_tokens)
        return tokens

    with Sandbox() as sandbox:
        return asyncio.run(run(sandbox))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[1, 2, 5, 10, 20, 30, 40])
    parser.add_argument("--record-chars", type=int, default=2_000, help="size of each result")
    parser.add_argument("--limit", type=int, default=1_000, help="result limit with handles")
    args = parser.parse_args()

    tokens = measure(args.widths, args.record_chars, args.limit)
    fits = {way: fit_line(args.widths, series) for way, series in tokens.items()}
    results: list[dict[str, Any]] = []
    for way in ("json", "json+handles"):
        c = crossover(fits[way], fits["code"])
        results.append(
            {
                "way": way,
                "intercept": round(fits[way].intercept, 1),
                "slope": round(fits[way].slope, 1),
                "slope_se": round(fits[way].slope_se, 1),
                "n_star": None if c.n_star is None else round(c.n_star, 2),
                "n_star_se": None if c.n_star_se is None else round(c.n_star_se, 2),
            }
        )
    code = fits["code"]
    print(
        f"input tokens per entry against N (o200k), fan-out/discovered, records of "
        f"~{args.record_chars:,} characters, handles over {args.limit:,} characters"
    )
    print(f"{'N':>6}" + "".join(f"{way:>15}" for way in WAYS))
    for i, width in enumerate(args.widths):
        print(f"{width:>6}" + "".join(f"{tokens[way][i]:>15,}" for way in WAYS))
    print(f"code: {code.intercept:,.0f} + {code.slope:.1f} N")
    for r in results:
        n_star = "none" if r["n_star"] is None else f"{r['n_star']:.2f} ± {r['n_star_se']:.2f}"
        print(f"{r['way']}: {r['intercept']:,.0f} + {r['slope']:.1f} N; N* against code {n_star}")
    plain, handled = results
    share = 1 - (handled["slope"] - code.slope) / (plain["slope"] - code.slope)
    print(f"a handle removes {share:.0%} of JSON's per-item cost above code's")
    print(
        json.dumps(
            {
                "bench": "by_reference",
                "tokenizer": "o200k",
                "widths": args.widths,
                "record_chars": args.record_chars,
                "limit": args.limit,
                "tokens": tokens,
                "code": {"intercept": round(code.intercept, 1), "slope": round(code.slope, 2)},
                "results": results,
                "share_of_gap_removed": round(share, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
