"""Benchmark tool search against peers: recall and latency over every distinct BFCL function.

    .venv/bin/python bench/toolsearch.py [--sizes all,10000] [--seed 0]

The corpus and queries are those of ``tooluse bench toolsearch``: each simple_* and
multiple entry's question, its ground-truth function the target; the 10,000 point is
padded with generated tools. Rows: our `ToolIndex` (FTS5 BM25 with field weights,
stemming, common words dropped, rarest words kept); a bare FTS5 table of the same text
in one column, queried with the same sanitized words (what the field weights and word
selection add); and bm25s (a sparse-matrix BM25, with its English stopwords, no
stemmer) when importable. Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from tooluse.context import fts_query
from tooluse.eval._toolsearch import Query, _toolbox, bfcl_catalogue, bfcl_queries
from tooluse.search import ToolIndex
from tooluse.search._index import _document
from tooluse.tools import Tool

Search = Callable[[str, int], list[str]]


@dataclass
class Figures:
    engine: str
    size: int
    build_ms: float
    recall_1: float
    recall_5: float
    mrr: float
    p50_ms: float
    p95_ms: float


def ours(tools: Sequence[Tool]) -> Search:
    index = ToolIndex(tools)
    return lambda q, k: [h.name for h in index.search(q, k)]


def bare_fts5(tools: Sequence[Tool]) -> Search:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5 (body, tokenize = 'porter unicode61')")
    db.executemany(
        "INSERT INTO t (rowid, body) VALUES (?, ?)",
        ((i, " ".join(_document(tool))) for i, tool in enumerate(tools)),
    )
    db.commit()
    names = [t.name for t in tools]

    def search(q: str, k: int) -> list[str]:
        match = fts_query(q)
        if match is None:
            return []
        rows = db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT ?", (match, k))
        return [names[r] for (r,) in rows]

    return search


def bm25s_engine(tools: Sequence[Tool]) -> Search | None:
    try:
        import bm25s  # type: ignore[import-not-found]
    except ImportError:
        return None
    corpus = [" ".join(_document(t)) for t in tools]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False
    )
    names = [t.name for t in tools]

    def search(q: str, k: int) -> list[str]:
        tokens = bm25s.tokenize([q], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        docs, _ = retriever.retrieve(tokens, k=min(k, len(names)), show_progress=False)
        return [names[int(i)] for i in docs[0]]

    return search


def measure(
    engine: str, build: Callable[[], Search | None], size: int, qs: Sequence[Query]
) -> Figures | None:
    start = time.perf_counter()
    search = build()
    build_ms = (time.perf_counter() - start) * 1000
    if search is None:
        return None
    ranks: list[int | None] = []
    latencies: list[float] = []
    for q in qs:
        t = time.perf_counter()
        found = search(q.text, 10)
        latencies.append((time.perf_counter() - t) * 1000)
        ranks.append(found.index(q.target) + 1 if q.target in found else None)
    latencies.sort()
    n = len(ranks)
    return Figures(
        engine,
        size,
        round(build_ms, 1),
        sum(1 for r in ranks if r == 1) / n,
        sum(1 for r in ranks if r is not None and r <= 5) / n,
        sum(1 / r for r in ranks if r is not None) / n,
        round(statistics.median(latencies), 3),
        round(latencies[int(0.95 * (n - 1))], 3),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="all,10000", help="comma-separated: all or N")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    catalogue = bfcl_catalogue()
    qs = bfcl_queries()
    targets = {q.target for q in qs}
    results: list[Figures] = []
    for part in args.sizes.split(","):
        size = len(catalogue) if part == "all" else int(part)
        tools = _toolbox(catalogue, size, targets, args.seed)
        mine = [q for q in qs if q.target in {t.name for t in tools}]
        engines: list[tuple[str, Callable[[Sequence[Tool]], Search | None]]] = [
            ("tooluse ToolIndex", ours),
            ("bare FTS5, one column", bare_fts5),
            ("bm25s", bm25s_engine),
        ]
        for engine, build in engines:
            figures = measure(engine, partial(build, tools), len(tools), mine)
            if figures is not None:
                results.append(figures)
    print(f"{'engine':24} {'tools':>7} {'build ms':>9} {'R@1':>6} {'R@5':>6} {'MRR':>6} "
          f"{'p50 ms':>7} {'p95 ms':>7}")  # fmt: skip
    for f in results:
        print(f"{f.engine:24} {f.size:>7,} {f.build_ms:>9.1f} {f.recall_1:>6.3f} "
              f"{f.recall_5:>6.3f} {f.mrr:>6.3f} {f.p50_ms:>7.3f} {f.p95_ms:>7.3f}")  # fmt: skip
    print(json.dumps({"bench": "toolsearch", "rows": [vars(f) for f in results]}))


if __name__ == "__main__":
    main()
