"""Sandbox benchmark: tooluse's isolated runner against in-process peers, same scripts.

Run: .venv/bin/python bench/sandbox.py [--quick] [--no-peers]

Rows:
- startup: Sandbox() to ready (bubblewrap, fork server, first pre-forked worker).
- script latency: a trivial script, request to result, p50/p95.
- tool call round trip: a script making sequential calls to a sync ``echo`` tool of a
  Toolbox, as ``run_script`` and the agent make them: each call validated by the
  dispatcher, run under its timeout on the thread that reads the script's channel, and
  recorded. Per call, after subtracting the same way's trivial script latency. The same
  calls answered on the event loop by a bare ``Sandbox.execute`` handler (``async``, and a
  plain function) are reported under the table.
- fan-out: 100 calls to a host tool that sleeps 20 ms, issued concurrently.
- cpu loop: a million-iteration loop, request to result, and its ratio to plain CPython
  ``exec`` of the same code in this process, measured alternately with it.

Peers, where installed and able to run the same script: smolagents' LocalPythonExecutor
(an in-process AST interpreter, not a security boundary) and pydantic-monty (a Rust
interpreter in worker processes). A peer that cannot run a script is skipped with a note.
Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from tooluse import Toolbox, arun_script, tool
from tooluse.sandbox import Handler, IsolationMode, ProxySpec, Sandbox, SandboxLimits, ToolReply

TRIVIAL = "x = 1\nprint(x)"
LOOP = "total = 0\nfor i in range(1_000_000):\n    total += i\nprint(total)"
GOALS = {
    "script_p50_ms": 15.0,
    "call_round_trip_us": 100.0,
    "fanout_100x20ms_ms": 60.0,
    "cpu_loop_ratio": 1.2,
}


def sequential_calls(n: int) -> str:
    return f"total = 0\nfor i in range({n}):\n    total += echo(i)\nprint(total)"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


# -- tooluse -------------------------------------------------------------------------------


@tool
def echo(x: int) -> int:
    """Return x."""
    return x


ECHO_TOOLBOX = Toolbox([echo])


async def bench_tooluse(isolation: IsolationMode, args: argparse.Namespace) -> dict[str, Any]:
    async def handler(name: str, arguments: dict[str, object]) -> ToolReply:
        if name == "slow":
            await asyncio.sleep(0.02)
        return ToolReply.ok(arguments.get("x"))

    def plain_handler(name: str, arguments: dict[str, object]) -> ToolReply:
        return ToolReply.ok(arguments.get("x"))

    tools = [ProxySpec("echo", ["x"]), ProxySpec("slow", ["x"])]
    limits = SandboxLimits(max_calls=None, max_concurrent_calls=100)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = Sandbox(isolation=isolation, limits=limits)
        sb.start()
    startup = time.perf_counter() - started
    out: dict[str, Any] = {"isolation": sb.isolation, "startup_ms": startup * 1000}
    try:

        async def run(script: str, host: Handler = handler) -> float:
            begin = time.perf_counter()
            result = await sb.execute(script, tools=tools, handler=host, timeout=60)
            if result.status != "ok":
                raise RuntimeError(f"tooluse failed: {result.error}")
            return time.perf_counter() - begin

        for _ in range(5):
            await run(TRIVIAL)
        latencies = [await run(TRIVIAL) for _ in range(args.scripts)]
        out["script_p50_ms"] = statistics.median(latencies) * 1000
        out["script_p95_ms"] = percentile(latencies, 0.95) * 1000

        async def run_toolbox(script: str) -> float:
            begin = time.perf_counter()
            result = await arun_script(sb, script, ECHO_TOOLBOX, timeout=60)
            if result.status != "ok":
                raise RuntimeError(f"tooluse failed: {result.error}")
            return time.perf_counter() - begin

        calls_script = "from tools import echo\n" + sequential_calls(args.calls)
        for _ in range(3):
            await run_toolbox(TRIVIAL)
        trivial = statistics.median([await run_toolbox(TRIVIAL) for _ in range(args.scripts)])
        with_calls = statistics.median([await run_toolbox(calls_script) for _ in range(5)])
        out["call_round_trip_us"] = (with_calls - trivial) / args.calls * 1e6
        trivial = statistics.median(latencies)
        for key, host in [("async_handler", handler), ("plain_handler", plain_handler)]:
            with_calls = statistics.median([await run(calls_script, host) for _ in range(3)])
            out[f"call_round_trip_{key}_us"] = (with_calls - trivial) / args.calls * 1e6

        fanout = "import tools\nr = tools.parallel(tools.slow, range(100))\nassert len(r) == 100"
        out["fanout_100x20ms_ms"] = statistics.median([await run(fanout) for _ in range(3)]) * 1000
        gather = (
            "import asyncio, tools\n"
            "r = await asyncio.gather(*(tools.slow.aio(i) for i in range(100)))\n"
            "assert len(r) == 100"
        )
        out["fanout_gather_ms"] = statistics.median([await run(gather) for _ in range(3)]) * 1000

        loop_runs, plain_runs = [], []
        for _ in range(3):
            plain_runs.append(cpython_loop())
            loop_runs.append(await run(LOOP))
        out["cpu_loop_ms"] = statistics.median(loop_runs) * 1000
        out["cpu_loop_ratio"] = statistics.median(loop_runs) / statistics.median(plain_runs)
    finally:
        sb.close()
    return out


# -- peers ---------------------------------------------------------------------------------


def bench_smolagents(args: argparse.Namespace) -> dict[str, Any]:
    try:
        from smolagents.local_python_executor import (  # type: ignore[import-untyped]
            LocalPythonExecutor,
        )
    except ImportError:
        return {"skipped": "smolagents is not installed"}

    def echo(x: object) -> object:
        return x

    def make() -> Any:
        executor = LocalPythonExecutor(additional_authorized_imports=[])
        executor.send_tools({"echo": echo})
        return executor

    executor = make()
    latencies = timed(lambda: executor(TRIVIAL), args.scripts)
    out: dict[str, Any] = {
        "isolation": "none (in-process AST interpreter)",
        "script_p50_ms": statistics.median(latencies) * 1000,
        "script_p95_ms": percentile(latencies, 0.95) * 1000,
    }
    calls = statistics.median(timed(lambda: executor(sequential_calls(args.calls)), 3))
    out["call_round_trip_us"] = (calls - out["script_p50_ms"] / 1000) / args.calls * 1e6
    out["fanout_100x20ms_ms"] = None
    out["fanout_note"] = "no concurrency: asyncio and threads are not available to scripts"
    if args.quick:
        out["cpu_loop_ms"] = None
        out["cpu_loop_note"] = "skipped with --quick (about 10 s)"
    else:
        plain = cpython_loop()
        out["cpu_loop_ms"] = timed(lambda: executor(LOOP), 1)[0] * 1000
        out["cpu_loop_ratio"] = out["cpu_loop_ms"] / 1000 / plain
    return out


def bench_monty(args: argparse.Namespace) -> dict[str, Any]:
    try:
        import pydantic_monty as pm
    except ImportError:
        return {"skipped": "pydantic-monty is not installed"}

    def echo(x: object) -> object:
        return x

    out: dict[str, Any] = {"isolation": "worker process running a Rust interpreter"}
    with pm.Monty() as pool:

        def run(code: str) -> None:
            with pool.checkout() as session:
                session.feed_run(
                    code, external_lookup={"echo": echo}, print_callback=pm.CollectString()
                )

        for _ in range(3):
            run(TRIVIAL)
        latencies = timed(lambda: run(TRIVIAL), args.scripts)
        out["script_p50_ms"] = statistics.median(latencies) * 1000
        out["script_p95_ms"] = percentile(latencies, 0.95) * 1000
        calls = statistics.median(timed(lambda: run(sequential_calls(args.calls)), 3))
        out["call_round_trip_us"] = (calls - out["script_p50_ms"] / 1000) / args.calls * 1e6
        loop_runs, plain_runs = [], []
        for _ in range(3):
            plain_runs.append(cpython_loop())
            loop_runs.append(timed(lambda: run(LOOP), 1)[0])
        out["cpu_loop_ms"] = statistics.median(loop_runs) * 1000
        out["cpu_loop_ratio"] = statistics.median(loop_runs) / statistics.median(plain_runs)

    async def fanout() -> float:
        async def slow(x: object) -> object:
            await asyncio.sleep(0.02)
            return x

        code = (
            "import asyncio\n"
            "async def main():\n"
            "    return await asyncio.gather(*[slow(i) for i in range(100)])\n"
            "r = await main()\n"
            "assert len(r) == 100\n"
        )
        async with pm.AsyncMonty() as pool:
            samples = []
            for _ in range(3):
                async with pool.checkout() as session:
                    begin = time.perf_counter()
                    await session.feed_run(code, external_lookup={"slow": slow})
                    samples.append(time.perf_counter() - begin)
        return statistics.median(samples)

    out["fanout_100x20ms_ms"] = asyncio.run(fanout()) * 1000
    return out


def cpython_loop() -> float:
    """One run of the loop with plain ``exec`` in this process, in seconds.

    Each runner measures it next to its own runs, so that the ratio compares runs made
    under the same machine load.
    """
    code = compile(LOOP, "<loop>", "exec")
    with open(os.devnull, "w") as sink:
        stdout, sys.stdout = sys.stdout, sink
        try:
            return timed(lambda: exec(code, {}), 1)[0]
        finally:
            sys.stdout = stdout


# -- report --------------------------------------------------------------------------------


def fmt(value: object, unit: str) -> str:
    if value is None:
        return "n/a"
    assert isinstance(value, float)
    return f"{value:,.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, skip slow peer rows")
    parser.add_argument("--no-peers", action="store_true", help="measure tooluse only")
    args = parser.parse_args()
    args.scripts = 20 if args.quick else 60
    args.calls = 200 if args.quick else 1000

    cpython_ms = statistics.median([cpython_loop() for _ in range(5)]) * 1000
    rows: dict[str, dict[str, Any]] = {}
    rows["tooluse"] = asyncio.run(bench_tooluse("auto", args))
    rows["tooluse (no isolation)"] = asyncio.run(bench_tooluse("none", args))
    if not args.no_peers:
        rows["smolagents"] = bench_smolagents(args)
        rows["monty"] = bench_monty(args)
    columns = [
        ("script p50", "script_p50_ms", "ms"),
        ("script p95", "script_p95_ms", "ms"),
        ("call rt", "call_round_trip_us", "µs"),
        ("fan-out 100×20ms", "fanout_100x20ms_ms", "ms"),
        ("1M loop", "cpu_loop_ms", "ms"),
        ("vs CPython", "cpu_loop_ratio", "×"),
    ]
    width = 24
    print(f"{'runner':<{width}}" + "".join(f"{title:>18}" for title, _, _ in columns))
    for name, row in rows.items():
        if "skipped" in row:
            print(f"{name:<{width}}  skipped: {row['skipped']}")
            continue
        print(f"{name:<{width}}" + "".join(f"{fmt(row.get(k), u):>18}" for _, k, u in columns))
    goal_row = "".join(
        f"{('≤ ' + fmt(GOALS[k], u)) if k in GOALS else '':>18}" for _, k, u in columns
    )
    print(f"{'goal (full isolation)':<{width}}" + goal_row)
    print(f"\nplain CPython exec of the 1M loop: {cpython_ms:.0f} ms")
    for name, row in rows.items():
        extra = {k: v for k, v in row.items() if k.endswith(("note", "isolation", "startup_ms"))}
        if "fanout_gather_ms" in row:
            extra["fan-out with asyncio.gather"] = f"{row['fanout_gather_ms']:.1f} ms"
        for key, title in [("async", "an async"), ("plain", "a plain-function")]:
            if f"call_round_trip_{key}_handler_us" in row:
                bare = row[f"call_round_trip_{key}_handler_us"]
                extra[f"call rt with {title} handler"] = f"{bare:.0f} µs"
        if extra:
            print(f"{name}: " + "; ".join(f"{k}={_short(v)}" for k, v in extra.items()))
    load = os.getloadavg()[0]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average {load:.2f}")
    print(
        json.dumps(
            {
                "bench": "sandbox",
                "cpython_loop_ms": cpython_ms,
                "load_average": load,
                "goals": GOALS,
                "runners": rows,
            },
            default=str,
        )
    )


def _short(value: object) -> str:
    return f"{value:.1f} ms" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    main()
