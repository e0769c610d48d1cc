"""The official MCP conformance suite (``@modelcontextprotocol/conformance`` 0.1.10)
against our client: its client scenarios ``initialize`` and ``tools_call``.

Every check the suite fails must be listed below with its reason, and a listed
check that passes fails the test, so the list never goes stale.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from client_helpers import CACHE, ROOT, installed

DRIVER = Path(__file__).with_name("client_conformance.py")

#: (scenario, check id) → why our client fails it. Empty: it fails none.
EXPECTED_FAILURES: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize("scenario", ["initialize", "tools_call"])
def test_client_scenario(scenario: str, tmp_path: Path) -> None:
    suite = installed(CACHE / "npm" / "conformance" / "node_modules" / ".bin" / "conformance")
    command = f"{sys.executable} {DRIVER}"
    assert " " not in sys.executable + str(DRIVER), "the suite splits the command on spaces"
    proc = subprocess.run(
        [str(suite), "client", "--command", command, "--scenario", scenario, "-o", str(tmp_path)],
        cwd=ROOT,
        env={"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
             "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )  # fmt: skip
    (result,) = tmp_path.glob(f"{scenario}-*/checks.json")
    checks = json.loads(result.read_text())
    judged = [c for c in checks if c["status"] in ("SUCCESS", "FAILURE", "WARNING")]
    assert judged, f"the suite judged nothing:\n{proc.stdout}\n{proc.stderr}"
    failed = {(scenario, c["id"]): c.get("errorMessage") or c.get("details") for c in judged
              if c["status"] != "SUCCESS"}  # fmt: skip
    expected = {key for key in EXPECTED_FAILURES if key[0] == scenario}
    unexpected = {key: why for key, why in failed.items() if key not in expected}
    stale = expected - set(failed)
    assert not unexpected, f"checks failed: {unexpected}\n{proc.stdout[-3000:]}"
    assert not stale, f"listed as failing, but passed (remove them): {stale}"
    assert proc.returncode == 0, proc.stdout[-3000:]
