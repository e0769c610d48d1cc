"""Real sandboxes (bubblewrap when present), small limits so the attack tests stay quick."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import pytest

from tooluse.sandbox import Sandbox, SandboxLimits

SMALL = SandboxLimits(
    cpu_seconds=2,
    memory_mb=128,
    max_processes=16,
    max_file_mb=4,
    scratch_mb=16,
    max_output_bytes=2_000,
    flood_limit_mb=2,
    max_calls=1_000,
)


def processes_of(uid: int) -> list[int]:
    """Host pids whose real uid is ``uid`` (zombies included)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            found.append(int(entry))
                        break
        except OSError:
            continue
    return found


def wait_for_count(uid: int, expected: int, within: float = 5.0) -> int:
    """Poll until ``uid`` has ``expected`` processes (reaping is asynchronous)."""
    deadline = time.monotonic() + within
    count = len(processes_of(uid))
    while count != expected and time.monotonic() < deadline:
        time.sleep(0.02)
        count = len(processes_of(uid))
    return count


@pytest.fixture(name="processes_of")
def processes_of_fixture() -> Callable[[int], list[int]]:
    return processes_of


@pytest.fixture
def count_after() -> Callable[[int, int], int]:
    """``count_after(uid, expected)``: the process count of ``uid`` once it settles."""
    return wait_for_count


# The default mode ("auto") starts the very sandbox "required" does wherever bubblewrap
# works, as here (make setup installs it; `test_sync_api` checks that the default is
# bwrap+seccomp): the attacks run once, on the sandbox that must isolate. What the
# default does without bubblewrap is test_sandbox_fallback's, with bwrap off the PATH.
@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """The attacks run on a sandbox that must isolate."""
    sb = Sandbox(isolation="required", limits=SMALL)
    sb.start()
    yield sb
    uid = sb.uid
    sb.close()
    if uid is not None:
        assert wait_for_count(uid, 0) == 0, "processes left behind after close()"


# bwrap, its pid-1 reaper, the server, and one monitor + worker pair forked ahead.
IDLE_PROCESSES = 5


@pytest.fixture
def no_leftovers(sandbox: Sandbox) -> Iterator[None]:
    """Every script's processes are gone once its result is back."""
    assert sandbox.uid is not None
    assert wait_for_count(sandbox.uid, IDLE_PROCESSES) == IDLE_PROCESSES
    yield
    assert wait_for_count(sandbox.uid, IDLE_PROCESSES) == IDLE_PROCESSES, "processes left behind"
