"""`tooluse view` as a command: a static bundle, a clear error, and a server on loopback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

pytest.importorskip("starlette")

from ._traces import REJECTED_WORD, json_run

ROOT = Path(__file__).resolve().parents[2]
TOOLUSE = Path(sys.executable).parent / "tooluse"
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}


def tooluse(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLUSE), *args], env=ENV, capture_output=True, text=True, timeout=60, check=False
    )


def test_static_writes_a_bundle_and_a_missing_path_is_one_error_line(tmp_path: Path) -> None:
    json_run(tmp_path / "runs" / "t.jsonl")
    site = tmp_path / "site"
    done = tooluse("view", str(tmp_path / "runs"), "--static", str(site))
    assert done.returncode == 0, done.stderr
    pages = list(site.glob("run-*.html"))
    assert len(pages) == 1 and REJECTED_WORD in pages[0].read_text()
    missing = tooluse("view", str(tmp_path / "nowhere"))
    assert missing.returncode == 2
    lines = missing.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no such file or directory")


@contextmanager
def viewer(*paths: Path) -> Iterator[str]:
    """`tooluse view PATHS --port 0` as a real process; its URL."""
    server = subprocess.Popen(
        [str(TOOLUSE), "view", *map(str, paths), "--port", "0"],
        env=ENV,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        banner = server.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/", banner)
        assert found is not None, banner
        yield found.group(0)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_server_serves_on_loopback(tmp_path: Path) -> None:
    json_run(tmp_path / "t.jsonl")
    with viewer(tmp_path) as url:
        index = httpx.get(url, timeout=30)
        assert index.status_code == 200 and "Weather in Paris?" in index.text


def test_the_server_answers_only_requests_addressed_to_it(tmp_path: Path) -> None:
    json_run(tmp_path / "t.jsonl")
    with viewer(tmp_path) as url, httpx.Client(base_url=url, timeout=30) as http:
        port = int(url.rstrip("/").rpartition(":")[2])
        run = re.search(r'href="(/run/[^"]+)"', http.get("/").text)
        assert run is not None
        paths = ["/", "/state", run.group(1), f"{run.group(1)}/more?from=0", "/assets/view.js"]
        for path in paths:
            for own in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
                assert http.get(path, headers={"host": own}).status_code == 200, (path, own)
            # A page on a rebound name, or on another port, reaches the same socket.
            for foreign in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{port + 1}"):
                refused = http.get(path, headers={"host": foreign})
                assert refused.status_code == 421, (path, foreign)
                assert "Weather" not in refused.text
            for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}", "null"):
                refused = http.get(path, headers={"origin": origin})
                assert refused.status_code == 403, (path, origin)
            own_origin = http.get(path, headers={"origin": f"http://127.0.0.1:{port}"})
            assert own_origin.status_code == 200, path
