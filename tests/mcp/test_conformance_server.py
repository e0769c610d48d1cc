"""Our server against the official MCP conformance suite (``@modelcontextprotocol/conformance``).

`tooluse mcp serve tests.mcp.conformance_tools:toolbox --http 127.0.0.1:0` runs as a
real process, and each server scenario of the suite (npm, installed by
scripts/setup.sh) runs against it. Every check passes but those listed in
EXPECTED_FAILURES, each with its reason; an entry whose check passes, or no longer
exists, fails the test, so the list cannot outlive its cause.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLUSE = Path(sys.executable).parent / "tooluse"
CONFORMANCE = ROOT / ".cache/npm/conformance/node_modules/.bin/conformance"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
DEADLINE_S = 60.0
LOOPBACK = ["--http", "127.0.0.1:0"]  # port 0: the server takes a free one and says which

SCENARIOS = [
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-logging",
    "tools-call-with-progress",
    "json-schema-2020-12",
]

# (scenario, check id): why our server fails that check on purpose. Empty: it
# fails none, and an entry added here must still fail or the run fails.
EXPECTED_FAILURES: dict[tuple[str, str], str] = {}


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    assert CONFORMANCE.exists(), f"{CONFORMANCE} is missing: run scripts/setup.sh"
    server = subprocess.Popen(
        [str(TOOLUSE), "mcp", "serve", "tests.mcp.conformance_tools:toolbox", *LOOPBACK],
        cwd=ROOT,
        env=ENV,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    # Drained to the end, so that the server never blocks on a full pipe.
    threading.Thread(
        target=lambda: [lines.put(line) for line in server.stderr or ()], daemon=True
    ).start()
    try:
        url = _announced_url(lines, server)
        _wait_until_it_answers(url)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _announced_url(lines: queue.Queue[str], server: subprocess.Popen[str]) -> str:
    seen: list[str] = []
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            if server.poll() is not None:
                break
            continue
        seen.append(line)
        if " at http://" in line:
            return line.rsplit(" at ", 1)[1].strip()
    raise AssertionError(f"the server announced no URL; it printed: {''.join(seen)!r}")


def _wait_until_it_answers(url: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        try:
            urllib.request.urlopen(url, timeout=5)
        except urllib.error.HTTPError:
            return  # a GET without a session is refused: the server is up
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
        else:
            return


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario(server_url: str, scenario: str, tmp_path: Path) -> None:
    output = ["--output-dir", str(tmp_path)]
    run = subprocess.run(
        [str(CONFORMANCE), "server", "--url", server_url, "--scenario", scenario, *output],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    found = list(tmp_path.rglob("checks.json"))
    assert found, f"the suite wrote no checks:\n{run.stdout}\n{run.stderr}"
    checks = json.loads(found[0].read_text())
    status = {check["id"]: check["status"] for check in checks}
    expected = {check for (name, check) in EXPECTED_FAILURES if name == scenario}

    assert checks, run.stdout
    assert expected <= set(status), f"expected failures that are no longer checks: {expected}"
    # A warning fails a run of the suite as a failure does.
    failed = {check for check, state in status.items() if state in {"FAILURE", "WARNING"}}
    details = {c["id"]: c.get("errorMessage") for c in checks if c["id"] in failed ^ expected}
    assert failed == expected, details
