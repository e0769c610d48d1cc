"""`tooluse view` as a command: a static bundle, a clear error, and a server on loopback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
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


def test_the_server_serves_on_loopback(tmp_path: Path) -> None:
    json_run(tmp_path / "t.jsonl")
    server = subprocess.Popen(
        [str(TOOLUSE), "view", str(tmp_path), "--port", "0"],
        env=ENV,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        banner = server.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/", banner)
        assert found is not None, banner
        url = found.group(0)
        index = httpx.get(url, timeout=30)
        assert index.status_code == 200 and "Weather in Paris?" in index.text
    finally:
        server.terminate()
        server.wait(timeout=30)
