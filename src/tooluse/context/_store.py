"""A durable, searchable store for context moved out of an agent's window.

`ContextStore` keeps offloaded or compressed material in SQLite (standard library
`sqlite3`, WAL journal, FTS5 full-text index ranked by BM25) so that the agent can
query it back later. One database file holds any number of namespaces (runs,
sessions); a store instance reads and writes exactly one of them.

Semantics a caller relies on:

* **Dedup on write.** A text is stored once per namespace. The first id it was
  stored under is its *canonical* id; putting the same text under another id
  records that id as an alias and returns the existing item, so
  `put("b", same_text).item_id == "a"`. `get("b")` resolves the alias. Tags given
  with a duplicate are merged into the stored item (they are retrieval keys, and
  dropping them would make the text unfindable by them); `kind` and `meta` keep
  their first values. `count()`, `page()` and `query()` see each text once.
* **Append-only.** Nothing is overwritten. Putting a different text under an id
  that is already used in the namespace raises `ItemIdConflictError`; putting the
  same id and text again is an idempotent no-op that returns the stored item.
* **Durability.** `put` and `put_many` commit before they return. With the default
  ``synchronous="NORMAL"`` a commit has been handed to the operating system (WAL
  frames written) when it returns, so killing the process, even with SIGKILL,
  loses nothing that was reported stored; an operating-system crash or power loss
  may lose the last commits. ``synchronous="FULL"`` fsyncs every commit and
  survives those too, at the cost of one fsync per `put` (batches pay one per
  `put_many`).
* **Threads and asyncio.** One connection per store (shared with the views made
  by `with_namespace`), opened with ``check_same_thread=False`` and guarded by a
  lock, so any thread may call any method. Calls block: a `put` or a typical
  `query` takes about a millisecond, but from async code prefer
  ``await asyncio.to_thread(store.put_many, items)`` for large batches. Other
  processes may open the same file; writers wait up to `timeout` seconds for one
  another.
* **Queries never raise on their text.** The query is split into words, each word
  is quoted as an FTS5 string and the words are OR-ed, so operators, punctuation,
  unbalanced quotes and emoji are searched for (or ignored) rather than parsed.
  Scores are positive; higher is better. BM25 statistics are computed over the
  whole file, so other namespaces influence scores but never results. In a large
  store a query's most common words are left out once its rarer words already
  match about `ContextStore.max_query_rows` items (see `ContextStore.query`).
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Self

from tooluse._exceptions import UsageError

from .._closing import Closing

__all__ = [
    "ContextStore",
    "Hit",
    "ItemIdConflictError",
    "NewItem",
    "Page",
    "StoredItem",
    "Synchronous",
    "fts_query",
]

Synchronous = Literal["NORMAL", "FULL"]

# A query of a few thousand distinct words would make FTS5 walk as many posting
# lists; the first words carry the intent, so the tail is dropped.
_MAX_QUERY_TERMS = 64

_TOKENIZER = "porter unicode61 remove_diacritics 2"

# Mirrors FTS5's unicode61 tokenizer closely enough: runs of letters and digits.
# Underscore is a separator there, so it is one here.
_WORD = re.compile(r"[^\W_]+")


class ItemIdConflictError(UsageError):
    """An id already names a different text in this namespace."""

    def __init__(self, namespace: str, item_id: str) -> None:
        super().__init__(
            f"item id {item_id!r} already names a different text in namespace "
            f"{namespace!r}; the store is append-only, so use a new id"
        )
        self.namespace = namespace
        self.item_id = item_id


@dataclass(frozen=True, slots=True)
class StoredItem:
    """An item as stored. `item_id` is the canonical id (see the module docs)."""

    item_id: str
    text: str
    kind: str
    tags: tuple[str, ...]
    meta: dict[str, Any]
    created_at: float


@dataclass(frozen=True, slots=True)
class NewItem:
    """One item for `ContextStore.put_many`."""

    item_id: str
    text: str
    kind: str
    tags: Sequence[str] = ()
    meta: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """A query result; `score` is the negated BM25 rank (higher is better)."""

    item_id: str
    text: str
    score: float
    kind: str
    tags: tuple[str, ...]
    meta: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Page:
    """One page of items in insertion order; `next_cursor` is None on the last page."""

    items: tuple[StoredItem, ...]
    next_cursor: str | None


def fts_query(text: str) -> str | None:
    """Turn arbitrary text into an FTS5 MATCH expression, or None if it has no words.

    Each word becomes a quoted string and the strings are OR-ed, so nothing in
    `text` is read as FTS5 syntax.
    """
    words = _words(text)
    return _match_any(words) if words else None


def rarest_within(costed: Iterable[tuple[int, str]], budget: int) -> list[str]:
    """The words of `costed` (each with the rows it matches), rarest first, as many as
    match about `budget` rows in all: the rarest always. A word that matches nothing
    is left out: it costs nothing, and finds nothing."""
    kept: list[str] = []
    total = 0
    for rows, word in sorted(costed):
        if rows == 0:
            continue
        if kept and total + rows > budget:
            break
        kept.append(word)
        total += rows
    return kept


def _words(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for word in _WORD.findall(text):
        seen.setdefault(word.casefold(), None)
        if len(seen) == _MAX_QUERY_TERMS:
            break
    return list(seen)


def _match_any(words: Iterable[str]) -> str:
    # The words hold only letters and digits, so they cannot contain a quote.
    return " OR ".join(f'"{word}"' for word in words)


class _Planner:
    """Chooses which words of a query are worth sending to FTS5.

    Ranking costs time in proportion to the rows a query matches, so one word found
    in most items ("the"; "error" in a store of logs) makes a query take hundreds of
    milliseconds while adding almost nothing to the ranking, since BM25 weighs a
    word by how rare it is. The planner keeps the rarest words, as many as fit in a
    budget of matched rows, and always at least one. Document frequencies are read
    from the index, file-wide, and cached: a cached frequency only ever
    underestimates (the store is append-only), which can cost time but never drops
    a word that should be kept.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        # Per-connection temp objects: the query tokenizer must be the index's own
        # (porter stemming) and nothing here belongs in the file.
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_words"
            f" USING fts5 (word, tokenize = '{_TOKENIZER}')"
        )
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_tokens"
            " USING fts5vocab (temp, query_words, 'instance')"
        )
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.index_terms"
            " USING fts5vocab (main, items_fts, 'row')"
        )
        self._tokens: dict[str, tuple[str, ...]] = {}
        self._doc_freq: dict[str, int] = {}
        self._rows_when_cached = 0

    def select(self, conn: sqlite3.Connection, words: list[str], budget: int) -> list[str]:
        tokens = self._tokenize(conn, words)
        freq = self._frequencies(conn, {t for word in words for t in tokens[word]})
        costed: dict[tuple[str, ...], tuple[int, str]] = {}
        for word in words:
            toks = tokens[word]
            # A quoted word that tokenizes to several tokens is a phrase: it matches
            # at most as many rows as its rarest token.
            rows = min((freq.get(t, 0) for t in toks), default=0)
            if rows > 0:
                costed.setdefault(toks, (rows, word))
        return rarest_within(costed.values(), budget)

    def _tokenize(self, conn: sqlite3.Connection, words: list[str]) -> dict[str, tuple[str, ...]]:
        missing = [word for word in words if word not in self._tokens]
        if missing:
            if len(self._tokens) > 50_000:
                self._tokens.clear()
            found: dict[int, list[str]] = {}
            conn.execute("DELETE FROM temp.query_words")
            conn.executemany(
                "INSERT INTO temp.query_words (rowid, word) VALUES (?, ?)", enumerate(missing)
            )
            for doc, term in conn.execute(
                "SELECT doc, term FROM temp.query_tokens ORDER BY doc, offset"
            ):
                found.setdefault(doc, []).append(term)
            for i, word in enumerate(missing):
                self._tokens[word] = tuple(found.get(i, ()))
        return {word: self._tokens[word] for word in words}

    def _frequencies(self, conn: sqlite3.Connection, tokens: set[str]) -> dict[str, int]:
        (rows,) = conn.execute("SELECT coalesce(max(pk), 0) FROM items").fetchone()
        if rows > self._rows_when_cached * 5 // 4 + 1_000:
            self._doc_freq.clear()
            self._rows_when_cached = rows
        missing = [t for t in tokens if t not in self._doc_freq]
        for chunk in _chunks(missing):
            marks = ", ".join("?" * len(chunk))
            for term, docs in conn.execute(
                f"SELECT term, doc FROM temp.index_terms WHERE term IN ({marks})", chunk
            ):
                # Absent words are not cached: they may be added at any moment, and a
                # stale zero would hide them.
                self._doc_freq[term] = docs
        return {t: self._doc_freq[t] for t in tokens if t in self._doc_freq}


_to_json = json.JSONEncoder(ensure_ascii=False).encode

# Ordered migrations; PRAGMA user_version records how many have run.
_MIGRATIONS: tuple[str, ...] = (
    f"""
    CREATE TABLE items (
        pk INTEGER PRIMARY KEY,
        namespace TEXT NOT NULL,
        item_id TEXT NOT NULL,
        digest INTEGER NOT NULL,
        kind TEXT NOT NULL,
        tags TEXT NOT NULL,
        meta TEXT NOT NULL,
        created_at REAL NOT NULL,
        text TEXT NOT NULL
    );
    -- Serves paging and counting; pk is the insertion order.
    CREATE INDEX items_by_namespace ON items (namespace, pk);
    -- Finds the candidates for dedup. The digest is 64 bits of a hash: short keys keep
    -- bulk inserts fast, and a match is confirmed by comparing the texts.
    CREATE INDEX items_by_digest ON items (digest);
    CREATE TABLE item_ids (
        namespace TEXT NOT NULL,
        item_id TEXT NOT NULL,
        pk INTEGER NOT NULL REFERENCES items (pk),
        PRIMARY KEY (namespace, item_id)
    ) WITHOUT ROWID;
    -- External content: the text is stored once, in items. The tags column indexes
    -- the JSON list; the tokenizer reads past its brackets and quotes.
    CREATE VIRTUAL TABLE items_fts USING fts5 (
        text, tags,
        content = 'items', content_rowid = 'pk',
        tokenize = '{_TOKENIZER}'
    );
    """,
)

_ITEM_COLUMNS = (
    "items.pk, items.item_id, items.text, items.kind, items.tags, items.meta, items.created_at"
)


@dataclass(eq=False)
class _Connection:
    """The connection and lock shared by a store and its namespace views."""

    conn: sqlite3.Connection
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False
    planner: _Planner | None = None


class ContextStore(Closing):
    """Offloaded context for one namespace of a SQLite file (see the module docs).

    `path` is a file path or ``":memory:"`` (private to this store and its
    `with_namespace` views); the file and its schema are created on first use.
    `synchronous` chooses what a commit survives: ``"NORMAL"`` the death of the
    process, ``"FULL"`` also an operating-system crash or power loss. `timeout` is
    how long a write waits for another process's write to finish.
    """

    #: Roughly how many matching rows a query may rank (see `query`).
    max_query_rows: int = 2_000

    def __init__(
        self,
        path: str | Path = ":memory:",
        namespace: str = "default",
        *,
        synchronous: Synchronous = "NORMAL",
        timeout: float = 5.0,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise UsageError(f"synchronous must be 'NORMAL' or 'FULL', not {synchronous!r}")
        _check_namespace(namespace)
        # isolation_level=None: transactions are begun and committed explicitly, so
        # "committed before returning" is visible in the code rather than implied.
        conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
        try:
            # WAL lets readers in other processes proceed while one writes, and makes a
            # commit a single append to the log.
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {synchronous}")
            _migrate(conn)
        except BaseException:
            conn.close()
            raise
        self._shared = _Connection(conn)
        self._namespace = namespace
        self._path = str(path)

    @classmethod
    def _view(cls, shared: _Connection, path: str, namespace: str) -> Self:
        view = cls.__new__(cls)
        view._shared = shared
        view._namespace = namespace
        view._path = path
        return view

    @property
    def namespace(self) -> str:
        return self._namespace

    @property
    def path(self) -> str:
        return self._path

    def with_namespace(self, namespace: str) -> ContextStore:
        """A store for another namespace of the same database, sharing this connection.

        Closing either closes both.
        """
        _check_namespace(namespace)
        return ContextStore._view(self._shared, self._path, namespace)

    # -- writing -----------------------------------------------------------------

    def put(
        self,
        item_id: str,
        text: str,
        *,
        kind: str,
        tags: Sequence[str] = (),
        meta: dict[str, Any] | None = None,
    ) -> StoredItem:
        """Store `text` under `item_id` and commit; returns the stored (canonical) item.

        Raises `ItemIdConflictError` if `item_id` already names a different text.
        """
        return self.put_many([NewItem(item_id, text, kind, tags, meta)])[0]

    def put_many(self, items: Iterable[NewItem]) -> list[StoredItem]:
        """Store several items in one transaction: all of them or, on error, none.

        Returns one stored item per input, in order, as sequential `put` calls would.
        """
        with _gc_paused():
            rows = _encode_all(items)
            if not rows:
                return []
            with self._transaction() as conn:
                return self._write(conn, rows, time.time())

    def _write(self, conn: sqlite3.Connection, rows: list[_Row], now: float) -> list[StoredItem]:
        # Every write is planned in Python and applied with one executemany per table:
        # per-row statements (or triggers, which make FTS5 flush a segment per
        # statement) cost several times more. BEGIN IMMEDIATE holds the write lock, so
        # the look-ups below cannot go stale and the primary keys can be assigned here.
        ns = self._namespace
        known = self._items_by_text(conn, rows)
        owners = self._id_owners(conn, {row.item_id for row in rows})
        (top,) = conn.execute("SELECT coalesce(max(pk), 0) FROM items").fetchone()

        fresh: dict[str, tuple[int, _Row]] = {}  # texts first stored by this batch
        grown: dict[int, StoredItem] = {}  # items whose tags this batch extends
        aliases: list[tuple[str, str, int]] = []
        results: list[StoredItem | _Row] = []  # a _Row stands for its own new item
        for row in rows:
            owner = owners.get(row.item_id)
            first = fresh.get(row.text)
            if first is None and row.text not in known:
                if owner is not None:
                    raise ItemIdConflictError(ns, row.item_id)
                top += 1
                fresh[row.text] = (top, row)
                owners[row.item_id] = top
                results.append(row)
                continue
            if first is not None:
                pk, item = first[0], grown.get(first[0]) or first[1].stored(now)
            else:
                pk, item = known[row.text]
                item = grown.get(pk, item)
            if owner is None:
                aliases.append((ns, row.item_id, pk))
                owners[row.item_id] = pk
            elif owner != pk:
                raise ItemIdConflictError(ns, row.item_id)
            extra = tuple(tag for tag in row.tags if tag not in item.tags)
            if extra:
                item = StoredItem(
                    item.item_id,
                    item.text,
                    item.kind,
                    item.tags + extra,
                    item.meta,
                    item.created_at,
                )
                grown[pk] = item
            results.append(item)

        new_rows = list(fresh.values())
        tags_json = [
            _tags_json(grown[pk].tags) if pk in grown else row.tags_json for pk, row in new_rows
        ]
        conn.executemany(
            "INSERT INTO items (pk, namespace, item_id, digest, kind, tags, meta, created_at,"
            " text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (pk, ns, row.item_id, row.digest, row.kind, tags, row.meta_json, now, row.text)
                for (pk, row), tags in zip(new_rows, tags_json, strict=True)
            ],
        )
        conn.executemany(
            "INSERT INTO item_ids (namespace, item_id, pk) VALUES (?, ?, ?)",
            [(ns, row.item_id, pk) for pk, row in new_rows] + aliases,
        )
        conn.executemany(
            "INSERT INTO items_fts (rowid, text, tags) VALUES (?, ?, ?)",
            [(pk, row.text, tags) for (pk, row), tags in zip(new_rows, tags_json, strict=True)],
        )
        for pk, before in known.values():
            if pk in grown:
                self._retag(conn, pk, before, grown[pk].tags)
        return [result.stored(now) if isinstance(result, _Row) else result for result in results]

    @staticmethod
    def _retag(
        conn: sqlite3.Connection, pk: int, before: StoredItem, tags: tuple[str, ...]
    ) -> None:
        # An external-content FTS5 row is replaced by deleting exactly what was indexed
        # (hence the stored JSON, not a re-encoding) and indexing the new values.
        (indexed,) = conn.execute("SELECT tags FROM items WHERE pk = ?", (pk,)).fetchone()
        after_json = _tags_json(tags)
        conn.execute("UPDATE items SET tags = ? WHERE pk = ?", (after_json, pk))
        conn.execute(
            "INSERT INTO items_fts (items_fts, rowid, text, tags) VALUES ('delete', ?, ?, ?)",
            (pk, before.text, indexed),
        )
        conn.execute(
            "INSERT INTO items_fts (rowid, text, tags) VALUES (?, ?, ?)",
            (pk, before.text, after_json),
        )

    def _items_by_text(
        self, conn: sqlite3.Connection, rows: list[_Row]
    ) -> dict[str, tuple[int, StoredItem]]:
        found: dict[str, tuple[int, StoredItem]] = {}
        texts = {row.text for row in rows}
        for chunk in _chunks(list({row.digest for row in rows})):
            marks = ", ".join("?" * len(chunk))
            for row in conn.execute(
                f"SELECT {_ITEM_COLUMNS} FROM items INDEXED BY items_by_digest"
                f" WHERE items.digest IN ({marks}) AND items.namespace = ?",
                (*chunk, self._namespace),
            ):
                item = _item(row)
                if item.text in texts:
                    found[item.text] = (row[0], item)
        return found

    def _id_owners(self, conn: sqlite3.Connection, item_ids: set[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for chunk in _chunks(list(item_ids)):
            marks = ", ".join("?" * len(chunk))
            for item_id, pk in conn.execute(
                f"SELECT item_id, pk FROM item_ids WHERE namespace = ? AND item_id IN ({marks})",
                (self._namespace, *chunk),
            ):
                found[item_id] = pk
        return found

    # -- reading -----------------------------------------------------------------

    def get(self, item_id: str) -> StoredItem | None:
        """The item stored under `item_id` (or under the text it aliases), or None."""
        with self._locked() as conn:
            row = conn.execute(
                f"SELECT {_ITEM_COLUMNS} FROM item_ids JOIN items ON items.pk = item_ids.pk"
                " WHERE item_ids.namespace = ? AND item_ids.item_id = ?",
                (self._namespace, item_id),
            ).fetchone()
        return None if row is None else _item(row)

    def __contains__(self, item_id: object) -> bool:
        if not isinstance(item_id, str):
            return False
        with self._locked() as conn:
            row = conn.execute(
                "SELECT 1 FROM item_ids WHERE namespace = ? AND item_id = ?",
                (self._namespace, item_id),
            ).fetchone()
        return row is not None

    def count(self) -> int:
        """How many distinct texts this namespace holds."""
        with self._locked() as conn:
            (n,) = conn.execute(
                "SELECT count(*) FROM items INDEXED BY items_by_namespace WHERE namespace = ?",
                (self._namespace,),
            ).fetchone()
        return int(n)

    def page(self, cursor: str | None = None, limit: int = 100) -> Page:
        """Items in insertion order, `limit` at a time.

        Pass the previous page's `next_cursor` to continue. Cursors stay valid while
        items are added, and items added later appear on later pages.
        """
        if limit < 1:
            raise UsageError(f"limit must be at least 1, not {limit}")
        after = _decode_cursor(cursor)
        with self._locked() as conn:
            rows = conn.execute(
                f"SELECT {_ITEM_COLUMNS} FROM items INDEXED BY items_by_namespace"
                " WHERE namespace = ? AND pk > ? ORDER BY pk LIMIT ?",
                (self._namespace, after, limit + 1),
            ).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        next_cursor = str(rows[-1][0]) if more else None
        return Page(tuple(_item(row) for row in rows), next_cursor)

    def __iter__(self) -> Iterator[StoredItem]:
        cursor: str | None = None
        while True:
            page = self.page(cursor, 500)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def query(self, text: str, top_k: int = 3, *, tags: Sequence[str] | None = None) -> list[Hit]:
        """The `top_k` items that best match `text` by BM25, best first.

        With `tags`, only items carrying at least one of them are considered. Any
        string is a valid query; one without letters or digits matches nothing.

        Words are OR-ed, and ranking costs time per matching row, so in a large
        store the most common words of a query are left out of it once the rarer
        ones already match about `max_query_rows` rows: they would weigh almost
        nothing in the ranking. The rarest word is always kept.
        """
        if top_k < 0:
            raise UsageError(f"top_k must not be negative, not {top_k}")
        words = _words(text)
        if not words or top_k == 0:
            return []
        sql = (
            "SELECT items.item_id, items.text, items_fts.rank, items.kind, items.tags,"
            # CROSS JOIN pins the text match as the outer loop: the namespace index
            # must never drive this query.
            " items.meta FROM items_fts CROSS JOIN items ON items.pk = items_fts.rowid"
            " WHERE items_fts MATCH ? AND items.namespace = ?"
        )
        params: list[object] = [self._namespace]
        if tags is not None:
            wanted = _normalize_tags(tags)
            if not wanted:
                return []
            marks = ", ".join("?" * len(wanted))
            # Filtered after the text match, whose candidates the planner keeps few.
            sql += (
                " AND EXISTS (SELECT 1 FROM json_each(items.tags)"
                f" WHERE json_each.value IN ({marks}))"
            )
            params.extend(wanted)
        sql += " ORDER BY items_fts.rank LIMIT ?"
        params.append(top_k)
        with self._locked() as conn:
            if self._shared.planner is None:
                self._shared.planner = _Planner(conn)
            kept = self._shared.planner.select(conn, words, self.max_query_rows)
            if not kept:
                return []
            rows = conn.execute(sql, [_match_any(kept), *params]).fetchall()
        return [
            Hit(
                item_id=row[0],
                text=row[1],
                score=-float(row[2]),
                kind=row[3],
                tags=tuple(json.loads(row[4])),
                meta=json.loads(row[5]),
            )
            for row in rows
        ]

    # -- lifetime ----------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (shared with `with_namespace` views). Idempotent."""
        with self._shared.lock:
            if not self._shared.closed:
                self._shared.closed = True
                self._shared.conn.close()

    def __repr__(self) -> str:
        return f"ContextStore({self._path!r}, namespace={self._namespace!r})"

    @contextmanager
    def _locked(self) -> Iterator[sqlite3.Connection]:
        with self._shared.lock:
            if self._shared.closed:
                raise UsageError("this ContextStore is closed")
            try:
                yield self._shared.conn
            except UnicodeEncodeError as exc:
                # sqlite3 raises this while binding a string with a lone surrogate.
                raise UsageError(f"the store takes valid Unicode text only: {exc}") from exc

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._locked() as conn:
            # IMMEDIATE takes the write lock up front, so two processes writing the same
            # file queue on busy_timeout instead of failing on a lock upgrade.
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")


@dataclass(slots=True)
class _Row:
    # Not frozen: frozen dataclasses are several times slower to build, and bulk
    # inserts build one of these per item.
    item_id: str
    text: str
    kind: str
    tags: tuple[str, ...]
    meta: dict[str, Any]
    digest: int
    tags_json: str
    meta_json: str

    def stored(self, now: float) -> StoredItem:
        return StoredItem(self.item_id, self.text, self.kind, self.tags, self.meta, now)


@contextmanager
def _gc_paused() -> Iterator[None]:
    # A bulk insert allocates several objects per item and none of them form cycles;
    # left on, the cyclic collector rescans the whole heap over and over as they
    # pile up, which cost about a fifth of put_many's time at 100k items.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _encode_all(items: Iterable[NewItem]) -> list[_Row]:
    # Bulk inserts usually repeat a handful of tag lists; normalizing and encoding
    # each distinct list once is a measurable share of put_many's time.
    tag_memo: dict[tuple[Any, ...], tuple[tuple[str, ...], str]] = {}
    rows = []
    for item in items:
        item_id, text, kind, raw_tags, raw_meta = (
            item.item_id,
            item.text,
            item.kind,
            item.tags,
            item.meta,
        )
        if type(item_id) is not str or not item_id:
            raise UsageError(f"item_id must be a non-empty string, not {item_id!r}")
        if type(text) is not str:
            raise UsageError(f"text must be a string, not {type(text).__name__}")
        if type(kind) is not str:
            raise UsageError(f"kind must be a string, not {type(kind).__name__}")
        if raw_tags is None:
            key: tuple[Any, ...] = ()
        elif type(raw_tags) is str:
            # A bare string is one tag, not a sequence of one-character tags.
            key = (raw_tags,)
        else:
            key = tuple(raw_tags)
        try:
            memo = tag_memo.get(key)
        except TypeError:  # an unhashable tag, rejected just below
            memo = None
        if memo is None:
            tags = _normalize_tags(key)
            memo = tag_memo[key] = (tags, _tags_json(tags))
        tags, tags_json = memo
        meta = {} if raw_meta is None else dict(raw_meta)
        try:
            meta_json = _to_json(meta) if meta else "{}"
        except (TypeError, ValueError) as exc:
            raise UsageError(f"meta of item {item_id!r} is not JSON-serializable: {exc}") from exc
        try:
            digest = _digest(text)
        except UnicodeEncodeError as exc:
            raise UsageError(f"text of item {item_id!r} is not valid Unicode: {exc}") from exc
        rows.append(_Row(item_id, text, kind, tags, meta, digest, tags_json, meta_json))
    return rows


def _digest(text: str) -> int:
    # A signed 64-bit value, SQLite's INTEGER range.
    return int.from_bytes(
        hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True
    )


def _tags_json(tags: tuple[str, ...]) -> str:
    return _to_json(tags) if tags else "[]"


def _chunks(values: list[Any]) -> Iterator[list[Any]]:
    # Well under SQLite's limit on bound parameters per statement.
    size = 500
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _normalize_tags(tags: Sequence[str]) -> tuple[str, ...]:
    # A bare string is a sequence of characters; taking it as one tag is what the
    # caller meant.
    if isinstance(tags, str):
        tags = (tags,)
    for tag in tags:
        if not isinstance(tag, str):
            raise UsageError(f"tags must be strings, not {type(tag).__name__}")
    return tuple(dict.fromkeys(tags))


def _item(row: tuple[Any, ...]) -> StoredItem:
    _pk, item_id, text, kind, tags, meta, created_at = row
    return StoredItem(item_id, text, kind, tuple(json.loads(tags)), json.loads(meta), created_at)


def _decode_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        return int(cursor)
    except ValueError:
        raise UsageError(f"not a cursor returned by ContextStore.page: {cursor!r}") from None


def _check_namespace(namespace: str) -> None:
    if not isinstance(namespace, str) or not namespace:
        raise UsageError(f"namespace must be a non-empty string, not {namespace!r}")


def _migrate(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        for number, script in enumerate(_MIGRATIONS[version:], start=version + 1):
            # executescript would commit the open transaction; run statement by statement
            # so that a migration and its version bump land together.
            for statement in _statements(script):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _statements(script: str) -> Iterator[str]:
    pending = ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                yield pending
            pending = ""
    if pending.strip():
        yield pending
