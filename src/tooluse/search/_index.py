"""`ToolIndex`: BM25 over a toolbox, in SQLite's FTS5.

Each tool is one row of four columns: its name split into words, its
description, its parameters' names and descriptions, and the values its enums
allow. Rows are ranked by FTS5's ``bm25`` with the name weighted highest. A
query is read the way the context store reads one (`fts_query`): every word is
quoted and the words are OR-ed, so nothing a model writes is parsed as FTS5
syntax. Common English words are dropped first, and, as the store's planner
does, a query keeps its rarest words only up to a budget of matched rows: a
word found in thousands of tools costs milliseconds and weighs almost nothing
in BM25.

The index remembers a fingerprint of what it indexed (each tool's name,
description and parameters); `sync` rebuilds it when the toolbox differs.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..context._store import fts_query, rarest_within
from ..tools import Tool, Toolbox

__all__ = ["SearchHit", "ToolIndex", "tool_fingerprint"]

_TOKENIZER = "porter unicode61 remove_diacritics 2"
#: Column weights for bm25(): name, description, parameters, enum values.
_WEIGHTS = (4.0, 2.0, 1.0, 0.5)

_STOPWORDS = frozenset(
    re.split(
        r"\s+",
        """a an and are as at be by can could do does for from give have how i in is it
        its me my of on or our please should so than that the their them then there these
        this to us was we what when where which who why will with would you your""".strip(),
    )
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A tool a search found; `score` is the negated BM25 rank (higher is better)."""

    name: str
    score: float


def _name_words(name: str) -> str:
    """``get_exchangeRate.v2`` → ``get_exchangeRate.v2 get exchange Rate v2``."""
    spaced = _CAMEL.sub(" ", name)
    return f"{name} {re.sub(r'[^0-9A-Za-z]+', ' ', spaced)}"


def _walk(schema: Any) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every named property of a schema, nested ones included."""
    if isinstance(schema, Mapping):
        props = schema.get("properties")
        if isinstance(props, Mapping):
            for key, sub in props.items():
                if isinstance(sub, Mapping):
                    yield str(key), sub
                    yield from _walk(sub)
        for nested in ("items", "$defs", "definitions"):
            value = schema.get(nested)
            if isinstance(value, Mapping):
                if nested == "items":
                    yield from _walk(value)
                else:
                    for sub in value.values():
                        yield from _walk(sub)
        for combined in ("anyOf", "oneOf", "allOf"):
            for sub in schema.get(combined) or ():
                yield from _walk(sub)


def _document(tool: Tool) -> tuple[str, str, str, str]:
    params: list[str] = []
    enums: list[str] = []
    for key, prop in _walk(tool.parameters):
        params.append(_name_words(key))
        doc = prop.get("description")
        if isinstance(doc, str):
            params.append(doc)
        for value in prop.get("enum") or ():
            enums.append(str(value))
    return _name_words(tool.name), tool.description or "", "\n".join(params), " ".join(enums)


def tool_fingerprint(tools: Iterable[Tool]) -> str:
    """A hash of what the index covers: each tool's name, description and parameters."""
    digest = hashlib.sha256()
    for t in tools:
        digest.update(t.name.encode())
        digest.update(b"\0")
        digest.update((t.description or "").encode())
        digest.update(b"\0")
        digest.update(json.dumps(t.parameters, sort_keys=True, default=str).encode())
        digest.update(b"\1")
    return digest.hexdigest()


def query_words(text: str) -> str:
    """The query with common English words left out (all of it if nothing else is left)."""
    words = re.findall(r"[^\W_]+", text)
    kept = [w for w in words if w.casefold() not in _STOPWORDS]
    return " ".join(kept or words)


class ToolIndex:
    """A full-text index of a toolbox's tools, kept in memory.

    Safe to share between threads (one connection behind a lock): tools run on
    worker threads, and a search is one.
    """

    #: A query keeps its rarest words while they match about this many tools in all
    #: (or a tenth of the toolbox, if more).
    max_rows = 1_000

    def __init__(self, tools: Toolbox | Iterable[Tool] = ()) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._lock = threading.Lock()
        self._names: list[str] = []
        self._by_name: dict[str, int] = {}
        self.fingerprint = ""
        self.builds = 0
        self._db.execute("PRAGMA temp_store = MEMORY")
        self._db.execute(
            f"CREATE VIRTUAL TABLE temp.query_words USING fts5 (word, tokenize = '{_TOKENIZER}')"
        )
        self._db.execute(
            "CREATE VIRTUAL TABLE temp.query_tokens USING fts5vocab (temp, query_words, 'instance')"
        )
        self._doc_freq: dict[str, int] = {}
        self.sync(tools)

    def __len__(self) -> int:
        return len(self._names)

    def sync(self, tools: Toolbox | Iterable[Tool]) -> bool:
        """Index `tools` unless they are what is indexed already; True if it rebuilt."""
        listed = list(tools)
        fingerprint = tool_fingerprint(listed)
        if fingerprint == self.fingerprint:
            return False
        with self._lock:
            db = self._db
            db.execute("DROP TABLE IF EXISTS tools")
            db.execute(
                "CREATE VIRTUAL TABLE tools USING fts5"
                f" (name, description, params, enums, tokenize = '{_TOKENIZER}')"
            )
            db.executemany(
                "INSERT INTO tools (rowid, name, description, params, enums)"
                " VALUES (?, ?, ?, ?, ?)",
                ((i, *_document(t)) for i, t in enumerate(listed)),
            )
            db.execute("INSERT INTO tools (tools) VALUES ('optimize')")
            db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.index_terms"
                " USING fts5vocab (main, tools, 'row')"
            )
            self._doc_freq = dict(db.execute("SELECT term, doc FROM temp.index_terms"))
            db.commit()
            self._names = [t.name for t in listed]
            self._by_name = {name.casefold(): i for i, name in enumerate(self._names)}
            self.fingerprint = fingerprint
            self.builds += 1
        return True

    def search(self, query: str, top_k: int = 5) -> list[SearchHit]:
        """The `top_k` best tools for `query`, best first; [] if it has no words or no match.

        A query that is exactly a tool's name finds that tool first.
        """
        if top_k < 1:
            return []
        exact = self._by_name.get(query.strip().casefold())
        hits: list[SearchHit] = []
        if exact is not None:
            hits.append(SearchHit(self._names[exact], float("inf")))
        weights = ", ".join(str(w) for w in _WEIGHTS)
        with self._lock:
            match = fts_query(" ".join(self._rarest(query_words(query))))
            if match is None:
                return hits[:top_k]
            rows = self._db.execute(
                f"SELECT rowid, bm25(tools, {weights}) AS r FROM tools WHERE tools MATCH ?"
                " ORDER BY r LIMIT ?",
                (match, top_k + 1),
            ).fetchall()
        for rowid, rank in rows:
            if rowid != exact:
                hits.append(SearchHit(self._names[rowid], -float(rank)))
        return hits[:top_k]

    def _rarest(self, text: str) -> list[str]:
        """The query's words, rarest first, as many as match about `max_rows` tools in all."""
        words = list(dict.fromkeys(w.casefold() for w in re.findall(r"[^\W_]+", text)))[:64]
        if not words:
            return []
        db = self._db
        db.execute("DELETE FROM temp.query_words")
        db.executemany("INSERT INTO temp.query_words (rowid, word) VALUES (?, ?)", enumerate(words))
        stems: dict[int, str] = dict(db.execute("SELECT doc, term FROM temp.query_tokens"))
        costed = ((self._doc_freq.get(stems.get(i, ""), 0), word) for i, word in enumerate(words))
        return rarest_within(costed, max(self.max_rows, len(self._names) // 10))

    def names(self) -> Sequence[str]:
        return tuple(self._names)

    def close(self) -> None:
        with self._lock:
            self._db.close()
