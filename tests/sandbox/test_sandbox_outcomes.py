"""How scripts end: each case returns a clear message and leaves nothing running."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable

import pytest

from tooluse.sandbox import ExecResult, ProxySpec, Sandbox, ToolReply

pytestmark = pytest.mark.usefixtures("no_leftovers")


async def test_isolation_is_full(sandbox: Sandbox) -> None:
    assert sandbox.isolation == "bwrap+seccomp"


async def test_prints_and_succeeds(sandbox: Sandbox) -> None:
    result = await sandbox.execute("print('hello', 6 * 7)")
    assert result.status == "ok"
    assert result.ok
    assert result.stdout == "hello 42\n"
    assert result.stderr == ""
    assert result.error is None
    assert result.calls_made == 0
    assert not result.truncated
    assert result.duration_s > 0


async def test_stderr_is_separate(sandbox: Sandbox) -> None:
    result = await sandbox.execute("import sys\nprint('out')\nprint('err', file=sys.stderr)")
    assert (result.stdout, result.stderr) == ("out\n", "err\n")


async def test_syntax_error_has_line_and_column(sandbox: Sandbox) -> None:
    result = await sandbox.execute("x = 1\ny = = 2\n")
    assert result.status == "error"
    assert result.error is not None
    assert result.error.startswith("SyntaxError: invalid syntax (line 2, column 5)")
    assert "y = = 2" in result.error


async def test_traceback_shows_only_the_script(sandbox: Sandbox) -> None:
    script = "import json\n\ndef parse(text):\n    return json.loads(text)\n\nparse('{oops')\n"
    result = await sandbox.execute(script)
    assert result.status == "error"
    assert result.error is not None
    assert 'File "script.py", line 6, in <module>' in result.error
    assert 'File "script.py", line 4, in parse' in result.error
    assert result.error.endswith(
        "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)"
    )
    assert "_server" not in result.error
    assert "json/decoder.py" not in result.error


async def test_sys_exit(sandbox: Sandbox) -> None:
    assert (await sandbox.execute("import sys; sys.exit(0)")).status == "ok"
    result = await sandbox.execute("import sys; sys.exit(3)")
    assert (result.status, result.error) == ("error", "the script exited with status 3")


async def test_output_before_an_error_is_kept(sandbox: Sandbox) -> None:
    result = await sandbox.execute("print('partial')\nraise ValueError('bad input')")
    assert result.stdout == "partial\n"
    assert result.error is not None
    assert result.error.endswith("ValueError: bad input")


async def test_timeout(sandbox: Sandbox) -> None:
    result = await sandbox.execute(
        "import time\nprint('start', flush=True)\ntime.sleep(60)", timeout=1
    )
    assert (result.status, result.limit) == ("timeout", "wall_clock")
    assert result.error == "timed out after 1s"
    assert result.stdout == "start\n"


async def test_sleep_forever_in_a_child_process(sandbox: Sandbox) -> None:
    script = "import subprocess\nsubprocess.Popen(['sleep', '1000'])\nprint('parent done')"
    result = await sandbox.execute(script)
    # The script ends at once; the sleeping child dies with its pid namespace.
    assert result.status == "ok"


async def test_cpu_limit(sandbox: Sandbox) -> None:
    result = await sandbox.execute("while True:\n    pass", timeout=20)
    assert (result.status, result.limit) == ("killed", "cpu")
    assert result.error == "CPU time limit exceeded (2s of CPU time)"


async def test_memory_limit(sandbox: Sandbox) -> None:
    result = await sandbox.execute("blocks = []\nwhile True:\n    blocks.append(bytearray(10**7))")
    assert (result.status, result.limit) == ("killed", "memory")
    assert result.error is not None
    assert result.error.startswith("memory limit exceeded (128 MiB)")
    assert "MemoryError" in result.error


async def test_one_huge_allocation(sandbox: Sandbox) -> None:
    result = await sandbox.execute("x = 'a' * (10**10)")
    assert result.limit == "memory"


async def test_output_is_cut_in_the_middle(sandbox: Sandbox) -> None:
    result = await sandbox.execute("for i in range(20_000):\n    print(f'line {i}')")
    assert result.status == "ok"
    assert result.truncated
    assert result.stdout.startswith("line 0\nline 1\n")
    assert result.stdout.endswith("line 19999\n")
    assert "characters cut ...]" in result.stdout
    assert len(result.stdout) < 2_200


async def test_output_flood_is_stopped(sandbox: Sandbox) -> None:
    result = await sandbox.execute("while True:\n    print('x' * 1000)", timeout=20)
    assert (result.status, result.limit) == ("killed", "output")
    assert result.error is not None
    assert "more than 2 MiB to stdout" in result.error
    assert result.truncated


async def test_unicode_output(sandbox: Sandbox) -> None:
    result = await sandbox.execute("print('héllo wörld ✓ 🎉')")
    assert result.stdout == "héllo wörld ✓ 🎉\n"


async def test_top_level_await(sandbox: Sandbox) -> None:
    result = await sandbox.execute("import asyncio\nawait asyncio.sleep(0)\nprint('awaited')")
    assert result.stdout == "awaited\n"


async def test_scratch_directory_is_writable(sandbox: Sandbox) -> None:
    script = (
        "import os, tempfile\n"
        "open('notes.txt', 'w').write('kept')\n"
        "with tempfile.NamedTemporaryFile() as f:\n"
        "    f.write(b'x')\n"
        "print(os.getcwd(), open('notes.txt').read())"
    )
    result = await sandbox.execute(script)
    assert result.stdout == "/tmp kept\n"


async def test_random_differs_between_scripts(sandbox: Sandbox) -> None:
    script = "import random; print(random.random())"
    first = await sandbox.execute(script)
    second = await sandbox.execute(script)
    assert first.stdout != second.stdout


def test_sync_api(sandbox: Sandbox) -> None:
    with Sandbox(limits=sandbox.limits) as sb:
        result: ExecResult = sb.execute_sync("print(sum(range(10)))")
        assert result.stdout == "45\n"
        assert sb.isolation == "bwrap+seccomp"


async def test_cancelled_execute_kills_the_script(sandbox: Sandbox) -> None:
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(sandbox.execute("while True:\n    pass", timeout=30), 0.5)
    # no_leftovers checks that the script is gone.


def test_a_script_outlives_the_thread_that_started_its_sandbox(sandbox: Sandbox) -> None:
    # Web servers run agents on thread pools: the thread that started a Sandbox may exit
    # while another thread's script is running in it.
    starter: list[int] = []
    calling = threading.Event()
    release = threading.Event()
    results: list[ExecResult] = []

    def handler(name: str, arguments: dict[str, object]) -> ToolReply:
        calling.set()
        release.wait(30)
        return ToolReply.ok(arguments["i"])

    def start() -> None:
        sb.start()
        starter.append(threading.get_native_id())

    def run_script() -> None:
        script = "import tools\nprint(sum(tools.step(i) for i in range(6)))"
        try:
            results.append(
                sb.execute_sync(script, tools=[ProxySpec("step", ["i"])], handler=handler)
            )
        finally:
            calling.set()  # a script that ended without calling is not waited for

    sb = Sandbox(limits=sandbox.limits)
    try:
        starting = threading.Thread(target=start)
        starting.start()
        starting.join()
        running = threading.Thread(target=run_script)
        running.start()
        assert calling.wait(30)
        # The starter is gone from the kernel, not only from Python, before the first call
        # is answered.
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/self/task/{starter[0]}") and time.monotonic() < deadline:
            time.sleep(0.01)
        release.set()
        running.join()
    finally:
        sb.close()
    (result,) = results
    assert (result.status, result.stdout, result.calls_made) == ("ok", "15\n", 6)


async def test_sandbox_recovers_when_its_processes_are_killed(
    sandbox: Sandbox,
    count_after: Callable[[int, int], int],
    processes_of: Callable[[int], list[int]],
) -> None:
    started = asyncio.Event()

    def host(name: str, arguments: dict[str, object]) -> ToolReply:
        started.set()
        return ToolReply.ok(None)

    with Sandbox(limits=sandbox.limits) as sb:
        assert sb.uid is not None
        running = asyncio.ensure_future(
            sb.execute(
                "import time, tools\ntools.started()\ntime.sleep(30)",
                tools=[ProxySpec("started", [])],
                handler=host,
            )
        )
        # The script is running once its call arrives; killing before that would
        # test a different path (a sandbox that dies while starting a script).
        await asyncio.wait_for(started.wait(), 30)
        for pid in processes_of(sb.uid):
            # A process listed a moment ago may already be gone: killing its
            # parent first takes it along.
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        result = await running
        assert result.status == "sandbox_error"
        assert (
            result.error == "the sandbox stopped before the script finished; it will be restarted"
        )
        assert (await sb.execute("print('restarted')")).stdout == "restarted\n"
        uid = sb.uid
    assert count_after(uid, 0) == 0
