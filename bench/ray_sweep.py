"""Sweep throughput with the oracle: this machine's process pool against a Ray cluster.

Runs the same BFCL sweep (single-turn categories by default) with the oracle,
which answers instantly, so what is measured is the harness and the executor:
in process (``--workers 1``), a local pool of 2 worker processes, and Ray with 1 and 2
workers, on a cluster started beforehand (its start and stop are timed apart)
and once starting its own local Ray as ``tooluse bench --executor ray`` does.
Every run's rows are checked against the in-process run's, apart from
timings. Ray's own cost per task is measured with empty tasks.

    python bench/ray_sweep.py [--categories single_turn] [--limit N] [--conventions json]

With ``--plan``, it instead works out what a big sweep against a hosted model
would take: the oracle runs the first ``--limit`` entries of every BFCL
category in every convention (on Ray), each category's model requests per
entry are scaled to its full size, and the total over ``--seeds`` is set
against the provider's requests per minute and the cluster's size.

    python bench/ray_sweep.py --plan [--limit 20] [--seeds 5] [--rpm 500] [--nodes 100]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from tooluse.eval import Bench, BenchConfig, RayOptions, Row, SuiteOptions


def _timeless(rows: list[Row]) -> dict[Any, dict[str, Any]]:
    return {r.key: {k: v for k, v in r.to_json().items() if k != "wall_s"} for r in rows}


def sweep(
    name: str, options: SuiteOptions, conventions: tuple[str, ...], **config: Any
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as out:
        bench = BenchConfig(
            "bfcl", out=Path(out), options=options, conventions=conventions, **config
        )
        marks: list[float] = []
        start = time.perf_counter()
        rows = Bench(bench).run(on_row=lambda row: marks.append(time.perf_counter()))
        wall = time.perf_counter() - start
    first = marks[0] - start if marks else 0.0
    steady = (len(marks) - 1) / (marks[-1] - marks[0]) if len(marks) > 1 else 0.0
    return {
        "run": name,
        "entries": len(rows),
        "wall_s": wall,
        "entries_per_s": len(rows) / wall if wall else 0.0,
        "first_row_s": first,
        "steady_entries_per_s": steady,
        "rows": rows,
    }


def empty_task_overhead(ray: Any, count: int) -> dict[str, float]:
    """Microseconds per empty task: submitted all at once, and one at a time."""

    def nothing() -> None:
        return None

    remote = ray.remote(num_cpus=1)(nothing)
    ray.get([remote.remote() for _ in range(20)])  # workers up
    start = time.perf_counter()
    ray.get([remote.remote() for _ in range(count)])
    batched = (time.perf_counter() - start) / count
    start = time.perf_counter()
    for _ in range(count // 4):
        ray.get(remote.remote())
    serial = (time.perf_counter() - start) / (count // 4)
    return {"batched_us": batched * 1e6, "round_trip_us": serial * 1e6}


def plan(args: argparse.Namespace) -> None:
    """The worked estimate of a full BFCL sweep against a rate-limited hosted model."""
    from tooluse.eval import build_tasks
    from tooluse.eval.bfcl import MULTI_TURN_CATEGORIES, SINGLE_TURN_CATEGORIES

    categories = (*SINGLE_TURN_CATEGORIES, *MULTI_TURN_CATEGORIES)
    sizes: dict[str, int] = {}
    for task in build_tasks("bfcl", SuiteOptions(categories=categories)):
        sizes[task.category] = sizes.get(task.category, 0) + 1
    conventions = ("json", "code", "text")
    measured = sweep("oracle sample", SuiteOptions(categories=categories, limit=args.limit),
                     conventions, workers=2, executor="ray")  # fmt: skip
    rows: list[Row] = measured["rows"]
    per_entry: dict[tuple[str, str], float] = {}
    for category in categories:
        for convention in conventions:
            group = [r for r in rows if r.category == category and r.convention == convention]
            per_entry[category, convention] = sum(r.rounds for r in group) / len(group)
    requests = {
        convention: sum(per_entry[c, convention] * sizes[c] for c in categories)
        for convention in conventions
    }
    entries = sum(sizes.values()) * len(conventions) * args.seeds
    total = sum(requests.values()) * args.seeds
    minutes = total / args.rpm
    # Requests in flight needed to keep the provider at its limit.
    in_flight = args.rpm / 60 * args.latency
    cpus = args.nodes * args.cpus_per_node
    ray_cpu_s = entries * args.task_overhead_us / 1e6

    print(f"BFCL, every category ({sum(sizes.values())} entries), oracle sample of {args.limit} "
          f"per category: model requests per entry")  # fmt: skip
    print(f"{'category':26} {'entries':>8} " + " ".join(f"{c:>6}" for c in conventions))
    for category in categories:
        print(f"{category:26} {sizes[category]:>8} "
              + " ".join(f"{per_entry[category, c]:>6.2f}" for c in conventions))  # fmt: skip
    print(f"{'requests, one seed':26} {'':>8} "
          + " ".join(f"{requests[c]:>6.0f}" for c in conventions))  # fmt: skip
    print(f"{len(conventions)} conventions x {args.seeds} seeds: {entries} entries, "
          f"{total:.0f} model requests (the oracle's count: a lower bound)")  # fmt: skip
    print(f"at {args.rpm} requests/min: {minutes:.0f} min = {minutes / 60:.1f} h, "
          f"whatever the cluster's size")  # fmt: skip
    print(f"in flight to hold the limit at {args.latency:g} s per request: {in_flight:.0f} "
          f"requests, of {cpus} CPUs on {args.nodes} nodes")  # fmt: skip
    print(f"Ray's own cost at {args.task_overhead_us:g} µs per task: {ray_cpu_s:.0f} CPU-s "
          f"over the sweep")  # fmt: skip
    print(
        json.dumps(
            {
                "bench": "ray_sweep_plan",
                "sample_per_category": args.limit,
                "category_sizes": sizes,
                "requests_per_entry": {f"{c}/{v}": n for (c, v), n in per_entry.items()},
                "requests_one_seed": requests,
                "seeds": args.seeds,
                "entries": entries,
                "requests": total,
                "rpm": args.rpm,
                "minutes": minutes,
                "in_flight_needed": in_flight,
                "nodes": args.nodes,
                "ray_cpu_s": ray_cpu_s,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--categories", nargs="+", default=["single_turn"])
    parser.add_argument("--limit", type=int, default=None, help="first N entries per category")
    parser.add_argument("--conventions", nargs="+", default=["json"])
    parser.add_argument("--empty-tasks", type=int, default=2000)
    parser.add_argument("--plan", action="store_true", help="estimate a full sweep instead")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rpm", type=float, default=500, help="the provider's requests/min")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--cpus-per-node", type=int, default=8)
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per model request")
    parser.add_argument("--task-overhead-us", type=float, default=600.0)
    args = parser.parse_args()
    if args.plan:
        plan(args)
        return
    options = SuiteOptions(categories=tuple(args.categories), limit=args.limit)
    conventions = tuple(args.conventions)

    import ray

    sweep("warm-up", options, conventions)  # BFCL's data read once, imports done
    runs = [
        sweep("local --workers 1 (in process)", options, conventions, workers=1),
        sweep("local --workers 2", options, conventions, workers=2),
        # Starts a local Ray for the sweep and stops it after, as the CLI does.
        sweep("ray 2 workers, own start", options, conventions, workers=2, executor="ray"),
    ]
    start = time.perf_counter()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        logging_level=logging.ERROR,
        log_to_driver=False,
    )
    ray_start = time.perf_counter() - start
    try:
        for workers in (1, 2):
            runs.append(
                sweep(
                    f"ray {workers} workers, cluster up",
                    options,
                    conventions,
                    workers=workers,
                    executor="ray",
                    ray=RayOptions(),
                )
            )
        overhead = empty_task_overhead(ray, args.empty_tasks)
    finally:
        start = time.perf_counter()
        ray.shutdown()
        ray_stop = time.perf_counter() - start

    reference = _timeless(runs[0]["rows"])
    for run in runs:
        run["same_rows"] = _timeless(run.pop("rows")) == reference
    by_name = {run["run"]: run for run in runs}
    local2 = by_name["local --workers 2"]["entries_per_s"]
    ratio_up = by_name["ray 2 workers, cluster up"]["entries_per_s"] / local2
    ratio_own = by_name["ray 2 workers, own start"]["entries_per_s"] / local2

    print(f"BFCL {', '.join(args.categories)}, {', '.join(conventions)}, oracle; "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    print(f"{'run':30} {'entries':>8} {'wall s':>8} {'entries/s':>10} {'first row s':>12} "
          f"{'steady/s':>9} {'same rows':>10}")  # fmt: skip
    for run in runs:
        print(f"{run['run']:30} {run['entries']:>8} {run['wall_s']:>8.2f} "
              f"{run['entries_per_s']:>10.1f} {run['first_row_s']:>12.2f} "
              f"{run['steady_entries_per_s']:>9.1f} {run['same_rows']!s:>10}")  # fmt: skip
    print(f"ray.init (2 CPUs, no dashboard) {ray_start:.2f} s, ray.shutdown {ray_stop:.2f} s")
    print(f"empty Ray task: {overhead['batched_us']:.0f} µs each submitted together, "
          f"{overhead['round_trip_us']:.0f} µs one round trip at a time")  # fmt: skip
    print(f"Ray 2 workers / local --workers 2: {ratio_up:.2f}x with the cluster up, "
          f"{ratio_own:.2f}x starting its own Ray")  # fmt: skip
    print(
        json.dumps(
            {
                "bench": "ray_sweep",
                "categories": args.categories,
                "conventions": list(conventions),
                "runs": runs,
                "ray_init_s": ray_start,
                "ray_shutdown_s": ray_stop,
                "empty_task": overhead,
                "ray2_over_local2_cluster_up": ratio_up,
                "ray2_over_local2_own_start": ratio_own,
            }
        )
    )


if __name__ == "__main__":
    main()
