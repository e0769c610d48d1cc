"""One token bucket for the whole cluster keeps a hosted provider under its rate limit."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from types import ModuleType

import pytest

from models._chat_server import ChatServer, Reply, completion
from tooluse import UsageError
from tooluse.eval import Bench, BenchConfig, RayOptions, SuiteOptions, read_rows
from tooluse.eval._ray import TokenBucket


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_spends_its_burst_then_hands_out_the_next_tokens_in_order() -> None:
    clock = _Clock()
    bucket = TokenBucket(per_minute=60, burst=2, clock=clock)
    assert [bucket.reserve() for _ in range(4)] == [0.0, 0.0, 1.0, 2.0]
    clock.now += 3.0  # the two reserved tokens are used up by now; nothing is saved
    assert bucket.reserve() == 0.0
    assert bucket.reserve() == pytest.approx(1.0)
    clock.now += 60.0  # a long pause refills the bucket to its burst, no more
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 1.0]
    assert bucket.slots() == pytest.approx([100, 100, 101, 102, 103, 104, 163, 163, 164])


def test_a_bucket_needs_a_rate() -> None:
    with pytest.raises(UsageError, match="positive rate"):
        TokenBucket(per_minute=0)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    chat = ChatServer().start()
    chat.fallback = Reply(body=completion("I cannot help with that."))
    try:
        yield chat
    finally:
        chat.stop()


def test_requests_from_every_worker_keep_to_the_rate(
    cluster: ModuleType, server: ChatServer, tmp_path: Path
) -> None:
    config = BenchConfig(
        "bfcl",
        out=tmp_path,
        model="openai:test-model",
        base_url=server.base_url,
        options=SuiteOptions(categories=("simple_python",), limit=5),
        conventions=("json",),
        workers=2,
        executor="ray",
        ray=RayOptions(rate_limit=120),  # one request every half second
    )
    bench = Bench(config)
    bench.run()

    rows = read_rows(tmp_path / "results.jsonl")
    assert len(rows) == 5 and all(r.status == "completed" and r.error is None for r in rows)
    # The one bucket of the cluster let each request go at least an interval after
    # the one before, and no request reached the server before its slot. (Load can
    # only make a request later than its slot, so neither depends on how fast it ran.)
    slots = sorted(bench.rate_slots)
    arrivals = sorted(request.at for request in server.requests)
    assert len(slots) == len(arrivals) == 5
    assert all(later - earlier >= 0.5 - 1e-6 for earlier, later in pairwise(slots)), slots
    assert all(at >= slot - 1e-3 for at, slot in zip(arrivals, slots, strict=True)), (
        arrivals,
        slots,
    )
