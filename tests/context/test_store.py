from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tooluse.context
import tooluse.context._store
from tooluse._exceptions import UsageError
from tooluse.context import ContextStore, ItemIdConflictError, NewItem, fts_query

SRC = Path(__file__).resolve().parents[2] / "src"

# Queries full of FTS5 syntax and odd characters, and the words each searches for:
# nothing in them is read as syntax, and a query without words matches nothing.
NASTY_QUERIES: dict[str, tuple[str, ...]] = {
    "c++": ("c",),
    "API-keys": ("api", "keys"),
    "error: timeout": ("error", "timeout"),
    '"foo': ("foo",),
    'foo"': ("foo",),
    '"': (),
    "AND": ("and",),
    "OR": ("or",),
    "NOT": ("not",),
    "a AND": ("a", "and"),
    "AND OR NOT": ("and", "or", "not"),
    "a.b": ("a", "b"),
    "NEAR(": ("near",),
    "NEAR(a b, 2)": ("near", "a", "b", "2"),
    "col:value": ("col", "value"),
    "title : x": ("title", "x"),
    "^start": ("start",),
    "prefix*": ("prefix",),
    "*": (),
    "(unbalanced": ("unbalanced",),
    "x)": ("x",),
    "{a b}": ("a", "b"),
    "- minus": ("minus",),
    "+plus": ("plus",),
    "": (),
    "   ": (),
    "🙂": (),
    "🔥 fire 🔥": ("fire",),
    "naïve café": ("naïve", "café"),
    "日本語のテキスト": ("日本語のテキスト",),
    "\x00": (),
    "a\x00b": ("a", "b"),
    "tab\there": ("tab", "here"),
    "'single'": ("single",),
    "back\\slash": ("back", "slash"),
    "%_%": (),
    "lone \ud800 surrogate": ("lone", "surrogate"),
    "x" * 5000: ("x" * 5000,),
    # A query searches for its first words only, as many as the store takes.
    " ".join(f"w{i}" for i in range(500)): tuple(
        f"w{i}" for i in range(tooluse.context._store._MAX_QUERY_TERMS)
    ),
}
# Every word, and the words the longest query leaves out.
QUERY_WORDS = sorted({w for words in NASTY_QUERIES.values() for w in words} | {"w499", "w64"})


@pytest.fixture
def store() -> Iterator[ContextStore]:
    with ContextStore() as s:
        yield s


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "context.db"


def test_public_names_are_exported() -> None:
    assert set(tooluse.context.__all__) == {
        "ContextPolicy",
        "ContextStore",
        "Hit",
        "ItemIdConflictError",
        "NewItem",
        "Page",
        "StoredItem",
        "Synchronous",
        "fts_query",
    }
    for name in tooluse.context.__all__:
        assert getattr(tooluse.context, name) is not None


# -- round trip ------------------------------------------------------------------


def test_put_then_get_round_trips_every_field(store: ContextStore) -> None:
    meta = {"tokens": 412, "role": "tool", "nested": {"ok": [1, 2]}}
    put = store.put("obs-1", "ls -la returned 12 files", kind="observation", tags=["ls"], meta=meta)
    got = store.get("obs-1")
    assert got == put
    assert got is not None
    assert (got.item_id, got.text, got.kind, got.tags, got.meta) == (
        "obs-1",
        "ls -la returned 12 files",
        "observation",
        ("ls",),
        meta,
    )
    assert "obs-1" in store
    assert store.count() == 1


def test_unknown_id_is_none(store: ContextStore) -> None:
    assert store.get("missing") is None
    assert "missing" not in store
    assert 3 not in store


def test_items_survive_reopening_the_file(db_path: Path) -> None:
    with ContextStore(db_path, "run-1") as s:
        s.put("a", "persisted text", kind="summary", tags=["t"], meta={"k": "v"})
    with ContextStore(db_path, "run-1") as s:
        item = s.get("a")
        assert item is not None
        assert (item.text, item.kind, item.tags, item.meta) == (
            "persisted text",
            "summary",
            ("t",),
            {"k": "v"},
        )
        assert s.query("persisted")[0].item_id == "a"


def test_file_is_in_wal_mode_and_schema_is_versioned(db_path: Path) -> None:
    ContextStore(db_path).close()
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    finally:
        conn.close()


def test_unicode_text_and_tags_round_trip(store: ContextStore) -> None:
    store.put("u", "naïve café 日本語 🙂", kind="observation", tags=["ünï", "🏷"])
    item = store.get("u")
    assert item is not None
    assert item.text == "naïve café 日本語 🙂"
    assert item.tags == ("ünï", "🏷")
    assert store.query("cafe")[0].item_id == "u"
    assert store.query("日本語")[0].item_id == "u"


def test_bad_input_is_a_usage_error(store: ContextStore) -> None:
    with pytest.raises(UsageError):
        store.put("", "text", kind="observation")
    with pytest.raises(UsageError):
        store.put("x", 42, kind="observation")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        store.put("x", "text", kind="observation", meta={"f": object()})
    with pytest.raises(UsageError):
        store.put("x", "text", kind="observation", tags=[1])  # type: ignore[list-item]
    with pytest.raises(UsageError):
        store.put("x", "text", kind="observation", tags=[["unhashable"]])  # type: ignore[list-item]
    with pytest.raises(UsageError):
        store.put("x", "lone \ud800 surrogate", kind="observation")
    with pytest.raises(UsageError):
        store.put("\ud800", "text", kind="observation")
    with pytest.raises(UsageError):
        store.put("x", "text", kind="observation", tags=["\udfff"])
    with pytest.raises(UsageError):
        store.get("\ud800")
    with pytest.raises(UsageError):
        store.query("x", top_k=-1)
    with pytest.raises(UsageError):
        ContextStore(namespace="")
    with pytest.raises(UsageError):
        ContextStore(synchronous="OFF")  # type: ignore[arg-type]
    assert store.count() == 0


def test_a_bare_string_is_one_tag_and_none_is_no_tags(store: ContextStore) -> None:
    item = store.put("x", "text", kind="observation", tags="src/app.py")
    assert item.tags == ("src/app.py",)
    assert store.put("y", "other", kind="observation", tags=None).tags == ()  # type: ignore[arg-type]
    assert store.put("z", "third", kind="o", tags=["a", "b", "a"]).tags == ("a", "b")


def test_closed_store_refuses_calls(db_path: Path) -> None:
    s = ContextStore(db_path)
    view = s.with_namespace("other")
    s.close()
    s.close()
    with pytest.raises(UsageError, match="closed"):
        s.get("a")
    with pytest.raises(UsageError, match="closed"):
        view.put("a", "b", kind="c")


# -- dedup -----------------------------------------------------------------------


def test_same_text_is_stored_once_under_its_first_id(store: ContextStore) -> None:
    first = store.put("a", "same output", kind="observation", tags=["x"], meta={"n": 1})
    second = store.put("b", "same output", kind="message", tags=["y"], meta={"n": 2})
    assert second.item_id == "a"
    assert second.kind == "observation"
    assert second.meta == {"n": 1}
    assert second.tags == ("x", "y")
    assert second.created_at == first.created_at
    assert store.count() == 1
    assert store.get("b") == store.get("a") == second
    assert "b" in store
    hits = store.query("same output", top_k=5)
    assert [h.item_id for h in hits] == ["a"]
    assert hits[0].tags == ("x", "y")


def test_merged_tags_are_searchable_and_filterable(store: ContextStore) -> None:
    store.put("a", "the parser failed on line 3", kind="observation", tags=["parser"])
    store.put("b", "the parser failed on line 3", kind="observation", tags=["src/lexer.py"])
    assert [h.item_id for h in store.query("lexer")] == ["a"]
    assert [h.item_id for h in store.query("line", tags=["src/lexer.py"])] == ["a"]
    assert [h.item_id for h in store.query("line", tags=["parser"])] == ["a"]


def test_texts_whose_digests_collide_are_still_told_apart(
    store: ContextStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tooluse.context._store, "_digest", lambda text: 42)
    store.put("a", "first text", kind="o")
    store.put_many([NewItem("b", "second text", "o"), NewItem("c", "first text", "o")])
    assert store.put("d", "second text", kind="o").item_id == "b"
    assert store.count() == 2
    assert store.get("c") == store.get("a")
    assert [h.item_id for h in store.query("second")] == ["b"]


def test_putting_the_same_id_and_text_again_is_a_no_op(store: ContextStore) -> None:
    first = store.put("a", "text", kind="observation", tags=["x"])
    again = store.put("a", "text", kind="observation", tags=["x"])
    assert again == first
    assert store.count() == 1


def test_an_id_cannot_be_reused_for_another_text(store: ContextStore) -> None:
    store.put("a", "original", kind="observation")
    with pytest.raises(ItemIdConflictError) as caught:
        store.put("a", "replacement", kind="observation")
    assert caught.value.item_id == "a"
    assert isinstance(caught.value, UsageError)
    item = store.get("a")
    assert item is not None
    assert item.text == "original"
    assert store.count() == 1
    assert store.query("replacement") == []


def test_an_alias_cannot_be_reused_for_another_text(store: ContextStore) -> None:
    store.put("a", "text", kind="observation")
    store.put("b", "text", kind="observation")
    with pytest.raises(ItemIdConflictError):
        store.put("b", "other text", kind="observation")
    with pytest.raises(ItemIdConflictError):
        store.put("a", "other text", kind="observation")


def test_dedup_is_per_namespace(store: ContextStore) -> None:
    other = store.with_namespace("other")
    store.put("a", "shared text", kind="observation")
    assert other.put("b", "shared text", kind="observation").item_id == "b"
    assert store.count() == other.count() == 1


def test_put_many_reports_each_input_as_sequential_puts_would(store: ContextStore) -> None:
    store.put("old", "seen before", kind="observation", tags=["t0"])
    results = store.put_many(
        [
            NewItem("n1", "fresh", "observation", ["t1"]),
            NewItem("n2", "fresh", "observation", ["t2"]),
            NewItem("n3", "seen before", "observation", ["t3"]),
            NewItem("n4", "other", "summary"),
            NewItem("n1", "fresh", "observation", ["t1"]),
        ]
    )
    assert [r.item_id for r in results] == ["n1", "n1", "old", "n4", "n1"]
    assert [r.tags for r in results] == [
        ("t1",),
        ("t1", "t2"),
        ("t0", "t3"),
        (),
        ("t1", "t2"),
    ]
    assert store.count() == 3
    fresh = store.get("n2")
    assert fresh is not None
    assert fresh.tags == ("t1", "t2")
    assert [h.item_id for h in store.query("t2")] == ["n1"]
    assert [h.item_id for h in store.query("t3")] == ["old"]
    assert store.put_many([]) == []


def test_put_many_is_all_or_nothing(store: ContextStore) -> None:
    store.put("taken", "original", kind="observation")
    batch = [
        NewItem("x1", "first", "observation"),
        NewItem("taken", "not the original", "observation"),
        NewItem("x3", "third", "observation"),
    ]
    with pytest.raises(ItemIdConflictError):
        store.put_many(batch)
    assert store.count() == 1
    assert store.get("x1") is None
    assert store.query("first") == []


def test_an_id_repeated_with_two_texts_in_one_batch_conflicts(store: ContextStore) -> None:
    with pytest.raises(ItemIdConflictError):
        store.put_many([NewItem("a", "one", "o"), NewItem("a", "two", "o")])
    assert store.count() == 0


# -- namespaces ------------------------------------------------------------------


def test_namespaces_in_one_file_are_isolated(db_path: Path) -> None:
    with ContextStore(db_path, "run-1") as one, ContextStore(db_path, "run-2") as two:
        one.put("a", "alpha belongs to run one", kind="observation")
        two.put("a", "beta belongs to run two", kind="observation")
        assert one.get("a") is not None
        assert two.get("a") is not None
        assert one.get("a").text.startswith("alpha")  # type: ignore[union-attr]
        assert two.get("a").text.startswith("beta")  # type: ignore[union-attr]
        assert one.count() == two.count() == 1
        assert [h.text for h in one.query("belongs", 10)] == ["alpha belongs to run one"]
        assert two.query("alpha") == []
        assert [i.item_id for i in one] == ["a"]


def test_with_namespace_shares_an_in_memory_database(store: ContextStore) -> None:
    other = store.with_namespace("other")
    assert other.namespace == "other"
    assert store.namespace == "default"
    other.put("x", "only in other", kind="observation")
    assert store.count() == 0
    assert store.query("only") == []
    assert [h.item_id for h in other.query("only")] == ["x"]


# -- pagination ------------------------------------------------------------------


def test_pages_walk_items_in_insertion_order(store: ContextStore) -> None:
    store.put_many(NewItem(f"i{n:02d}", f"item number {n}", "observation") for n in range(25))
    store.with_namespace("noise").put("z", "elsewhere", kind="observation")
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = store.page(cursor, limit=10)
        pages += 1
        seen.extend(item.item_id for item in page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert pages == 3
    assert seen == [f"i{n:02d}" for n in range(25)]
    assert [item.item_id for item in store] == seen


def test_exactly_full_last_page_has_no_next_cursor(store: ContextStore) -> None:
    store.put_many(NewItem(f"i{n}", f"text {n}", "observation") for n in range(10))
    first = store.page(limit=5)
    second = store.page(first.next_cursor, limit=5)
    assert len(second.items) == 5
    assert second.next_cursor is None
    assert store.page(limit=5).items == first.items


def test_cursor_stays_valid_while_items_are_added(store: ContextStore) -> None:
    store.put_many(NewItem(f"i{n}", f"text {n}", "observation") for n in range(4))
    first = store.page(limit=2)
    store.put("late", "added between pages", kind="observation")
    rest = store.page(first.next_cursor, limit=10)
    assert [i.item_id for i in first.items + rest.items] == ["i0", "i1", "i2", "i3", "late"]


def test_empty_store_and_bad_page_arguments(store: ContextStore) -> None:
    assert store.page().items == ()
    assert store.page().next_cursor is None
    assert list(store) == []
    with pytest.raises(UsageError):
        store.page(limit=0)
    with pytest.raises(UsageError):
        store.page("not-a-cursor")


# -- ranking ---------------------------------------------------------------------

DOCS = {
    "pg": "connection to the postgres database timed out after 30 seconds",
    "css": "the stylesheet sets the header colour to dark blue",
    "test": "pytest run: 3 tests failed in test_parser.py, 41 passed",
    "git": "git status shows two modified files and one untracked file",
    "http": "the http client retried the request three times before giving up",
}


@pytest.fixture
def corpus(store: ContextStore) -> ContextStore:
    store.put_many(NewItem(k, v, "observation", [f"doc:{k}"]) for k, v in DOCS.items())
    return store


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("database timeout", "pg"),
        ("why did the postgres connection time out?", "pg"),
        ("which tests were failing", "test"),  # stemming: failing/failed, tests
        ("header colour", "css"),
        ("untracked files in git", "git"),
        ("request retries", "http"),
    ],
)
def test_the_relevant_item_ranks_first(corpus: ContextStore, query: str, expected: str) -> None:
    hits = corpus.query(query, top_k=3)
    assert hits[0].item_id == expected
    assert hits[0].text == DOCS[expected]
    assert hits[0].kind == "observation"
    assert hits[0].tags == (f"doc:{expected}",)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(score > 0 for score in scores)


def test_more_matching_words_rank_higher(store: ContextStore) -> None:
    store.put("one", "alpha filler filler filler", kind="o")
    store.put("two", "alpha beta filler filler", kind="o")
    store.put("three", "alpha beta gamma filler", kind="o")
    store.put_many(NewItem(f"none{i}", f"unrelated words only here {i}", "o") for i in range(10))
    assert [h.item_id for h in store.query("alpha beta gamma", 10)] == ["three", "two", "one"]


def test_top_k_and_tag_filter(corpus: ContextStore) -> None:
    assert len(corpus.query("the", top_k=2)) == 2
    assert corpus.query("the", top_k=0) == []
    assert [h.item_id for h in corpus.query("the", 10, tags=["doc:http"])] == ["http"]
    assert corpus.query("the", 10, tags=["no-such-tag"]) == []
    assert corpus.query("the", 10, tags=[]) == []


def test_tags_are_searchable_as_text(store: ContextStore) -> None:
    store.put("f", "def main(): ...", kind="observation", tags=["src/server_config.py"])
    assert [h.item_id for h in store.query("server config")] == ["f"]


# -- query sanitization ----------------------------------------------------------


@pytest.fixture(scope="module")
def word_store() -> Iterator[ContextStore]:
    """One item per word of the nasty queries, the word its id and its whole text."""
    with ContextStore() as s:
        s.put_many(NewItem(word, word, "observation") for word in QUERY_WORDS)
        yield s


@pytest.mark.parametrize("query", NASTY_QUERIES)
def test_nasty_queries_never_raise_and_find_the_items_of_their_words(
    word_store: ContextStore, query: str
) -> None:
    hits = word_store.query(query, top_k=len(QUERY_WORDS))
    assert sorted(h.item_id for h in hits) == sorted(NASTY_QUERIES[query])


@pytest.mark.parametrize("query", NASTY_QUERIES)
def test_sanitized_expression_is_valid_fts5(query: str) -> None:
    # Valid FTS5 that means the query's words and nothing else, or None for no words.
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5 (x)")
    conn.executemany("INSERT INTO t VALUES (?)", [(word,) for word in QUERY_WORDS])
    match = fts_query(query)
    if not NASTY_QUERIES[query]:
        assert match is None
        return
    assert match is not None
    rows = conn.execute("SELECT x FROM t WHERE t MATCH ?", (match,)).fetchall()
    assert sorted(x for (x,) in rows) == sorted(NASTY_QUERIES[query])


def test_operator_words_are_searched_for_literally(store: ContextStore) -> None:
    store.put("ops", "use AND or NOT near the API-keys of c++", kind="o")
    store.put("other", "nothing relevant", kind="o")
    for query in ["AND", "NOT", "NEAR(", "API-keys", "c++", '"keys']:
        assert [h.item_id for h in store.query(query)] == ["ops"], query


def test_queries_without_words_match_nothing(corpus: ContextStore) -> None:
    for query in ["", "   ", "🙂", "+-*/", '"']:
        assert corpus.query(query) == []
        assert fts_query(query) is None


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text())
def test_any_text_is_a_valid_query(corpus: ContextStore, query: str) -> None:
    hits = corpus.query(query, top_k=5)
    assert len(hits) <= 5


@settings(max_examples=100, deadline=None)
@given(text=st.text(min_size=1), query=st.text())
def test_any_text_can_be_stored_and_queried(text: str, query: str) -> None:
    with ContextStore() as s:
        s.put("x", text, kind="observation")
        assert s.get("x") is not None
        s.query(query)
        s.query(text)


# -- the query planner -----------------------------------------------------------


def test_common_words_are_dropped_but_results_survive(store: ContextStore) -> None:
    store.max_query_rows = 50
    store.put_many(
        NewItem(f"n{i}", f"the log line {i} said nothing of note", "observation")
        for i in range(300)
    )
    store.put("needle", "the disk quota was exceeded on volume seven", kind="observation")
    hits = store.query("the quota of the disk", top_k=3)
    assert hits[0].item_id == "needle"
    # Only common words: the rarest is kept, so there are still results.
    assert len(store.query("the log line", top_k=5)) == 5


def test_a_word_first_queried_while_absent_is_found_once_added(store: ContextStore) -> None:
    store.put("a", "some text", kind="observation")
    assert store.query("zanzibar") == []
    store.put("b", "a trip to zanzibar", kind="observation")
    assert [h.item_id for h in store.query("zanzibar")] == ["b"]


def test_planner_sees_writes_from_another_connection(db_path: Path) -> None:
    with ContextStore(db_path) as reader, ContextStore(db_path) as writer:
        writer.put("a", "first words", kind="o")
        assert reader.query("kilimanjaro") == []
        writer.put("b", "climbing kilimanjaro", kind="o")
        assert [h.item_id for h in reader.query("kilimanjaro")] == ["b"]


# -- threads and asyncio ---------------------------------------------------------


def test_concurrent_threads_share_one_store(db_path: Path) -> None:
    errors: list[BaseException] = []
    with ContextStore(db_path) as s:

        def work(worker: int) -> None:
            try:
                for i in range(50):
                    s.put(f"w{worker}-{i}", f"worker {worker} wrote line {i}", kind="o")
                    s.query(f"worker {worker}")
                    s.count()
                s.put_many(
                    NewItem(f"w{worker}-b{i}", f"batch {worker} {i}", "o") for i in range(50)
                )
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert s.count() == 8 * 100


async def test_usable_from_asyncio_through_threads(store: ContextStore) -> None:
    await asyncio.gather(
        *(asyncio.to_thread(store.put, f"a{i}", f"async text {i}", kind="o") for i in range(20))
    )
    hits = await asyncio.to_thread(store.query, "async text 7", 3)
    assert hits[0].item_id == "a7"
    assert store.count() == 20


# -- durability ------------------------------------------------------------------

CHILD = r"""
import sys
from tooluse.context import ContextStore, NewItem

store = ContextStore(sys.argv[1], "burst", synchronous=sys.argv[2])
out = sys.stdout
i = 0
while True:
    if i % 4 == 3:
        batch = [NewItem(f"b{i}-{j}", f"batch {i} item {j} " + "x" * j, "observation")
                 for j in range(40)]
        for item in store.put_many(batch):
            out.write(item.item_id + "\n")
    else:
        item = store.put(f"p{i}", f"single put number {i}", kind="observation", tags=["burst"])
        out.write(item.item_id + "\n")
    out.flush()
    i += 1
"""


@pytest.mark.parametrize("synchronous", ["NORMAL", "FULL"])
@pytest.mark.parametrize("kill_after", [1, 250, 2000])
def test_sigkill_mid_burst_loses_nothing_reported_stored(
    db_path: Path, synchronous: str, kill_after: int
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db_path), synchronous],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    try:
        assert proc.stdout is not None
        reported: list[str] = []
        for line in proc.stdout:
            reported.append(line)
            if len(reported) >= kill_after:
                os.kill(proc.pid, signal.SIGKILL)
                break
        proc.wait()
        # Lines the child wrote before it died are still in the pipe; each one was
        # written after its put returned.
        reported.extend(proc.stdout.read().splitlines(keepends=True))
    finally:
        watchdog.cancel()
    stderr = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == -signal.SIGKILL, stderr
    ids = [line.strip() for line in reported if line.endswith("\n")]
    assert len(ids) >= kill_after

    with ContextStore(db_path, "burst") as s:
        missing = [item_id for item_id in ids if item_id not in s]
        assert missing == []
        assert s.count() >= len(ids)
        # The recovered file is consistent: its full-text index answers for the last item.
        last = s.get(ids[-1])
        assert last is not None
        assert ids[-1] in {h.item_id for h in s.query(last.text, top_k=50)}
