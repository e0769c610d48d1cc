"""Two workers share nothing but a Postgres database, which the test starts itself.

Debian's ``postgresql`` gives ``initdb`` and ``pg_ctl`` (scripts/setup.sh installs it);
they run as the ``postgres`` user, in a folder of the test's, on a free port of
127.0.0.1, and the server is stopped at the end. Worker ``a`` is SIGKILLed in the
middle of a run; worker ``b`` finishes a run of its own, takes over ``a``'s pending run
and finishes it, and every call that had ended ran exactly once.
"""

from __future__ import annotations

import glob
import shutil
import socket
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tooluse.durable import list_runs, show_run

from ._children import Child, executions

BINARIES = sorted(glob.glob("/usr/lib/postgresql/*/bin"))

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        not BINARIES or shutil.which("runuser") is None,
        reason="Debian's postgresql is not installed (scripts/setup.sh installs it)",
    ),
]


def _as_postgres(*argv: str) -> None:
    subprocess.run(
        ["runuser", "-u", "postgres", "--", *argv],
        check=True,
        capture_output=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """A Postgres server of this module's own: its URL."""
    bin_dir = BINARIES[-1]
    folder = Path(tempfile.mkdtemp(prefix="tooluse-pg-"))
    shutil.chown(folder, "postgres", "postgres")
    data = folder / "data"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _as_postgres(f"{bin_dir}/initdb", "-D", str(data), "-A", "trust", "-U", "postgres")
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1"
    _as_postgres(f"{bin_dir}/pg_ctl", "-D", str(data), "-l", str(folder / "log"), "-o", options,
                 "-w", "start")  # fmt: skip
    try:
        # DBOS creates the database on first launch.
        yield f"postgresql://postgres@127.0.0.1:{port}/tooluse_runs"
    finally:
        _as_postgres(f"{bin_dir}/pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)


def test_a_worker_killed_mid_run_is_recovered_by_another(postgres: str, tmp_path: Path) -> None:
    a = Child(tmp_path, "a", url=postgres, worker="a", run_id="r1", convention="json",
              block="lookup:bb")  # fmt: skip
    assert a.until("AT ") == "AT lookup:bb"
    a.kill()
    assert executions(tmp_path) == ["lookup:a", "lookup:bb"]
    assert show_run("r1", postgres).status == "PENDING"
    b = Child(tmp_path, "b", url=postgres, worker="b", run_id="r1", convention="json",
              before="r2", recover=["a"])  # fmt: skip
    assert b.until("BEFORE ") == "BEFORE done after 4 calls"
    assert b.until("RECOVERED ") == "RECOVERED r1"
    result = b.result()
    assert (result["status"], result["answer"]) == ("completed", "done after 4 calls")
    # r2 ran each call once; r1 ran each once but for the read call a's death cut short.
    assert Counter(executions(tmp_path)) == {
        "lookup:a": 2, "lookup:bb": 3, "lookup:ccc": 2, "send:bob": 2,
    }  # fmt: skip
    runs = {r.id: r for r in list_runs(postgres)}
    assert {i: (r.status, r.worker) for i, r in runs.items()} == {
        "r1": ("SUCCESS", "b"),
        "r2": ("SUCCESS", "b"),
    }
