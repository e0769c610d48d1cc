"""What the client's tests share: the commands of real MCP servers (third-party ones
from PyPI and npm, which setup installs, and ``client_servers.py``, ours, which
misbehaves on request), and waiting on processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache"
MISBEHAVING = str(Path(__file__).with_name("client_servers.py"))
PYTHON = sys.executable

# Generous: servers start on a busy 2-core machine; no test waits this long unless broken.
DEADLINE_S = 60.0


def installed(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"{path.relative_to(ROOT)} is missing: run `make setup`")
    return path


def time_server() -> list[str]:
    return [PYTHON, "-m", "mcp_server_time"]


def everything_server() -> list[str]:
    prefix = installed(CACHE / "npm" / "everything")
    return ["npx", "--prefix", str(prefix), "--no-install", "mcp-server-everything", "stdio"]


def sqlite_server(db: Path) -> list[str]:
    server = installed(CACHE / "mcp-sqlite" / "bin" / "mcp-server-sqlite")
    return [str(server), "--db-path", str(db)]


def misbehaving(*args: str) -> list[str]:
    return [PYTHON, MISBEHAVING, *args]


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def children() -> set[int]:
    """Live processes whose parent is this one."""
    found = set()
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue  # ended while we looked
        if fields[1] == me and fields[0] != "Z":
            found.add(int(entry))
    return found


@dataclass
class HttpServer:
    """Our misbehaving server over Streamable HTTP, which the test can kill and restart."""

    tmp: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        port_file = self.tmp / f"port-{time.monotonic_ns()}"
        self.process = subprocess.Popen(
            misbehaving("--http", "--port-file", str(port_file), "--port", str(self.port)),
            stderr=subprocess.DEVNULL,
        )
        wait_for(lambda: port_file.exists() and port_file.read_text() != "", "the port")
        self.port = int(port_file.read_text())

    def kill(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
            self.process = None


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
    except OSError:
        return False
    return True


@dataclass
class EverythingHttp:
    """The npm reference server over Streamable HTTP (it keeps sessions), restartable
    on the same port."""

    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        if not self.port:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]
        prefix = installed(CACHE / "npm" / "everything")
        command = ["npx", "--prefix", str(prefix), "--no-install", "mcp-server-everything"]
        process = self.process = subprocess.Popen(
            [*command, "streamableHttp"],
            env={**os.environ, "PORT": str(self.port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # npx and the node it starts, killed together
        )
        wait_for(
            lambda: process.poll() is not None or _listening(self.port), "the server to listen"
        )
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}")

    def kill(self) -> None:
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            self.process = None
            wait_for(lambda: not _listening(self.port), "the port to be free")
