"""The fork server that runs inside the sandbox, and the runtime a script sees.

This file runs on its own, as ``python -I -S -B -X utf8 _server.py CONTROL_FD``, inside the
sandbox. It imports nothing but the standard library: the ``tooluse`` package is not visible
in there. The host sends the configuration as the first frame on the control socket.

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

How the server talks to the host, and scripts to their tools, is in ``_wire.py``, which
the host mounts beside this file.
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import contextlib
import ctypes
import json
import linecache
import os
import random
import resource
import select
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import time
import traceback
import types
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from ._tree import supervise
    from ._wire import close_all, json_encoder, recv_frame, send_frame
else:
    # Run as a script, and -I leaves the script's own directory off sys.path.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _tree import supervise
    from _wire import close_all, json_encoder, recv_frame, send_frame

    del sys.path[0]

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_SECCOMP = 22
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_PR_SET_CHILD_SUBREAPER = 36
_SECCOMP_MODE_FILTER = 2
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWNET = 0x40000000
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

_SCRIPT_FILENAME = "script.py"
_REFILL_RETRY_S = 0.05
_CO_COROUTINE = 0x80

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

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _prctl(option: int, arg: int = 0) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl({option})")


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
            _prctl(_PR_SET_CHILD_SUBREAPER, 1)
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
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != server_pid:
        os._exit(0)
    pidns = False
    if use_pidns:
        pidns = _libc.unshare(_CLONE_NEWPID) == 0
        if not pidns:
            # A script without a namespace of its own would see the server and the
            # other scripts: no worker at all rather than that one.
            os._exit(71)
    scratch = None
    if not pidns:
        # Without a pid namespace, orphans of the script get reparented here so the sweep
        # below can find them.
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
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
            _worker_main(worker_end, held_end, config, me)
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


# -- the worker ------------------------------------------------------------------------------


def _worker_main(
    chan: socket.socket, holder: socket.socket, config: dict[str, Any], monitor_pid: int
) -> NoReturn:
    # Non-dumpable before anything else: no other process of the sandbox's uid may open
    # this process's /proc/<pid>/mem while it still holds capabilities.
    _prctl(_PR_SET_DUMPABLE, 0)
    if config["mode"] == "bwrap":
        _private_namespaces(config)
        _drop_capabilities()
        _load_seccomp(bytes.fromhex(config["seccomp"]))
        namespace = os.open("/proc/self/ns/mnt", os.O_RDONLY)
        send_frame(holder, {}, [namespace])
        os.close(namespace)
    else:
        os.setsid()
        uid = config.get("uid")
        if uid is not None and os.getuid() == 0:
            os.setgroups([])
            os.setresgid(config["gid"], config["gid"], config["gid"])
            os.setresuid(uid, uid, uid)
        seccomp = config.get("seccomp")
        if seccomp:
            _load_seccomp(bytes.fromhex(seccomp))
    # Set after the uid change, which would clear it.
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() not in (monitor_pid, 0):
        os._exit(0)
    if config["mode"] == "bwrap":
        # Nothing outside this pid namespace can name the worker now, and it holds no
        # capability: dumpable again, so that its monitor may read its memory use.
        _prctl(_PR_SET_DUMPABLE, 1)
    else:
        # Scripts share one pid namespace here; a uid change resets dumpability.
        _prctl(_PR_SET_DUMPABLE, 0)
    holder.close()
    # Everything that does not depend on the job is done before it arrives.
    random.seed()
    frame = recv_frame(chan)
    if frame is None:
        os._exit(0)
    msg, fds = frame
    chan.close()
    _run_job(msg, fds, config)


def _private_namespaces(config: dict[str, Any]) -> None:
    """Give the script a world of its own, before it exists (pid 1 of its pid namespace).

    A mount namespace with a fresh ``/proc`` that shows this pid namespace only (no other
    script, no server, no bubblewrap and its command line), and fresh ``/tmp`` and
    ``/dev/shm`` bounded in bytes and in inodes, which vanish with the namespace; an IPC
    namespace and a network namespace (abstract unix sockets live there), so scripts
    cannot meet through either. Needs CAP_SYS_ADMIN, dropped right after.
    """
    _check(_libc.unshare(_CLONE_NEWNS | _CLONE_NEWIPC | _CLONE_NEWNET), "unshare")
    _check(_libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate")
    flags = _MS_NOSUID | _MS_NODEV
    _check(_libc.mount(b"proc", b"/proc", b"proc", flags | _MS_NOEXEC, None), "mount /proc")
    for path, size, inodes in (
        (config["scratch"], config["scratch_bytes"], config["scratch_files"]),
        ("/dev/shm", config["shm_bytes"], config["scratch_files"]),
    ):
        options = f"size={size},nr_inodes={inodes},mode=1777".encode()
        _check(_libc.mount(b"tmpfs", path.encode(), b"tmpfs", flags, options), f"mount {path}")
    # The working directory was the directory now mounted over.
    os.chdir(config["scratch"])


def _drop_capabilities() -> None:
    _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.capset(header, data), "capset")


def _load_seccomp(program: bytes) -> None:
    class SockFprog(ctypes.Structure):
        _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_char_p))

    prog = SockFprog(len(program) // 8, program)
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    _check(
        _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0),
        "seccomp",
    )


def _apply_limits(limits: dict[str, Any]) -> None:
    cpu = max(1, int(-(-float(limits["cpu"]) // 1)))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["fsize"], limits["fsize"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["nofile"], limits["nofile"]))
    if limits.get("processes") is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["nproc"], limits["nproc"]))
    # The memory limit is what the script may add to the runtime it starts from.
    with open("/proc/self/statm", "rb") as f:
        current = int(f.read().split()[0]) * resource.getpagesize()
    address_space = current + int(limits["memory"])
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))


def _run_job(msg: dict[str, Any], fds: list[int], config: dict[str, Any]) -> NoReturn:
    calls_fd, replies_fd, stdout_fd, stderr_fd, job_fd = fds[:5]
    job = json.loads(_read_all(job_fd))
    os.dup2(stdout_fd, 1)
    os.dup2(stderr_fd, 2)
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    close_all([stdout_fd, stderr_fd, null, job_fd])
    sys.argv = [_SCRIPT_FILENAME]
    sys.path[:0] = list(config.get("paths", ()))
    channel = _Channel(calls_fd, replies_fd)
    specs = [(name, tuple(params), positional) for name, params, positional in job["tools"]]
    module = _build_module(job["module"], specs, channel)
    sys.modules[job["module"]] = module
    _apply_limits(msg["limits"])
    _end(channel, _run_script(job["script"], module, [spec[0] for spec in specs]))


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _end(channel: _Channel, outcome: dict[str, object]) -> NoReturn:
    """Flush what the script printed, say how it ended, and exit."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        channel.send({"t": "done", **outcome})
    os._exit(0)


def _run_script(source: str, module: types.ModuleType, tools: list[str]) -> dict[str, object]:
    tool_error: type[BaseException] = module.ToolError
    linecache.cache[_SCRIPT_FILENAME] = (
        len(source),
        None,
        source.splitlines(True),
        _SCRIPT_FILENAME,
    )
    # Models trained on other agents' prompts call tools as bare names, so each tool is
    # a global too; a builtin of the same name keeps its meaning, and a name the script
    # binds itself is the script's from then on.
    globals_ = {name: getattr(module, name) for name in tools if not hasattr(builtins, name)}
    # The prompt speaks of `tools.parallel` and `tools.ToolError`, and scripts use
    # them without importing the module: it is a global as well.
    name = module.__name__
    tool_globals = set(globals_)
    module_global = name not in globals_ and not hasattr(builtins, name)
    if module_global:
        globals_[name] = module
    try:
        code = compile(
            _awaitable_tool_calls(source, name, set(tools), tool_globals, module_global),
            _SCRIPT_FILENAME,
            "exec",
            flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
            dont_inherit=True,
        )
    except SyntaxError as exc:
        return {"ok": False, "kind": "syntax", "error": _format_syntax_error(exc)}
    except (ValueError, MemoryError, RecursionError) as exc:
        return {"ok": False, "kind": "syntax", "error": f"{type(exc).__name__}: {exc}"}
    namespace: dict[str, Any] = {
        **globals_,
        "__name__": "__main__",
        "__builtins__": builtins,
        "__file__": _SCRIPT_FILENAME,
    }
    try:
        if code.co_flags & _CO_COROUTINE:
            coroutine = eval(code, namespace)
            if coroutine is not None:
                asyncio.run(coroutine)
        else:
            exec(code, namespace)
    except SystemExit as exc:
        if exc.code is None or exc.code == 0:
            return {"ok": True}
        message = exc.code if isinstance(exc.code, str) else f"status {exc.code}"
        return {"ok": False, "kind": "exit", "error": f"the script exited with {message}"}
    except MemoryError as exc:
        namespace.clear()
        return {"ok": False, "kind": "memory", "error": _format_exception(exc)}
    except BaseException as exc:
        namespace.clear()
        kind = "tool" if isinstance(exc, tool_error) else "exception"
        return {"ok": False, "kind": kind, "error": _format_exception(exc)}
    return {"ok": True}


# Calls whose coroutine asyncio itself schedules: ``asyncio.gather(*[f(x) for x in xs])``.
_SCHEDULERS = frozenset({"gather", "create_task", "ensure_future", "wait", "as_completed"})


def _awaitable_tool_calls(
    source: str, module_name: str, names: set[str], globals_: set[str], module_global: bool
) -> str | ast.Module:
    """Let a script await its tool calls, as scripts written for async tool APIs do.

    A proxy answers synchronously, so ``await get_weather(city=c)`` would await a plain
    value. A tool call that is awaited, or handed to ``asyncio.gather`` and its kin, is
    rewritten to the proxy's ``.aio`` coroutine. Any other call is left as written, and
    so is a name the script binds to something other than a tool.
    """
    if "await" not in source and not any(name in source for name in _SCHEDULERS):
        return source
    tree = ast.parse(source, _SCRIPT_FILENAME)
    tools = set(globals_)
    modules = {module_name} if module_global else set()
    rebound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == module_name and node.level == 0:
            tools.update(a.asname or a.name for a in node.names if a.name in names)
        elif isinstance(node, ast.Import):
            modules.update(a.asname or a.name for a in node.names if a.name == module_name)
            rebound.update(a.asname or a.name for a in node.names if a.name != module_name)
        elif isinstance(node, ast.ImportFrom):
            rebound.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            rebound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            rebound.add(node.name)
        elif isinstance(node, ast.arg):
            rebound.add(node.arg)
    tools -= rebound
    modules -= rebound

    def is_tool_call(node: ast.expr) -> bool:
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        if isinstance(func, ast.Name):
            return func.id in tools
        return (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in modules
            and func.attr in names
        )

    def scheduled(node: ast.Call) -> list[ast.expr]:
        """The expressions whose values a scheduler call turns into tasks."""
        found: list[ast.expr] = []
        for arg in node.args:
            inner = arg.value if isinstance(arg, ast.Starred) else arg
            if isinstance(inner, ast.List | ast.Tuple | ast.Set):
                found.extend(inner.elts)
            elif isinstance(inner, ast.ListComp | ast.GeneratorExp | ast.SetComp):
                found.append(inner.elt)
            else:
                found.append(inner)
        return found

    targets: list[ast.Call] = []
    for node in ast.walk(tree):
        candidates: list[ast.expr] = []
        if isinstance(node, ast.Await):
            candidates.append(node.value)
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else None
            if isinstance(node.func, ast.Name):
                name = node.func.id
            if name in _SCHEDULERS:
                candidates.extend(scheduled(node))
        targets.extend(c for c in candidates if isinstance(c, ast.Call) and is_tool_call(c))
    if not targets:
        return source
    for call in targets:
        call.func = ast.copy_location(ast.Attribute(call.func, "aio", ast.Load()), call.func)
    return ast.fix_missing_locations(tree)


def _format_syntax_error(exc: SyntaxError) -> str:
    where = f"line {exc.lineno}"
    if exc.offset:
        where += f", column {exc.offset}"
    lines = traceback.format_exception_only(type(exc), exc)
    # Drop the 'File "script.py", line N' header and the final message: the summary
    # line below says both.
    body = [line for line in lines[1:-1] if line.strip()]
    return f"{type(exc).__name__}: {exc.msg} ({where})\n" + "".join(body).rstrip("\n")


def _format_exception(exc: BaseException) -> str:
    """The traceback restricted to the script's own frames, as Python would print it."""
    try:
        frames = [
            f for f in traceback.extract_tb(exc.__traceback__) if f.filename == _SCRIPT_FILENAME
        ]
        lines = []
        if frames:
            lines.append("Traceback (most recent call last):\n")
            lines.extend(traceback.format_list(frames))
        lines.extend(traceback.format_exception_only(type(exc), exc))
        return "".join(lines).rstrip("\n")
    except BaseException:
        return f"{type(exc).__name__}: {exc}"


# -- the tool channel and the module the script imports --------------------------------------


# Every tool call encodes its arguments and decodes its reply: build the codecs once.
_encode_arguments = json_encoder(allow_nan=False)
# raw_decode: the host writes one JSON object per line and nothing else, so the checks for
# surrounding whitespace that decode() makes are not needed.
_decode = json.JSONDecoder().raw_decode
# How long a plain tool call looks for its reply before it sleeps until it comes.
_SPIN_S = 200e-6


class _Unsendable(Exception):
    """Arguments that are JSON values but cannot travel (nested too deeply, an integer too
    long): the call is refused, as the host would refuse it."""


class _Channel:
    """Client end of the tool channel: requests carry ids, replies may arrive in any order."""

    def __init__(self, calls: int, replies: int) -> None:
        # Calls go up one pipe (written whole, blocking), replies come down the other
        # (read when poll() says they are there).
        self.calls = calls
        self.replies_fd = replies
        os.set_blocking(replies, False)
        self.buffer = bytearray()
        self.next_id = 0
        self.replies: dict[int, dict[str, Any]] = {}
        self.futures: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.reader_loop: asyncio.AbstractEventLoop | None = None
        self.ready = select.poll()
        self.ready.register(replies, select.POLLIN)

    def write(self, data: bytes | bytearray) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.calls, view) :]

    def send(self, obj: object) -> None:
        self.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

    def encode_call(
        self, name: str, arguments: dict[str, object], waits: str = '"w":0'
    ) -> tuple[int, bytes]:
        try:
            encoded = _encode_arguments(arguments)
        except TypeError as exc:
            raise TypeError(f"arguments to {name}() must be JSON values: {exc}") from None
        except (ValueError, RecursionError) as exc:
            raise _Unsendable(f"the arguments to {name}() cannot be sent: {exc}") from None
        self.next_id += 1
        # The envelope, then the arguments: the host can answer a call whose arguments it
        # cannot read. A tool name is an identifier: nothing in it needs escaping.
        line = f'{{"t":"call",{waits},"id":{self.next_id},"name":"{name}"}}{encoded}\n'
        return self.next_id, line.encode()

    def call(self, name: str, arguments: dict[str, object]) -> dict[str, Any]:
        # "w": the script waits on this call and has no other one open, so the host may
        # serve it without involving its event loop.
        call_id, line = self.encode_call(name, arguments, '"w":0' if self.futures else '"w":1')
        self.write(line)
        replies = self.replies
        # The reply to a quick call comes within microseconds: look for it a moment before
        # sleeping, yielding the CPU in case the host runs on this one.
        give_up = time.perf_counter() + _SPIN_S
        ready = self.ready.poll
        while call_id not in replies:
            if ready(0):
                self.pump(block=False)
            elif time.perf_counter() >= give_up:
                break
            else:
                os.sched_yield()
        while call_id not in replies:
            self.pump(block=True)
        return replies.pop(call_id)

    def wait(self, call_id: int) -> dict[str, Any]:
        replies = self.replies
        while call_id not in replies:
            self.pump(block=True)
        return replies.pop(call_id)

    def pump(self, block: bool) -> None:
        if block:
            self.ready.poll()
        try:
            data = os.read(self.replies_fd, 1 << 16)
        except BlockingIOError:
            return
        if not data:
            raise ConnectionError("the host closed the tool channel")
        lines = data.split(b"\n")
        if len(lines) == 1:
            self.buffer += data
            return
        if self.buffer:
            self.buffer += lines[0]
            lines[0] = bytes(self.buffer)
            self.buffer.clear()
        self.buffer += lines.pop()
        futures = self.futures
        for line in lines:
            reply = _decode(line.decode())[0]
            future = futures.pop(reply["id"], None) if futures else None
            if future is None:
                self.replies[reply["id"]] = reply
            elif not future.done():
                future.set_result(reply)

    async def call_async(self, name: str, arguments: dict[str, object]) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        if self.reader_loop is not loop:
            loop.add_reader(self.replies_fd, self.pump, False)
            self.reader_loop = loop
        call_id, line = self.encode_call(name, arguments)
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self.futures[call_id] = future
        self.write(line)
        return await future


# A tool as the script sees it: its name, its parameters, and how many of them, from the
# first, may be passed by position (the rest are keyword-only, as in the stub).
_Spec = tuple[str, tuple[str, ...], int]


def _build_module(module_name: str, specs: list[_Spec], channel: _Channel) -> types.ModuleType:
    module = types.ModuleType(module_name, "Tools published by the host; they run on the host.")

    class ToolError(Exception):
        """A tool call failed on the host. ``kind`` says how (for example "validation")."""

        def __init__(self, message: str, kind: str = "tool", tool: str = "") -> None:
            super().__init__(message)
            self.message = message
            self.kind = kind
            self.tool = tool

    ToolError.__module__ = module_name
    ToolError.__qualname__ = "ToolError"

    def unwrap(name: str, reply: dict[str, Any]) -> object:
        if reply.get("ok"):
            return reply.get("value")
        if reply.get("stop"):
            # The host stops the script (it reached a limit on calls): end it here, with
            # what it printed so far, rather than be killed with output still buffered.
            _end(channel, {"ok": False, "kind": "stopped", "error": str(reply.get("message"))})
        raise ToolError(str(reply.get("message", "")), str(reply.get("kind", "tool")), name)

    def refused(name: str, exc: _Unsendable) -> ToolError:
        return ToolError(str(exc), "validation", name)

    def bind(spec: _Spec, args: tuple[object, ...], kwargs: dict[str, object]) -> dict[str, object]:
        name, params, positional = spec
        if len(args) > positional:
            raise TypeError(
                f"{name}() takes {positional} positional argument"
                f"{'' if positional == 1 else 's'} but {len(args)} were given"
            )
        bound: dict[str, object] = dict(zip(params, args, strict=False))
        for key, value in kwargs.items():
            if key in bound:
                raise TypeError(f"{name}() got multiple values for argument '{key}'")
            bound[key] = value
        return bound

    def make_proxy(spec: _Spec) -> Callable[..., object]:
        name = spec[0]

        def proxy(*args: object, **kwargs: object) -> object:
            try:
                reply = channel.call(name, bind(spec, args, kwargs))
            except _Unsendable as exc:
                raise refused(name, exc) from None
            return unwrap(name, reply)

        async def proxy_async(*args: object, **kwargs: object) -> object:
            try:
                reply = await channel.call_async(name, bind(spec, args, kwargs))
            except _Unsendable as exc:
                raise refused(name, exc) from None
            return unwrap(name, reply)

        for fn in (proxy, proxy_async):
            fn.__module__ = module_name
            fn.__name__ = fn.__qualname__ = name
        proxy_async.__qualname__ = f"{name}.aio"
        proxy.aio = proxy_async  # type: ignore[attr-defined]
        proxy.__tool__ = spec  # type: ignore[attr-defined]
        return proxy

    proxies = {spec[0]: make_proxy(spec) for spec in specs}

    def parallel(
        tool: Callable[..., object] | str,
        items: Iterable[object],
        *,
        return_exceptions: bool = False,
    ) -> list[object]:
        """Call ``tool`` once per item, all at once; results come back in item order.

        An item that is a dict is passed as keyword arguments, a list or tuple as positional
        arguments, anything else as the only positional argument. Every call runs to the
        end; then, unless ``return_exceptions`` is true, the first failure (in item order)
        is raised as ToolError. With ``return_exceptions=True`` failed items hold their
        ToolError instead of a result.
        """
        spec = getattr(proxies.get(tool) if isinstance(tool, str) else tool, "__tool__", None)
        if spec is None:
            raise TypeError(f"parallel() needs one of this module's tools, not {tool!r}")
        name = spec[0]
        batch = bytearray()
        # Each item's call id, or the refusal of arguments that could not be sent.
        ids: list[int | ToolError] = []
        for item in items:
            if isinstance(item, dict):
                arguments = bind(spec, (), item)
            elif isinstance(item, (list, tuple)):
                arguments = bind(spec, tuple(item), {})
            else:
                arguments = bind(spec, (item,), {})
            try:
                call_id, line = channel.encode_call(name, arguments)
            except _Unsendable as exc:
                ids.append(refused(name, exc))
                continue
            ids.append(call_id)
            batch += line
        channel.write(batch)
        results: list[object] = []
        first_error: ToolError | None = None
        for index, entry in enumerate(ids):
            try:
                if isinstance(entry, ToolError):
                    raise entry
                results.append(unwrap(name, channel.wait(entry)))
            except ToolError as exc:
                exc.add_note(f"(item {index} of the parallel() call)")
                first_error = first_error or exc
                results.append(exc)
        if first_error is not None and not return_exceptions:
            raise first_error
        return results

    parallel.__module__ = module_name
    module.ToolError = ToolError  # type: ignore[attr-defined]
    module.parallel = parallel  # type: ignore[attr-defined]
    for name, proxy in proxies.items():
        setattr(module, name, proxy)
    module.__all__ = ["ToolError", "parallel", *proxies]  # type: ignore[attr-defined]
    return module


def main(argv: list[str]) -> int:
    # No process of the sandbox's uid (a script that found a way to name this one) may
    # open this process's memory; forks inherit it (the worker sets it again).
    _prctl(_PR_SET_DUMPABLE, 0)
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
            _check(_libc.unshare(_CLONE_NEWPID), "unshare(CLONE_NEWPID)")
            child = os.fork()
            if child == 0:
                try:
                    _private_namespaces(config)
                except BaseException as exc:
                    os.write(write, str(exc).encode()[:1000])
                    os._exit(1)
                os._exit(0)
            os.waitpid(child, 0)
        except BaseException as exc:
            os.write(write, str(exc).encode()[:1000])
        os._exit(0)
    os.close(write)
    problem = _read_all(read).decode(errors="replace")
    os.close(read)
    os.waitpid(pid, 0)
    return problem or None


if __name__ == "__main__":
    sys.exit(main(sys.argv))
