"""Benchmark what recording a run costs: a durable agent against a plain one, per call and
per model request, on SQLite and on Postgres over loopback, with a bare DBOS step as anchor.

    .venv/bin/python bench/durable.py [--calls 200] [--postgres URL | --no-postgres]

Prints a table, then one JSON line. Each database is measured in a process of its own
(DBOS is one per process). In it: a bare DBOS step (a workflow running ``--calls``
empty steps), then the same agent plain and durable: the code convention, one script
making ``--calls`` calls (the cost per call), and the json convention, ``--calls //
4`` turns of one call each (the cost per round: one model request and one call; less
the cost per call, the cost per model request). The model is a `ScriptedModel`, so
what is measured is the runtime and the database, not a model. Without ``--postgres``,
a Postgres server is started in a temporary folder when Debian's ``postgresql`` is
installed (as tests/durable/test_postgres.py does). Goal: a durable call costs at most
1.5 times a bare DBOS step.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def _child(url: str, calls: int) -> dict[str, float]:
    """Seconds per unit of each measure, for the database at ``url`` (in this process)."""
    from dbos import DBOS

    from tooluse import Agent, tool
    from tooluse._messages import Message
    from tooluse.models import ScriptedModel

    @DBOS.step(name="bench.empty")
    async def empty() -> int:
        return 1

    @DBOS.workflow(name="bench.steps")
    async def steps(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            await empty()
        return time.perf_counter() - start

    @tool(effects="read")
    def lookup(key: str) -> int:
        """Look a number up.

        Args:
            key: what to look up
        """
        return len(key)

    script = f"```python\nprint(sum(tools.lookup(key=str(i)) for i in range({calls})))\n```"

    def code_reply(messages: Sequence[Message]) -> dict[str, Any] | str:
        asked = sum(1 for m in messages if m.role == "assistant")
        return {"content": script} if asked == 0 else "done"

    turns = max(calls // 4, 1)

    def json_reply(messages: Sequence[Message]) -> dict[str, Any] | str:
        done = sum(1 for m in messages if m.role == "tool")
        if done >= turns:
            return "done"
        arguments = json.dumps({"key": str(done)})
        call = {"id": f"c{done}", "type": "function",
                "function": {"name": "lookup", "arguments": arguments}}  # fmt: skip
        return {"tool_calls": [call]}

    def timed(agent: Agent, run_id: str | None) -> float:
        start = time.perf_counter()
        result = agent.run("add them up", **({"run_id": run_id} if run_id else {}))
        assert result.status == "completed", result.error
        return time.perf_counter() - start

    out: dict[str, float] = {}
    for convention, reply, units in (("code", code_reply, calls), ("json", json_reply, turns)):
        plain = Agent(ScriptedModel(reply), [lookup], convention=convention, isolation="none",
                      max_rounds=turns + 2)  # fmt: skip
        durable = Agent(ScriptedModel(reply), [lookup], convention=convention,
                        isolation="none", max_rounds=turns + 2, durable=url)  # fmt: skip
        if convention == "code":
            out["bare_step"] = asyncio.run(steps(calls)) / calls
        timed(plain, None)  # warm: the sandbox started, the modules loaded
        timed(durable, f"warm-{convention}-{time.time_ns()}")
        out[f"plain_{convention}"] = timed(plain, None) / units
        out[f"durable_{convention}"] = timed(durable, f"{convention}-{time.time_ns()}") / units
        plain.close()
        durable.close()
    return out


@contextmanager
def _own_postgres() -> Iterator[str | None]:
    """A Postgres server in a temporary folder (Debian's binaries), or None without them."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if not found or shutil.which("runuser") is None:
        yield None
        return
    bin_dir, folder = found[-1], Path(tempfile.mkdtemp(prefix="tooluse-bench-pg-"))
    shutil.chown(folder, "postgres", "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def as_postgres(*argv: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *argv], check=True, capture_output=True)

    data = str(folder / "data")
    as_postgres(f"{bin_dir}/initdb", "-D", data, "-A", "trust", "-U", "postgres")
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1"
    as_postgres(f"{bin_dir}/pg_ctl", "-D", data, "-l", str(folder / "log"), "-o", options, "-w",
                "start")  # fmt: skip
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/tooluse_bench"
    finally:
        as_postgres(f"{bin_dir}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)


def _measure(url: str, calls: int) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", url, "--calls", str(calls)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"the measure on {url} failed:\n{proc.stderr}")
    measured: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return measured


def _row(database: str, m: dict[str, float]) -> dict[str, Any]:
    per_call = m["durable_code"] - m["plain_code"]
    per_round = m["durable_json"] - m["plain_json"]
    return {
        "database": database,
        "bare_step_ms": round(m["bare_step"] * 1e3, 2),
        "plain_call_ms": round(m["plain_code"] * 1e3, 3),
        "durable_call_ms": round(m["durable_code"] * 1e3, 2),
        "call_overhead_ms": round(per_call * 1e3, 2),
        "call_vs_bare_step": round(per_call / m["bare_step"], 2),
        "plain_round_ms": round(m["plain_json"] * 1e3, 2),
        "durable_round_ms": round(m["durable_json"] * 1e3, 2),
        "model_request_overhead_ms": round((per_round - per_call) * 1e3, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per measure")
    parser.add_argument("--postgres", help="a Postgres URL to measure (default: start one)")
    parser.add_argument("--no-postgres", action="store_true", help="measure SQLite only")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.calls)))
        return
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        rows.append(_row("sqlite", _measure(f"sqlite:///{folder}/runs.sqlite", args.calls)))
    skipped: dict[str, str] = {}
    if args.postgres:
        rows.append(_row("postgres", _measure(args.postgres, args.calls)))
    elif not args.no_postgres:
        with _own_postgres() as url:
            if url is None:
                skipped["postgres"] = "Debian's postgresql is not installed"
            else:
                rows.append(_row("postgres", _measure(url, args.calls)))
    header = (
        f"{'database':<10}{'bare step':>11}{'plain call':>12}{'durable call':>14}"
        f"{'call +':>9}{'× step':>8}{'plain round':>13}{'durable round':>15}{'request +':>11}"
    )
    print(header + "\n" + "-" * len(header))
    for r in rows:
        print(
            f"{r['database']:<10}{r['bare_step_ms']:>9.2f}ms{r['plain_call_ms']:>10.3f}ms"
            f"{r['durable_call_ms']:>12.2f}ms{r['call_overhead_ms']:>7.2f}ms"
            f"{r['call_vs_bare_step']:>8.2f}{r['plain_round_ms']:>11.2f}ms"
            f"{r['durable_round_ms']:>13.2f}ms{r['model_request_overhead_ms']:>9.2f}ms"
        )
    for name, why in skipped.items():
        print(f"{name:<10} skipped: {why}")
    summary = {"bench": "durable", "calls": args.calls, "rows": rows, "skipped": skipped,
               "python": sys.version.split()[0]}  # fmt: skip
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
