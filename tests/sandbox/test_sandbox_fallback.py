"""Without bubblewrap: "auto" falls back loudly, "required" refuses, "none" runs unisolated."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tooluse.sandbox import (
    ProxySpec,
    Sandbox,
    SandboxLimits,
    SandboxUnavailable,
    SandboxWarning,
    ToolReply,
)

LIMITS = SandboxLimits(cpu_seconds=2, memory_mb=128, max_processes=16, max_output_bytes=2_000)


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))


@pytest.mark.usefixtures("no_bwrap")
def test_required_refuses_to_run_unisolated() -> None:
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        Sandbox(isolation="required", limits=LIMITS).start()


@pytest.mark.usefixtures("no_bwrap")
async def test_auto_falls_back_with_a_warning(count_after: Callable[[int, int], int]) -> None:
    sb = Sandbox(limits=LIMITS)
    with pytest.warns(SandboxWarning, match="WITHOUT isolation"):
        sb.start()
    try:
        assert sb.isolation == "none"

        async def handler(name: str, arguments: dict[str, object]) -> ToolReply:
            return ToolReply.ok(arguments["value"])

        script = (
            "import tools, socket\n"
            "print(tools.parallel(tools.echo, [1, 2, 3]))\n"
            "try:\n"
            "    socket.socket(socket.AF_INET)\n"
            "except OSError as exc:\n"
            "    print('no network:', exc.strerror)\n"
        )
        result = await sb.execute(script, tools=[ProxySpec("echo", ["value"])], handler=handler)
        assert result.status == "ok", result.error
        assert result.stdout == "[1, 2, 3]\nno network: Operation not permitted\n"
        result = await sb.execute("import time\ntime.sleep(30)", timeout=0.5)
        assert result.status == "timeout"
        # Even an escape into a new session is swept up when the script ends.
        script = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n"
        assert (await sb.execute(script)).status == "ok"
    finally:
        uid = sb.uid
        sb.close()
    if uid is not None:
        assert count_after(uid, 0) == 0


def test_explicit_none_runs_without_warning(recwarn: pytest.WarningsRecorder) -> None:
    with Sandbox(isolation="none", limits=LIMITS) as sb:
        assert sb.execute_sync("print('plain')").stdout == "plain\n"
        assert sb.isolation == "none"
    assert not [w for w in recwarn if issubclass(w.category, SandboxWarning)]
