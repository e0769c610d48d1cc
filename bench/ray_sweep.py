"""Sweep throughput with the oracle: this machine's process pool against a Ray cluster.

Runs the same BFCL sweep (single-turn categories by default) with the oracle,
which answers instantly, so what is measured is the harness and the executor:
in process (``--workers 1``), a local pool of 2 worker processes, and Ray with 1 and 2
workers, on a cluster started beforehand (its start and stop are timed apart)
and once starting its own local Ray as ``tooluse bench --executor ray`` does.
Every run's rows are checked against the in-process run's, apart from
timings. Ray's own cost per task is measured with empty tasks.

    python bench/ray_sweep.py [--categories single_turn] [--limit N] [--conventions json]

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--categories", nargs="+", default=["single_turn"])
    parser.add_argument("--limit", type=int, default=None, help="first N entries per category")
    parser.add_argument("--conventions", nargs="+", default=["json"])
    parser.add_argument("--empty-tasks", type=int, default=2000)
    args = parser.parse_args()
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
