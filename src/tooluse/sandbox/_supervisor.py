"""The fork server that runs inside the sandbox: the server and the monitors it forks.

This file runs on its own, as ``python -I -S -B -X utf8 _supervisor.py CONTROL_FD``, inside the
sandbox. It imports nothing but the standard library and the files mounted beside it: the
``tooluse`` package is not visible in there. The host sends the configuration as the first
frame on the control socket.

Processes, per script::

    server ──fork──▶ monitor ──unshare(CLONE_NEWPID), fork──▶ worker (pid 1 of a fresh pid
                                                              namespace; runs the script)

The server keeps a monitor+worker pair forked ahead of time; a request is handed straight
to the waiting worker (descriptors and all), and the monitor gets the tool channel's calls
pipe. The worker is pid 1 of its own pid namespace: when it exits, the kernel kills
everything the script started, and the script cannot see or signal the server or other
scripts. The monitor waits for the worker and writes its exit status to that pipe. To stop a
script the server sends the monitor SIGUSR1, and the monitor kills the worker (and, where
there is no pid namespace, sweeps up what the script left); if the monitor itself dies,
``PR_SET_PDEATHSIG`` takes the worker with it.

What the worker does, from taking its namespaces to running the script, is in
``_worker.py``; how the server talks to the host, and scripts to their tools, is in
``_wire.py``. The host mounts both beside this file.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from . import _worker
    from ._tree import supervise
    from ._wire import close_all, recv_frame, send_frame
else:
    # Run as a script, and -I leaves the script's own directory off sys.path.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _worker
    from _tree import supervise
    from _wire import close_all, recv_frame, send_frame

    del sys.path[0]

_PR_SET_CHILD_SUBREAPER = 36
_CLONE_NEWPID = 0x20000000
_REFILL_RETRY_S = 0.05

# Modules scripts commonly use, imported once in the server so every fork starts warm.
_PRELOAD = (
    "base64",
    "bisect",
    "collections",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "enum",
    "fractions",
    "functools",
    "hashlib",
    "heapq",
    "itertools",
    "math",
    "operator",
    "re",
    "statistics",
    "string",
    "textwrap",
    "typing",
    "uuid",
)


def _keep_only(keep: Iterable[int]) -> None:
    """Close every descriptor except stdio and ``keep``: a fork must not hold other jobs' pipes."""
    low = 3
    for fd in sorted(set(keep)):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 1 << 20)


# -- the server ------------------------------------------------------------------------------


class _Monitor:
    __slots__ = ("deadline", "job", "kills", "pid", "sock", "worker")

    def __init__(self, pid: int, sock: socket.socket, worker: socket.socket) -> None:
        self.pid = pid
        self.sock = sock
        self.worker = worker
        self.job: str | None = None
        self.deadline = 0.0
        self.kills = 0


class Server:
    def __init__(self, ctl: socket.socket, config: dict[str, Any]) -> None:
        self.ctl = ctl
        self.config = config
        self.pid = os.getpid()
        self.use_pidns: bool = config["mode"] == "bwrap"
        self.prefork: int = config.get("prefork", 1)
        self.idle: list[_Monitor] = []
        self.busy: dict[str, _Monitor] = {}
        self.selector = selectors.DefaultSelector()

    def serve(self) -> None:
        if not self.use_pidns:
            # Orphans of a monitor killed outright come here, for _shutdown to sweep.
            _worker.prctl(_PR_SET_CHILD_SUBREAPER, 1)
        self.selector.register(self.ctl, selectors.EVENT_READ, None)
        self._fill_pool()
        send_frame(self.ctl, {"t": "ready", "pid": self.pid, "pidns": self.use_pidns})
        while True:
            events = self.selector.select(self._next_timeout())
            for key, _ in events:
                if key.data is None:
                    if not self._handle_control():
                        self._shutdown()
                        return
                else:
                    self._on_monitor_event(key.data)
            if not events:
                # A refill that failed (say, while a fork bomb held every process slot)
                # is retried when things are quiet.
                self._fill_pool()
            self._enforce_deadlines()

    def _handle_control(self) -> bool:
        try:
            frame = recv_frame(self.ctl)
        except OSError:
            return False
        if frame is None:
            return False
        msg, fds = frame
        try:
            if msg["t"] == "run":
                self._run(msg, fds)
            elif msg["t"] == "kill":
                monitor = self.busy.get(msg["job"])
                if monitor is not None:
                    _kill(monitor.pid, signal.SIGUSR1)
        finally:
            close_all(fds)
        return True

    def _run(self, msg: dict[str, Any], fds: list[int]) -> None:
        # Every process of the sandbox counts against RLIMIT_NPROC, not only the script's:
        # leave room for the server, the forked-ahead pairs and the other running scripts.
        overhead = 4 + 2 * (self.prefork + len(self.busy) + 1)
        if msg["limits"].get("processes") is not None and not self.config.get("no_nproc"):
            msg["limits"]["nproc"] = msg["limits"]["processes"] + overhead
        for _attempt in range(2):
            monitor = self.idle.pop(0) if self.idle else self._spawn()
            if monitor is None:
                return
            try:
                # The descriptors, in the host's order: the tool channel's calls and
                # replies, stdout, stderr, the job (script, module, tools: read by the
                # worker alone, so this process never holds a script's text, and
                # neither does anything forked from it later), and the status pipe,
                # which only the monitor gets: a script cannot report its own end.
                send_frame(monitor.worker, {"limits": msg["limits"]}, fds[:5])
                send_frame(monitor.sock, {"t": "watch", "limits": msg["limits"]}, fds[5:6])
            except OSError:
                self._discard(monitor)
                continue
            monitor.job = msg["job"]
            monitor.deadline = time.monotonic() + float(msg["deadline"]) + 2.0
            self.busy[msg["job"]] = monitor
            break
        self._fill_pool()

    def _fill_pool(self) -> None:
        while len(self.idle) < self.prefork:
            monitor = self._spawn()
            if monitor is None:
                return
            self.idle.append(monitor)

    def _spawn(self) -> _Monitor | None:
        # One socket to the monitor and one straight to its worker: a job goes to the
        # worker directly, one hop fewer on the way to a running script.
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        to_worker, worker_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            pid = os.fork()
        except OSError:
            for sock in (ours, theirs, to_worker, worker_end):
                sock.close()
            return None
        if pid == 0:
            try:
                _keep_only([theirs.fileno(), worker_end.fileno()])
                _monitor_main(theirs, worker_end, self.config, self.pid, self.use_pidns)
            finally:
                os._exit(70)
        theirs.close()
        worker_end.close()
        monitor = _Monitor(pid, ours, to_worker)
        self.selector.register(ours, selectors.EVENT_READ, monitor)
        return monitor

    def _on_monitor_event(self, monitor: _Monitor) -> None:
        try:
            data = monitor.sock.recv(64)
        except OSError:
            data = b""
        if not data:
            self._discard(monitor)

    def _discard(self, monitor: _Monitor) -> None:
        # Monitors are reaped here and nowhere else, so the pid cannot have been reused.
        _kill(monitor.pid)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(monitor.pid, 0)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(monitor.sock)
        monitor.sock.close()
        monitor.worker.close()
        if monitor in self.idle:
            self.idle.remove(monitor)
        if monitor.job is not None:
            self.busy.pop(monitor.job, None)

    def _next_timeout(self) -> float | None:
        timeouts = [max(0.0, m.deadline - time.monotonic()) for m in self.busy.values()]
        if len(self.idle) < self.prefork:
            timeouts.append(_REFILL_RETRY_S)
        return min(timeouts, default=None)

    def _enforce_deadlines(self) -> None:
        # The host enforces the wall clock; this is the backstop if the host stops asking:
        # first a clean kill through the monitor, then the monitor itself.
        now = time.monotonic()
        for monitor in list(self.busy.values()):
            if monitor.deadline <= now:
                monitor.kills += 1
                _kill(monitor.pid, signal.SIGUSR1 if monitor.kills == 1 else signal.SIGKILL)
                monitor.deadline = now + 2.0

    def _shutdown(self) -> None:
        for monitor in self.idle:
            _kill(monitor.pid)
        # Running scripts are killed through their monitors, which then sweep up after them.
        for monitor in self.busy.values():
            _kill(monitor.pid, signal.SIGUSR1)
        give_up = time.monotonic() + 2.0
        pending = {m.pid for m in self.busy.values()}
        while pending and time.monotonic() < give_up:
            for pid in list(pending):
                with contextlib.suppress(ChildProcessError):
                    if os.waitpid(pid, os.WNOHANG)[0] == 0:
                        continue
                pending.discard(pid)
            time.sleep(0.005)
        for pid in pending:
            _kill(pid)
        if not self.use_pidns:
            _kill_children()


def _kill(pid: int, signum: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


# -- the monitor -----------------------------------------------------------------------------


def _monitor_main(
    sock: socket.socket,
    worker_end: socket.socket,
    config: dict[str, Any],
    server_pid: int,
    use_pidns: bool,
) -> NoReturn:
    _worker.prctl(_worker.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != server_pid:
        os._exit(0)
    pidns = False
    if use_pidns:
        pidns = _worker.libc.unshare(_CLONE_NEWPID) == 0
        if not pidns:
            # A script without a namespace of its own would see the server and the
            # other scripts: no worker at all rather than that one.
            os._exit(71)
    scratch = None
    if not pidns:
        # Without a pid namespace, orphans of the script get reparented here so the sweep
        # below can find them.
        _worker.prctl(_PR_SET_CHILD_SUBREAPER, 1)
        # Nor mounts of its own: the script works in a fresh directory of the host's
        # scratch, removed when it ends (isolation="none" keeps nothing private).
        scratch = tempfile.mkdtemp(prefix="script-", dir=config["scratch"])
        if config.get("uid") is not None and os.getuid() == 0:
            os.chown(scratch, config["uid"], config["gid"])
        os.chdir(scratch)
    # The server asks for a kill with SIGUSR1 rather than killing this process, so that
    # the sweep below still runs. Installed before the fork: a request may come at once.
    worker = 0

    def kill_worker(signum: int, frame: object) -> None:
        if worker:
            _kill(worker)
        else:
            os._exit(0)

    signal.signal(signal.SIGUSR1, kill_worker)
    me = os.getpid()
    # The worker hands back its mount namespace, which this process holds until the end
    # has been reported: unmounting the script's /proc and tmpfs mounts waits for the
    # kernel (an RCU grace period), and that wait belongs after the report, not before.
    holder, held_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    worker = os.fork()
    if worker == 0:
        try:
            signal.signal(signal.SIGUSR1, signal.SIG_DFL)
            _keep_only([worker_end.fileno(), held_end.fileno()])
            _worker.worker_main(worker_end, held_end, config, me)
        finally:
            os._exit(70)
    worker_end.close()
    held_end.close()
    handed = recv_frame(holder) if pidns else None
    held = handed[1] if handed is not None else []
    holder.close()
    # The job itself goes to the worker; this side only gets the status pipe, to report
    # how the worker ended, and the limits it watches the script's whole tree for.
    frame = recv_frame(sock)
    if frame is None or not frame[1]:
        _kill(worker)
        os._exit(0)
    status_fd = frame[1][0]
    close_all(frame[1][1:])
    limits = frame[0].get("limits", {})
    started = time.monotonic()
    status, usage, passed, tree = supervise(
        worker,
        worker if pidns else me,
        float(limits["cpu"]) if "cpu" in limits else None,
        int(limits["memory"]) if "memory" in limits else None,
    )
    if not pidns:
        _sweep_descendants(worker)
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)
    # Only now, with every process of the script gone, is its end reported.
    record: dict[str, object] = {
        "t": "exit",
        "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "cpu": max(usage.ru_utime + usage.ru_stime, tree.cpu_s),
        "maxrss_kb": usage.ru_maxrss,
        "wall": time.monotonic() - started,
        "limit": passed,
    }
    with contextlib.suppress(OSError):
        os.write(status_fd, json.dumps(record).encode() + b"\n")
    os.close(status_fd)
    close_all(held)
    os._exit(0)


def _sweep_descendants(worker: int) -> None:
    """Kill whatever the script left running (only needed without a pid namespace).

    This process is a child subreaper, so every orphan of the script ends up as its child:
    kill the children, reap them, repeat until none are left.
    """
    with contextlib.suppress(OSError):
        os.killpg(worker, signal.SIGKILL)
    _kill_children()


def _kill_children() -> None:
    for _round in range(1000):
        # Cheap check first: scanning /proc costs milliseconds on a busy host.
        try:
            if os.waitpid(-1, os.WNOHANG)[0] != 0:
                continue
        except ChildProcessError:
            return
        children = _children_of(os.getpid())
        if not children:
            return
        for pid in children:
            _kill(pid)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _children_of(parent: int) -> list[int]:
    wanted = str(parent)
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        # The command name may hold spaces or parentheses; the fields after it do not.
        if stat.rsplit(")", 1)[-1].split()[1] == wanted:
            children.append(int(entry))
    return children


def main(argv: list[str]) -> int:
    # No process of the sandbox's uid (a script that found a way to name this one) may
    # open this process's memory; forks inherit it (the worker sets it again).
    _worker.prctl(_worker.PR_SET_DUMPABLE, 0)
    ctl = socket.socket(fileno=int(argv[1]))
    ctl.setblocking(True)
    frame = recv_frame(ctl)
    if frame is None:
        return 1
    config: dict[str, Any] = frame[0]
    for name in _PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    if config["mode"] == "bwrap":
        problem = _check_namespaces(config)
        if problem:
            send_frame(ctl, {"t": "failed", "error": problem})
            return 1
    Server(ctl, config).serve()
    return 0


def _check_namespaces(config: dict[str, Any]) -> str | None:
    """Why a script could not get namespaces of its own here, or None if it can."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            _worker.check(_worker.libc.unshare(_CLONE_NEWPID), "unshare(CLONE_NEWPID)")
            child = os.fork()
            if child == 0:
                try:
                    _worker.private_namespaces(config)
                except BaseException as exc:
                    os.write(write, str(exc).encode()[:1000])
                    os._exit(1)
                os._exit(0)
            os.waitpid(child, 0)
        except BaseException as exc:
            os.write(write, str(exc).encode()[:1000])
        os._exit(0)
    os.close(write)
    problem = _worker.read_all(read).decode(errors="replace")
    os.close(read)
    os.waitpid(pid, 0)
    return problem or None


if __name__ == "__main__":
    sys.exit(main(sys.argv))
