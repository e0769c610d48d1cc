"""Benchmark the context store: bulk inserts and BM25 query latency at 100k items.

    .venv/bin/python bench/context.py [--items 100000] [--queries 500] [--repeat 3]

Prints a table, then one JSON line. The peer row is a bare FTS5 table with the same
tokenizer and the same sanitized queries, written to the same kind of file: the gap
between the two is what dedup, namespaces, tags and id aliases cost. Goals: at least
20,000 inserts/s and a median query at or under 5 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from tooluse.context import ContextStore, NewItem, Synchronous, fts_query

SEED = 20260726

_COMMON = """
the a of to and in is for on with that this it as be was error file read write
returned result call tool request response timeout status test failed passed
line function value user query search config path module import class method
string number list key api token model output input data table row column index
update
"""


def vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    """Common words first, then made-up identifiers; sampled with Zipf weights."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = _COMMON.split()
    while len(words) < size:
        words.append("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return words


def corpus(n: int, rng: random.Random) -> list[str]:
    words = vocabulary(rng)
    weights = [1.0 / rank for rank in range(1, len(words) + 1)]
    texts = []
    for i in range(n):
        body = rng.choices(words, weights, k=rng.randint(8, 24))
        # A unique token per item keeps dedup from collapsing the corpus.
        texts.append(" ".join(body) + f" item{i}")
    return texts


def queries(n: int, rng: random.Random) -> list[str]:
    words = vocabulary(random.Random(SEED))
    weights = [1.0 / rank for rank in range(1, len(words) + 1)]
    nasty = ["c++ API-keys", "error: timeout", '"foo', "AND", "a.b", "NEAR(", "", "🙂 search"]
    out = []
    for i in range(n):
        if i % 10 == 0:
            out.append(nasty[(i // 10) % len(nasty)])
        elif i % 10 == 1:
            out.append(f"what did item{rng.randrange(100_000)} say")
        else:
            out.append(" ".join(rng.choices(words, weights, k=rng.randint(1, 6))))
    return out


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float  # this process's CPU time: less disturbed by other load on the machine


def timed(fn: Callable[[], object]) -> Timing:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return Timing(time.perf_counter() - wall, time.process_time() - cpu)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_store_insert(texts: list[str], workdir: Path, run: int) -> tuple[Timing, Path]:
    path = workdir / f"store{run}.db"
    items = [NewItem(f"obs-{i}", text, "observation", ("bench",)) for i, text in enumerate(texts)]
    with ContextStore(path, "bench") as store:
        timing = timed(lambda: store.put_many(items))
    return timing, path


def bench_peer_insert(texts: list[str], workdir: Path, run: int) -> tuple[Timing, Path]:
    path = workdir / f"peer{run}.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(
        "CREATE VIRTUAL TABLE docs USING fts5 "
        "(text, tokenize = 'porter unicode61 remove_diacritics 2')"
    )

    def insert() -> None:
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO docs (text) VALUES (?)", ((t,) for t in texts))
        conn.execute("COMMIT")

    timing = timed(insert)
    conn.close()
    return timing, path


def bench_single_puts(workdir: Path, synchronous: Synchronous, n: int) -> Timing:
    path = workdir / f"single-{synchronous}.db"
    with ContextStore(path, "bench", synchronous=synchronous) as store:
        return timed(
            lambda: [store.put(f"s{i}", f"single put {i}", kind="observation") for i in range(n)]
        )


def bench_store_queries(path: Path, qs: list[str]) -> list[Timing]:
    with ContextStore(path, "bench") as store:
        store.query("warm up the page cache", 10)
        return [timed(partial(store.query, q, 10)) for q in qs]


def bench_peer_queries(path: Path, qs: list[str]) -> list[Timing]:
    conn = sqlite3.connect(path)
    sql = "SELECT rowid, text, rank FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT 10"

    def one(q: str) -> None:
        match = fts_query(q)
        if match is not None:
            conn.execute(sql, (match,)).fetchall()

    one("warm up the page cache")
    latencies = [timed(partial(one, q)) for q in qs]
    conn.close()
    return latencies


def bench_window(messages: int, budget: int, rounds: int = 200) -> list[float]:
    """Per-round window assembly (make room if needed, then build the request's list).

    A conversation of `messages` messages (calls and results, as in a long run)
    is loaded; then each round adds one result and assembles the window, as the
    loop does before every request. Returns seconds per round.
    """
    from tooluse import Message, ToolCall
    from tooluse._tokens import count_tokens
    from tooluse.context._window import ContextPolicy, ContextWindow

    policy = ContextPolicy(budget=budget, agent_tools=False)
    window = ContextWindow(policy, ContextStore(":memory:"), count_tokens, run_id="bench")
    rng = random.Random(SEED)
    counter = 0

    def add_turn() -> None:
        nonlocal counter
        counter += 1
        call = ToolCall(f"c{counter}", "read", json.dumps({"n": counter}))
        window.add(Message("assistant", None, (call,), id=f"m{2 * counter + 1}"))
        text = " ".join(rng.choice(_COMMON.split()) for _ in range(rng.randint(20, 120)))
        window.add(
            Message("tool", text, tool_call_id=call.id, name="read", id=f"m{2 * counter + 2}")
        )

    window.add(Message("system", "You are a careful agent.", id="m1"))
    window.add(Message("user", "Work through the task.", id="m2"))
    while 2 * counter + 2 < messages:
        add_turn()
        window.enforce(200)
    times = []
    for _ in range(rounds):
        add_turn()
        start = time.perf_counter()
        window.enforce(200)
        window.messages()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3, help="bulk-insert runs (median kept)")
    parser.add_argument("--single-puts", type=int, default=500)
    args = parser.parse_args()

    rng = random.Random(SEED)
    texts = corpus(args.items, rng)
    qs = queries(args.queries, rng)
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        store_runs = [bench_store_insert(texts, workdir, run) for run in range(args.repeat)]
        peer_runs = [bench_peer_insert(texts, workdir, run) for run in range(args.repeat)]
        single_normal = bench_single_puts(workdir, "NORMAL", args.single_puts)
        single_full = bench_single_puts(workdir, "FULL", args.single_puts)
        store_lat = bench_store_queries(store_runs[0][1], qs)
        peer_lat = bench_peer_queries(peer_runs[0][1], qs)

    def rate(runs: list[tuple[Timing, Path]], n: int, clock: str) -> float:
        return float(statistics.median(n / getattr(timing, clock) for timing, _ in runs))

    def ms(latencies: list[Timing], q: float, clock: str) -> float:
        return 1000 * percentile([getattr(t, clock) for t in latencies], q)

    n = args.items
    rows = [
        (
            "bulk insert (put_many), items/s",
            *(f"{rate(store_runs, n, c):,.0f}" for c in ("wall", "cpu")),
            *(f"{rate(peer_runs, n, c):,.0f}" for c in ("wall", "cpu")),
        ),
        (
            "single put, synchronous=NORMAL, /s",
            f"{args.single_puts / single_normal.wall:,.0f}",
            f"{args.single_puts / single_normal.cpu:,.0f}",
            "-",
            "-",
        ),
        (
            "single put, synchronous=FULL, /s",
            f"{args.single_puts / single_full.wall:,.0f}",
            f"{args.single_puts / single_full.cpu:,.0f}",
            "-",
            "-",
        ),
    ]
    for label, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99), ("max", 1.0)):
        rows.append(
            (
                f"query {label}, ms",
                *(f"{ms(store_lat, q, c):.2f}" for c in ("wall", "cpu")),
                *(f"{ms(peer_lat, q, c):.2f}" for c in ("wall", "cpu")),
            )
        )

    roomy = bench_window(1_000, budget=10_000_000)
    tight = bench_window(1_000, budget=24_000)
    for label, times in (
        ("window, 1,000 msgs, no offload", roomy),
        ("window, under budget pressure", tight),
    ):
        rows.append(
            (
                f"{label}, p50 ms",
                f"{1000 * percentile(times, 0.5):.3f}",
                "-",
                "-",
                "-",
            )
        )

    print(
        f"context store: {n:,} items, {args.queries:,} queries (top 10), SQLite"
        f" {sqlite3.sqlite_version}, {os.cpu_count()} CPUs, load average {load_before:.1f}"
        f" before / {os.getloadavg()[0]:.1f} after"
    )
    print(f"{'':<36}{'ContextStore':^24}{'bare FTS5':^24}")
    print(f"{'measure':<36}" + f"{'wall':>12}{'cpu':>12}" * 2)
    print("-" * 84)
    for name, *cells in rows:
        print(f"{name:<36}" + "".join(f"{cell:>12}" for cell in cells))

    summary = {
        "bench": "context",
        "items": n,
        "queries": args.queries,
        "sqlite": sqlite3.sqlite_version,
        "load_average": round(load_before, 2),
        "insert_per_s": round(rate(store_runs, n, "wall")),
        "insert_per_s_cpu": round(rate(store_runs, n, "cpu")),
        "insert_per_s_runs": [round(n / timing.wall) for timing, _ in store_runs],
        "peer_insert_per_s": round(rate(peer_runs, n, "wall")),
        "single_put_per_s_normal": round(args.single_puts / single_normal.wall),
        "single_put_per_s_full": round(args.single_puts / single_full.wall),
        "query_p50_ms": round(ms(store_lat, 0.5, "wall"), 3),
        "query_p95_ms": round(ms(store_lat, 0.95, "wall"), 3),
        "query_p99_ms": round(ms(store_lat, 0.99, "wall"), 3),
        "query_p50_ms_cpu": round(ms(store_lat, 0.5, "cpu"), 3),
        "peer_query_p50_ms": round(ms(peer_lat, 0.5, "wall"), 3),
        "peer_query_p95_ms": round(ms(peer_lat, 0.95, "wall"), 3),
        "insert_goal_met": rate(store_runs, n, "wall") >= 20_000,
        "query_goal_met": ms(store_lat, 0.5, "wall") <= 5.0,
        "window_1000_p50_ms": round(1000 * percentile(roomy, 0.5), 4),
        "window_1000_p95_ms": round(1000 * percentile(roomy, 0.95), 4),
        "window_budgeted_p50_ms": round(1000 * percentile(tight, 0.5), 4),
        "window_budgeted_p95_ms": round(1000 * percentile(tight, 0.95), 4),
        "window_goal_met": 1000 * percentile(roomy, 0.5) <= 1.0,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
