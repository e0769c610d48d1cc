"""`tooluse view` over a trace larger than any real run, served by a real process.

What is measured is counted, never timed: the peak resident memory of the viewer's
process (``VmHWM`` in /proc) and the bytes it read from files (``rchar`` in /proc,
which counts read(2) and not the sockets' recv).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("starlette")
if not Path("/proc/self/io").exists():
    pytest.skip("counts memory and reads in /proc (Linux)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
TOOLUSE = Path(sys.executable).parent / "tooluse"
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}

MB = 1 << 20
#: The trace: well past any real run's, and far more than the viewer may hold.
TRACE_BYTES = 100 * MB
#: What reading, indexing and serving that trace may add to the viewer's peak memory.
MEMORY_BOUND = 24 * MB
FILLER = "x" * 2_000


def proc_field(pid: int, name: str, field: str) -> int:
    for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
        key, _, value = line.partition(":")
        if key == field:
            return int(value.split()[0])
    raise AssertionError(f"no {field} in /proc/{pid}/{name}")


def peak_memory(pid: int) -> int:
    return proc_field(pid, "status", "VmHWM") * 1024


def bytes_read(pid: int) -> int:
    return proc_field(pid, "io", "rchar")


def event_line(i: int) -> str:
    if i % 10 == 0:
        usage = {"input_tokens": 100, "output_tokens": 10}
        message = {"role": "assistant", "content": f"round {i // 10}"}
        event = {"event": "model_response", "message": message, "usage": usage, "t": float(i)}
    else:
        event = {
            "event": "call",
            "id": f"c{i}",
            "name": "fetch",
            "arguments": {"i": i},
            "result": f"{i} {FILLER}",
            "duration_s": 0.001,
            "t": float(i),
        }
    return json.dumps(event) + "\n"


def shows(html: str, i: int) -> bool:
    """Whether ``html`` holds event ``i`` of `event_line`."""
    return f"round {i // 10}<" in html if i % 10 == 0 else f"(c{i})" in html


def write_big_trace(path: Path) -> int:
    """A run still being written (no end) of at least TRACE_BYTES; how many events."""
    start = {"event": "run_start", "task": "big", "model": "m", "convention": "json", "t": 0.0}
    size, count = 0, 1
    with path.open("w") as handle:
        handle.write(json.dumps(start) + "\n")
        while size < TRACE_BYTES:
            block = "".join(event_line(i) for i in range(count, count + 1_000))
            handle.write(block)
            size += len(block)
            count += 1_000
    return count


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    small = runs / "small.jsonl"
    start = {"event": "run_start", "task": "small", "model": "m", "convention": "json", "t": 0.0}
    small.write_text(json.dumps(start) + "\n" + "".join(event_line(i) for i in range(1, 30)))
    return runs


@pytest.fixture
def viewer(folder: Path) -> Iterator[tuple[subprocess.Popen[str], httpx.Client]]:
    server = subprocess.Popen(
        [str(TOOLUSE), "view", str(folder), "--port", "0"],
        env=ENV,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        found = re.search(r"http://127\.0\.0\.1:\d+/", server.stderr.readline())
        assert found is not None
        with httpx.Client(base_url=found.group(0), timeout=120) as http:
            yield server, http
    finally:
        server.terminate()
        server.wait(timeout=30)


def run_id_of(http: httpx.Client, task: str) -> str:
    index = http.get("/").text
    found = re.search(
        rf'href="/run/([0-9a-f]+-\d+)" class="run-link">[^<]*</a></td><td[^>]*>{task}<', index
    )
    assert found is not None, index[-2000:]
    return found.group(1)


def browse(http: httpx.Client, run_id: str) -> tuple[str, str]:
    """What a user does with a run: the list, the run's first and last pages, its tail,
    a raw line; returns the last page and its live URL."""
    assert http.get("/").status_code == 200
    assert http.get("/state").status_code == 200
    first = http.get(f"/run/{run_id}")
    assert first.status_code == 200
    pages = re.findall(rf"/run/{run_id}\?page=(\d+)", first.text)
    last_page = max(map(int, pages), default=0)
    last = http.get(f"/run/{run_id}" + (f"?page={last_page}" if last_page else "")).text
    live = re.search(r'data-live="([^"]+)"', last)
    assert live is not None
    url = live.group(1).replace("&amp;", "&")
    assert http.get(url).json()["html"] == ""
    raw = http.get(f"/raw/{run_id}/3")
    assert raw.status_code == 200 and raw.text == event_line(2)
    return last, url


def test_a_huge_live_trace_costs_a_page_of_memory_and_an_append_costs_its_bytes(
    folder: Path, viewer: tuple[subprocess.Popen[str], httpx.Client]
) -> None:
    server, http = viewer
    browse(http, run_id_of(http, "small"))  # every code path warm: imports read files too
    before = peak_memory(server.pid)

    big = folder / "big.jsonl"
    events = write_big_trace(big)
    assert big.stat().st_size >= TRACE_BYTES
    run_id = run_id_of(http, "big")
    last, live = browse(http, run_id)
    assert f"{events:,} events" in last and shows(last, events - 1)
    grown = peak_memory(server.pid) - before
    assert grown < MEMORY_BOUND, f"peak memory grew by {grown / MB:.0f} MB"

    # Nothing changed: a poll reads nothing.
    read = bytes_read(server.pid)
    state = http.get("/state").json()["state"]
    assert http.get(live).json()["html"] == ""
    assert bytes_read(server.pid) - read < 4096

    # One line appended: the poll reads that line, not the file again.
    line = event_line(events)
    with big.open("a") as handle:
        handle.write(line)
    read = bytes_read(server.pid)
    assert http.get("/state").json()["state"] != state
    polled = bytes_read(server.pid) - read
    assert polled < 2 * len(line) + 4096, f"{polled:,} bytes read for {len(line):,} appended"

    # The open page's tail hands over the new event, reading at most its page.
    read = bytes_read(server.pid)
    tail = http.get(live).json()
    assert shows(tail["html"], events)
    page_bytes = 500 * len(event_line(1)) * 2
    assert bytes_read(server.pid) - read < page_bytes
