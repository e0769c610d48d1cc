"""Hostile scripts: each attempt is contained, the host survives, nothing is left running."""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tooluse.sandbox import Sandbox

pytestmark = pytest.mark.usefixtures("no_leftovers")

REPO = Path(__file__).resolve().parents[2]


def attempt(action: str) -> str:
    """A script line that prints BLOCKED if ``action`` raises, LEAKED otherwise."""
    return (
        "try:\n"
        f"    {action}\n"
        "    print('LEAKED')\n"
        "except Exception as exc:\n"
        "    print('BLOCKED', type(exc).__name__)\n"
    )


async def test_host_files_are_invisible(sandbox: Sandbox) -> None:
    targets = [
        "/etc/shadow",
        "/etc/passwd",
        "/root/.bashrc",
        str(REPO / "pyproject.toml"),
        str(Path(__file__)),
        "/proc/1/root/etc/shadow",
        "/proc/1/root" + str(REPO / "pyproject.toml"),
    ]
    script = "".join(attempt(f"open({t!r}).read()") for t in targets)
    script += "import os\nprint(sorted(os.listdir('/')))\nprint(os.listdir('/root'))\n"
    result = await sandbox.execute(script)
    lines = result.stdout.splitlines()
    assert all(line.startswith("BLOCKED") for line in lines[: len(targets)]), lines
    listing = set(eval(lines[-2]))
    assert listing <= {
        "bin",
        "dev",
        "etc",
        "lib",
        "lib64",
        "proc",
        "root",
        "run",
        "sbin",
        "tmp",
        "usr",
    }
    # /root holds only the bound Python installation, if Python lives there.
    assert lines[-1] in ("['.pyenv']", "[]")


async def test_proc_roots_show_only_the_sandbox(sandbox: Sandbox) -> None:
    script = (
        "import os\n"
        "seen = set()\n"
        "for pid in (p for p in os.listdir('/proc') if p.isdigit()):\n"
        "    try:\n"
        "        seen.update(os.listdir(f'/proc/{pid}/root'))\n"
        "    except OSError:\n"
        "        pass\n"
        "print(sorted(seen))\n"
    )
    result = await sandbox.execute(script)
    assert "work" not in result.stdout
    assert "home" not in result.stdout


async def test_writes_outside_scratch_fail(sandbox: Sandbox, tmp_path: Path) -> None:
    targets = ["/usr/evil", "/etc/evil", "/evil", "/root/evil", str(tmp_path / "evil")]
    script = "".join(attempt(f"open({t!r}, 'w').write('x')") for t in targets)
    script += attempt("__import__('os').mkdir('/work')")
    result = await sandbox.execute(script)
    assert result.stdout.count("BLOCKED") == len(targets) + 1, result.stdout
    assert not (tmp_path / "evil").exists()
    assert not Path("/evil").exists()


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, addr = server.accept()
            except (TimeoutError, OSError):
                continue
            accepted.append(addr)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


async def test_network_is_unreachable(sandbox: Sandbox, listener: tuple[int, list[object]]) -> None:
    port, accepted = listener
    # The listener is live: a plain connection from the host gets through.
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
    script = (
        attempt(f"__import__('socket').create_connection(('127.0.0.1', {port}), timeout=2)")
        + attempt("__import__('socket').socket(__import__('socket').AF_INET6)")
        + attempt("__import__('socket').socket(16, 3, 0)")  # netlink
        + attempt("__import__('urllib.request').request.urlopen('http://example.com', timeout=2)")
    )
    result = await sandbox.execute(script)
    assert result.stdout.count("BLOCKED") == 4, result.stdout
    assert len(accepted) == 1


async def test_raw_syscalls_through_ctypes_are_filtered(sandbox: Sandbox) -> None:
    script = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = libc.syscall(41, 2, 1, 0)  # socket(AF_INET, SOCK_STREAM, 0)\n"
        "print(fd, os.strerror(ctypes.get_errno()))\n"
        "print(libc.syscall(425, 8, 0))  # io_uring_setup\n"
        "print(libc.syscall(101, 16, 1, 0, 0))  # ptrace(PTRACE_ATTACH, 1)\n"
    )
    result = await sandbox.execute(script)
    assert result.stdout.splitlines() == ["-1 Operation not permitted", "-1", "-1"]


async def test_ctypes_crash_kills_only_the_script(sandbox: Sandbox) -> None:
    result = await sandbox.execute("import ctypes\nctypes.string_at(0)")
    assert result.status == "killed"
    assert result.error == "the script was killed by SIGSEGV"
    assert (await sandbox.execute("print('still here')")).stdout == "still here\n"


async def test_environment_holds_no_host_secrets(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s3cr3t-" + os.urandom(8).hex()
    monkeypatch.setenv("TOOLUSE_TEST_SECRET", secret)
    # A sandbox started after the secret was set, so it would have inherited it.
    with Sandbox(limits=sandbox.limits) as fresh:
        script = (
            "import os\n"
            "print(dict(os.environ))\n"
            "for pid in ['self', '1', str(os.getppid())] + os.listdir('/proc'):\n"
            "    try:\n"
            "        print(pid, open(f'/proc/{pid}/environ', 'rb').read())\n"
            "    except OSError:\n"
            "        pass\n"
        )
        result = await fresh.execute(script)
    assert result.status == "ok", result.error
    assert secret not in result.stdout
    assert "TOOLUSE_TEST_SECRET" not in result.stdout


async def test_signals_cannot_reach_the_host(sandbox: Sandbox) -> None:
    script = (
        attempt(f"__import__('os').kill({os.getpid()}, 9)")
        + attempt("__import__('os').kill(1, 9)")
        + attempt("__import__('os').kill(-1, 9)")
        + attempt(f"__import__('os').killpg({os.getpgid(0)}, 9)")
        + "print('alive')\n"
    )
    result = await sandbox.execute(script)
    # pid 1 is the script itself in its own pid namespace, so some calls "succeed" on it
    # and are ignored; none of them can name a process outside.
    assert result.stdout.endswith("alive\n")
    assert (await sandbox.execute("print('server alive')")).stdout == "server alive\n"


async def test_fork_bomb(sandbox: Sandbox) -> None:
    script = (
        "import os\n"
        "children = 0\n"
        "try:\n"
        "    while True:\n"
        "        if os.fork() == 0:\n"
        "            while True:\n"
        "                try:\n"
        "                    os.fork()\n"
        "                except OSError:\n"
        "                    pass\n"
        "        children += 1\n"
        "except OSError as exc:\n"
        "    print('fork refused after', children, type(exc).__name__)\n"
    )
    result = await sandbox.execute(script, timeout=5)
    assert result.status == "ok", result.error
    assert result.stdout.startswith("fork refused after")
    assert int(result.stdout.split()[3]) < sandbox.limits.max_processes + 20


async def test_memory_bomb_in_many_processes(sandbox: Sandbox) -> None:
    script = (
        "import os\n"
        "for _ in range(4):\n"
        "    if os.fork() == 0:\n"
        "        hog = []\n"
        "        while True:\n"
        "            hog.append(bytearray(10**6))\n"
        "hog = []\n"
        "while True:\n"
        "    hog.append(bytearray(10**6))\n"
    )
    result = await sandbox.execute(script, timeout=5)
    assert result.limit == "memory"


async def test_filling_the_disk(sandbox: Sandbox) -> None:
    script = (
        "import os\n"
        "chunk = b'x' * 2**20\n"
        "written = 0\n"
        "try:\n"
        "    for n in range(10_000):\n"
        "        with open(f'fill{n}', 'wb') as f:\n"
        "            for _ in range(2):\n"
        "                f.write(chunk)\n"
        "                written += 1\n"
        "except OSError as exc:\n"
        "    print('stopped after', written, 'MiB:', exc.strerror)\n"
        "for name in os.listdir('.'):\n"
        "    if name.startswith('fill'):\n"
        "        os.remove(name)\n"
    )
    result = await sandbox.execute(script)
    assert result.status == "ok", result.error
    assert result.stdout.startswith("stopped after")
    assert "No space left on device" in result.stdout
    assert int(result.stdout.split()[2]) <= sandbox.limits.scratch_mb


async def test_one_big_file_hits_the_file_size_limit(sandbox: Sandbox) -> None:
    script = "f = open('big', 'wb')\n" + attempt("f.write(b'x' * (5 * 2**20)); f.flush()")
    result = await sandbox.execute(script + "import os\nos.remove('big')\n")
    assert result.stdout == "BLOCKED OSError\n"


async def test_runs_as_an_unprivileged_uid_without_capabilities(sandbox: Sandbox) -> None:
    script = (
        "import os\n"
        "status = open('/proc/self/status').read()\n"
        "caps = [l.split()[1] for l in status.splitlines() if l.startswith(('CapEff', 'CapPrm'))]\n"
        "print(os.getuid(), os.getpid(), caps)\n"
        "print([l.split()[1] for l in status.splitlines() if l.startswith('NoNewPrivs')])\n"
    )
    result = await sandbox.execute(script)
    uid, pid, *_ = result.stdout.split()
    assert int(uid) == sandbox.uid != 0
    assert pid == "1"
    assert "['0000000000000000', '0000000000000000']" in result.stdout
    assert "['1']" in result.stdout


async def test_user_namespaces_are_disabled(sandbox: Sandbox) -> None:
    script = attempt("__import__('os').system('unshare -Ur true') and 1/0")
    script += "import ctypes\nprint(ctypes.CDLL(None).unshare(0x10000000))\n"
    result = await sandbox.execute(script)
    assert result.stdout.splitlines()[-1] == "-1"


async def test_host_survives_a_script_killing_its_own_runtime(sandbox: Sandbox) -> None:
    script = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"
    result = await sandbox.execute(script)
    # The script is pid 1 of its namespace: a signal it sends itself is ignored.
    assert result.status == "ok"
    result = await sandbox.execute("import os\nos._exit(7)")
    assert (result.status, result.error) == ("error", "the script exited with status 7")


def test_host_process_unharmed() -> None:
    assert signal.getsignal(signal.SIGINT) is not None
    assert os.getpid() > 0
