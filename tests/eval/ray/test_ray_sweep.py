"""Sweeps on a real Ray cluster: the rows of a local run, resumable, one retry for a dead worker."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tooluse import UsageError
from tooluse.eval import (
    Bench,
    BenchConfig,
    FanoutTask,
    RayOptions,
    Row,
    Setup,
    SuiteOptions,
    read_rows,
    write_plots,
    write_summary,
)
from tooluse.models import Model, ModelRequest, ModelResponse

BFCL = SuiteOptions(
    categories=("simple_python", "multiple", "irrelevance", "multi_turn_base"), limit=3
)
CONVENTIONS = ("json", "code", "text")


def _timeless(rows: Sequence[Row]) -> dict[Any, dict[str, Any]]:
    return {r.key: {k: v for k, v in r.to_json().items() if k != "wall_s"} for r in rows}


def _lines(out: Path) -> list[dict[str, Any]]:
    text = (out / "results.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_the_same_oracle_sweep_gives_the_same_rows_summary_and_plots(
    cluster: ModuleType, tmp_path: Path
) -> None:
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    Bench(BenchConfig("bfcl", out=local, options=BFCL, conventions=CONVENTIONS)).run()
    config = BenchConfig(
        "bfcl", out=on_ray, options=BFCL, conventions=CONVENTIONS, workers=2, executor="ray"
    )
    Bench(config).run()

    local_rows, ray_rows = read_rows(local / "results.jsonl"), read_rows(on_ray / "results.jsonl")
    assert len(ray_rows) == len(local_rows) == 36
    assert _timeless(ray_rows) == _timeless(local_rows)
    assert all(r.correct for r in ray_rows)
    # One line per entry: nothing written twice.
    assert len(_lines(on_ray)) == 36

    # The reports of both, apart from timings (the summary's wall-time column).
    reports = []
    for out in (local, on_ray):
        rows = read_rows(out / "results.jsonl")
        for row in rows:
            row.wall_s = 0.0
        plots = write_plots(out, rows)
        summary = write_summary(out, rows, plots)
        reports.append((summary.read_text(), {p: (out / p).read_bytes() for p in plots}))
    assert reports[0] == reports[1]


def test_an_interrupted_sweep_resumes_with_the_entries_it_lacks(
    cluster: ModuleType, tmp_path: Path
) -> None:
    first = SuiteOptions(categories=("simple_python",), limit=2)
    Bench(BenchConfig("bfcl", out=tmp_path, options=first, conventions=("json",))).run()
    # What a sweep killed while writing leaves behind: half a line.
    with (tmp_path / "results.jsonl").open("a") as sink:
        sink.write('{"suite": "bfcl", "entry_id": "simple_py')

    more = SuiteOptions(categories=("simple_python",), limit=5)
    config = BenchConfig("bfcl", out=tmp_path, options=more, conventions=("json",), executor="ray")
    started: list[tuple[int, int]] = []
    rows = Bench(config).run(on_start=lambda pending, total: started.append((pending, total)))

    assert started == [(3, 5)]
    assert sorted(r.entry_id for r in rows) == [f"simple_python_{i}" for i in range(2, 5)]
    assert len(read_rows(tmp_path / "results.jsonl")) == 5


class _Dies(FanoutTask):
    """A task whose worker is killed mid-entry while `marker` has fewer than `deaths` lines."""

    def __init__(self, marker: Path, deaths: int) -> None:
        super().__init__("listed", 2)
        self.id = f"dies-{deaths}"
        self.marker = marker
        self.deaths = deaths

    def setup(self) -> Setup:
        setup = super().setup()
        with self.marker.open("a") as attempts:
            attempts.write(f"{os.getpid()}\n")
        if len(self.marker.read_text().splitlines()) <= self.deaths:
            os.kill(os.getpid(), signal.SIGKILL)
        return setup


@pytest.mark.parametrize("actors", [False, True], ids=["tasks", "actors"])
def test_a_worker_killed_mid_entry_is_retried_once_then_recorded(
    cluster: ModuleType, tmp_path: Path, actors: bool
) -> None:
    once, always = tmp_path / "once", tmp_path / "always"
    # Quick entries share a Ray task: the two that kill theirs are among others.
    tasks = [
        *(FanoutTask("listed", n) for n in (2, 3, 4)),
        _Dies(once, deaths=1),
        _Dies(always, deaths=99),
        *(FanoutTask("listed", n) for n in (5, 6, 7)),
    ]
    config = BenchConfig(
        "fanout",
        out=tmp_path,
        conventions=("json",),
        workers=2,
        executor="ray",
        ray=RayOptions(actors=actors),
    )
    Bench(config, tasks).run()

    rows = {r.entry_id: r for r in read_rows(tmp_path / "results.jsonl")}
    assert len(_lines(tmp_path)) == len(rows) == 8
    assert rows["dies-1"].correct and rows["dies-1"].error is None
    # Killed on its first try, it ran again in another process.
    assert len(set(once.read_text().split())) == 2
    failed = rows["dies-99"]
    assert not failed.correct and failed.status == "error"
    assert failed.error is not None
    assert failed.error.startswith("worker: the worker died running this entry, 2 times")
    # Twice alone, and once more if it shared a task with others when it first died.
    assert len(always.read_text().split()) in (2, 3)
    others = [r for key, r in rows.items() if not key.startswith("dies")]
    assert len(others) == 6 and all(r.correct for r in others)


def test_a_full_cluster_is_waited_for_with_a_message(cluster: ModuleType, tmp_path: Path) -> None:
    @cluster.remote(num_cpus=2)
    class Hog:
        def ready(self) -> bool:
            return True

    hog = Hog.remote()  # type: ignore[attr-defined]
    cluster.get(hog.ready.remote())
    said: list[str] = []
    heard = threading.Event()

    def on_wait(message: str) -> None:
        said.append(message)
        heard.set()

    config = BenchConfig(
        "bfcl",
        out=tmp_path,
        options=SuiteOptions(categories=("simple_python",), limit=2),
        conventions=("json",),
        executor="ray",
    )
    rows: list[Row] = []
    runner = threading.Thread(target=lambda: rows.extend(Bench(config).run(on_wait=on_wait)))
    runner.start()
    try:
        assert heard.wait(timeout=60)
        assert rows == []
    finally:
        cluster.kill(hog)
        runner.join(timeout=120)
    assert len(rows) == 2 and all(r.correct for r in rows)
    assert "waiting for a free CPU on the Ray cluster" in said[0]
    assert "0 of 2 CPUs free" in said[0]


def test_an_entry_larger_than_any_node_is_refused(cluster: ModuleType, tmp_path: Path) -> None:
    config = BenchConfig("chain", out=tmp_path, executor="ray", ray=RayOptions(cpus=3))
    with pytest.raises(UsageError, match="no node of the Ray cluster has 3 CPUs"):
        Bench(config).run()
    assert read_rows(tmp_path / "results.jsonl") == []


class _HoldsALock(Model):
    name = "holds-a-lock"

    def __init__(self) -> None:
        self.lock = threading.Lock()

    async def respond(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(content="no")


def test_a_model_that_cannot_travel_to_workers_is_refused(
    cluster: ModuleType, tmp_path: Path
) -> None:
    config = BenchConfig("chain", out=tmp_path, model=_HoldsALock(), executor="ray")
    with pytest.raises(UsageError, match=r"'holds-a-lock' cannot be sent to Ray workers.*lock"):
        Bench(config).run()


def test_without_ray_installed_the_error_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Bench(BenchConfig("chain", out=tmp_path, options=SuiteOptions(widths=(2,)))).run()
    before = (tmp_path / "results.jsonl").read_text()
    monkeypatch.setitem(__import__("sys").modules, "ray", None)
    config = BenchConfig("chain", out=tmp_path, options=SuiteOptions(widths=(2, 3)), executor="ray")
    with pytest.raises(UsageError, match=r"needs Ray, which is not installed.*tooluse\[ray\]"):
        Bench(config).run()
    assert (tmp_path / "results.jsonl").read_text() == before


def test_ray_options_need_the_ray_executor(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="need --executor ray"):
        BenchConfig("chain", out=tmp_path, ray=RayOptions(address="auto"))
    with pytest.raises(UsageError, match="unknown executor 'dask'"):
        BenchConfig("chain", out=tmp_path, executor="dask")
