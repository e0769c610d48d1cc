from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Literal, TypeAlias

from .._exceptions import UsageError
from ._exceptions import SandboxError, SandboxUnavailable, SandboxWarning
from ._execution import Execution, memory_file
from ._limits import SandboxLimits
from ._seccomp import build_filter
from ._spawner import popen
from ._types import DirectHandler, ExecResult, Handler, ProxySpec
from ._wire import recv_frame, send_frame

__all__ = ["IsolationMode", "Sandbox"]

IsolationMode: TypeAlias = Literal["auto", "required", "none"]

_HERE = Path(__file__).resolve().parent
# The server and the wire module it shares with the host, side by side.
_RUNTIME_IN_SANDBOX = "/run/tooluse"
_RUNTIME_FILES = ("_supervisor.py", "_tree.py", "_wire.py", "_worker.py")
_SCRATCH_IN_SANDBOX = "/tmp"
_START_TIMEOUT_S = 20.0
# Each script's /dev/shm (POSIX shared memory, multiprocessing's locks and queues).
_SHM_BYTES = 16 * 1024 * 1024
_CLOSE_GRACE_S = 3.0

# Each root-started Sandbox runs under its own uid so that RLIMIT_NPROC (counted per uid)
# is not shared with other sandboxes or with anything else running as "nobody". A uid is
# claimed by binding an abstract unix socket, which the kernel releases when we exit.
_UID_BASE = 1_500_000_000
_UID_SLOTS = 100_000


class Sandbox:
    """Runs model-written Python scripts in an isolated, warm sandbox.

    One Sandbox is one long-lived bubblewrap sandbox holding a fork server; every script
    runs in a fresh process forked from it, in its own pid namespace, under rlimits and a
    seccomp filter, with no network and no view of the host's files or environment. Tools
    run on the host: the script's tool functions send each call back to ``handler``.

    Use it as a context manager (``with`` or ``async with``) or call :meth:`close`. It
    starts lazily on first use if not entered. Several scripts may run at once.

    Args:
        isolation: "auto" uses bubblewrap when it works and otherwise falls back to a plain
            subprocess with rlimits, with a :class:`SandboxWarning`; "required" raises
            :class:`SandboxUnavailable` instead of falling back; "none" runs without
            isolation on purpose.
        limits: resource limits for every script.
        python_paths: extra directories made visible read-only and put on the script's
            ``sys.path`` (for example a site-packages with numpy). By default scripts see
            the standard library only.
        prefork: processes forked ahead of requests; more helps bursts of parallel scripts.
        uid: the unprivileged uid to run as when the host runs as root (default: a free
            uid claimed per Sandbox).
    """

    def __init__(
        self,
        isolation: IsolationMode = "auto",
        limits: SandboxLimits | None = None,
        *,
        python_paths: Sequence[str | os.PathLike[str]] = (),
        prefork: int = 1,
        uid: int | None = None,
    ) -> None:
        if isolation not in ("auto", "required", "none"):
            raise UsageError(f"isolation must be 'auto', 'required' or 'none', not {isolation!r}")
        if prefork < 0:
            raise UsageError("prefork must be >= 0")
        self._mode: IsolationMode = isolation
        self.limits = limits or SandboxLimits()
        self._python_paths = [os.path.realpath(p) for p in python_paths]
        self._prefork = prefork
        self._lock = threading.Lock()
        self._jobs = itertools.count(1)
        self._proc: subprocess.Popen[bytes] | None = None
        self._ctl: socket.socket | None = None
        self._isolation: str | None = None
        self._uid_claim: socket.socket | None = None
        self._uid: int | None = uid
        self._host_scratch: str | None = None
        self._broken = False
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def isolation(self) -> str | None:
        """What was achieved: "bwrap+seccomp", "bwrap" or "none"; None before the start."""
        return self._isolation

    def start(self) -> None:
        """Start the sandbox now rather than on first use."""
        with self._lock:
            if self._closed:
                raise SandboxError("this Sandbox is closed")
            if self._proc is not None and self._proc.poll() is None and not self._broken:
                return
            self._teardown()
            self._start()

    def close(self) -> None:
        """Stop the sandbox and every script still running in it."""
        with self._lock:
            self._closed = True
            self._teardown()

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Sandbox:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # Last resort for a Sandbox that was never closed: bwrap's --die-with-parent only
        # fires when this whole process exits.
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()

    # -- running scripts ---------------------------------------------------------------------

    async def execute(
        self,
        script: str,
        *,
        tools: Sequence[ProxySpec] = (),
        handler: Handler | None = None,
        direct: DirectHandler | None = None,
        timeout: float = 10.0,
        module_name: str = "tools",
        max_calls: int | Literal["default"] | None = "default",
        on_output: Callable[[str], None] | None = None,
    ) -> ExecResult:
        """Run ``script`` and return what it printed and how it ended.

        Args:
            script: Python source. It may ``import`` the tool module (``module_name``) and
                may use top-level ``await``.
            tools: the tools the module exposes; calls to any other name are refused.
            handler: runs each call on the host; required if the script calls tools. An
                ``async`` handler runs as a task per call. A plain function may return a
                ``ToolReply``, sent back at once with no task, or an awaitable of one
                when it has to wait.
            direct: optionally, a first look at each call the script waits on alone (a
                plain call, not ``parallel`` or ``.aio``), on the tool channel's own
                thread rather than the event loop: it returns a ``ToolReply``, a
                `DirectCall` to run on that thread (abandoned at its timeout, so a hung
                call costs a thread, not the script), or None to hand the call to
                ``handler``. Sequential calls then cost no turn of the event loop.
            timeout: wall-clock seconds before the script is killed.
            module_name: the name the script imports the tools under.
            max_calls: overrides ``limits.max_calls`` for this script.
            on_output: given the script's stdout as it arrives, on the event loop (all
                of it, even past the output limit; a listener that raises is dropped).
        """
        if not module_name.isidentifier():
            raise UsageError(f"module_name {module_name!r} is not an identifier")
        if timeout <= 0:
            raise UsageError("timeout must be positive")
        names = [spec.name for spec in tools]
        if len(set(names)) != len(names):
            raise UsageError(f"tool names repeat: {names}")
        self.start()
        execution = Execution(
            server=_ServerLink(self),
            job_id=str(next(self._jobs)),
            script=script,
            tools=list(tools),
            handler=handler,
            direct=direct,
            timeout=timeout,
            module_name=module_name,
            limits=self.limits,
            max_calls=self.limits.max_calls if max_calls == "default" else max_calls,
            on_output=on_output,
        )
        return await execution.run()

    def execute_sync(
        self,
        script: str,
        *,
        tools: Sequence[ProxySpec] = (),
        handler: Handler | None = None,
        direct: DirectHandler | None = None,
        timeout: float = 10.0,
        module_name: str = "tools",
        max_calls: int | Literal["default"] | None = "default",
    ) -> ExecResult:
        """:meth:`execute` for code without an event loop (not callable from inside one)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise UsageError("execute_sync() was called inside an event loop; await execute()")
        return asyncio.run(
            self.execute(
                script,
                tools=tools,
                handler=handler,
                direct=direct,
                timeout=timeout,
                module_name=module_name,
                max_calls=max_calls,
            )
        )

    # -- used by Execution, through _ServerLink ------------------------------------------------

    def _send_run(self, message: dict[str, object], fds: list[int]) -> None:
        with self._lock:
            if self._ctl is None:
                raise SandboxError("the sandbox is not running")
            try:
                send_frame(self._ctl, message, fds)
            except OSError as exc:
                self._broken = True
                raise SandboxError(f"the sandbox stopped accepting scripts: {exc}") from exc

    def _send_kill(self, job_id: str) -> None:
        with self._lock:
            if self._ctl is None:
                return
            try:
                send_frame(self._ctl, {"t": "kill", "job": job_id})
            except OSError:
                self._broken = True

    def _mark_broken(self) -> None:
        """Restart the sandbox before the next script (it lost a job or stopped answering)."""
        self._broken = True

    # -- starting and stopping ---------------------------------------------------------------

    def _start(self) -> None:
        errors: list[str] = []
        if self._mode != "none":
            try:
                self._start_bwrap()
                return
            except _StartError as exc:
                errors.append(str(exc))
                self._teardown()
            if self._mode == "required":
                raise SandboxUnavailable(
                    f"cannot start an isolated sandbox: {errors[0]}. Install bubblewrap "
                    "(Debian/Ubuntu: apt-get install bubblewrap) on a kernel that allows "
                    "user namespaces, or pass isolation='auto' to run without isolation."
                )
            warnings.warn(
                f"tooluse.sandbox: {errors[0]}; scripts will run WITHOUT isolation (a plain "
                "subprocess with rlimits and, where supported, a seccomp filter): they can "
                "read whatever host files their uid may read and see the host's processes. "
                "Install bubblewrap, or pass isolation='required' to refuse.",
                SandboxWarning,
                stacklevel=4,
            )
        try:
            self._start_process()
        except _StartError as exc:
            self._teardown()
            raise SandboxError(f"cannot start the script runner: {exc}") from None

    def _start_bwrap(self) -> None:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise _StartError("bubblewrap (bwrap) is not installed")
        seccomp = build_filter(for_scripts=False)
        python, prefixes = _python_install()
        ro_paths = _dedupe([*prefixes, *self._python_paths])
        as_root = os.geteuid() == 0
        stage_dir = tempfile.mkdtemp(prefix="tooluse-stage-") if as_root else None
        memfds: list[int] = []
        try:
            runtime = []
            for name in _RUNTIME_FILES:
                memfds.append(memory_file(f"tooluse{name[:-3]}", (_HERE / name).read_bytes()))
                runtime += ["--ro-bind-data", str(memfds[-1]), f"{_RUNTIME_IN_SANDBOX}/{name}"]
            ctl, ctl_remote = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            pass_fds = [ctl_remote.fileno(), *memfds]
            argv = [
                bwrap,
                "--unshare-all",
                "--unshare-user",
                "--disable-userns",
                "--die-with-parent",
                "--new-session",
                "--clearenv",
                "--hostname",
                "sandbox",
                # The server needs CAP_SYS_ADMIN inside the sandbox's own user namespace to
                # give each script a pid namespace; workers drop it before running scripts.
                "--cap-add",
                "CAP_SYS_ADMIN",
            ]
            seccomp_fd = None
            if seccomp is not None:
                seccomp_fd = memory_file("tooluse-seccomp", seccomp)
                memfds.append(seccomp_fd)
                pass_fds.append(seccomp_fd)
                argv += ["--seccomp", str(seccomp_fd)]
            argv += _system_binds()
            stage: list[tuple[str, str]] = []
            for index, path in enumerate(ro_paths):
                if _under(path, ("/usr",)):
                    continue
                if stage_dir is not None:
                    stage.append((path, str(index)))
                    argv += ["--ro-bind", os.path.join(stage_dir, str(index)), path]
                else:
                    argv += ["--ro-bind", path, path]
            argv += [
                # The sandbox's own /proc, which the fork server and the monitors read; each
                # script mounts a fresh one of its own pid namespace over it, and fresh
                # /tmp and /dev/shm (see _worker.private_namespaces).
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                "--dir",
                _SCRATCH_IN_SANDBOX,
                "--dir",
                "/dev/shm",
                "--dir",
                _RUNTIME_IN_SANDBOX,
                *runtime,
                # Nothing is writable but what each script mounts for itself, not even the
                # sandbox's own root and /dev (both would be unlimited tmpfs otherwise).
                "--remount-ro",
                "/dev",
                "--remount-ro",
                "/",
                "--chdir",
                _SCRATCH_IN_SANDBOX,
                "--",
                python,
                "-I",
                "-S",
                "-B",
                "-X",
                "utf8",
                f"{_RUNTIME_IN_SANDBOX}/_supervisor.py",
                # Only the control socket's number: the configuration comes through it, so
                # that no script (each a fork of the server) reads it in /proc/self/cmdline.
                str(ctl_remote.fileno()),
            ]
            config = {
                "mode": "bwrap",
                "prefork": self._prefork,
                "paths": self._python_paths,
                "scratch": _SCRATCH_IN_SANDBOX,
                "scratch_bytes": self.limits.scratch_mb * 1024 * 1024,
                "scratch_files": self.limits.scratch_files,
                "shm_bytes": _SHM_BYTES,
                "seccomp": (build_filter() or b"").hex(),
            }
            if stage_dir is not None:
                uid = self._claim_uid()
                launch = {
                    "uid": uid,
                    "gid": uid,
                    "stage_dir": stage_dir,
                    "stage": stage,
                    "argv": argv,
                }
                command = [
                    sys.executable,
                    "-I",
                    "-S",
                    str(_HERE / "_launch.py"),
                    json.dumps(launch),
                ]
            else:
                command = argv
            self._spawn(command, pass_fds, ctl, ctl_remote, config=config)
            self._isolation = "bwrap+seccomp" if seccomp is not None else "bwrap"
        finally:
            for fd in memfds:
                os.close(fd)
            if stage_dir is not None:
                # Once the server is up, bwrap has its own binds; the staging mounts live
                # only in the launcher's mount namespace, so the host directory can go.
                shutil.rmtree(stage_dir, ignore_errors=True)

    def _start_process(self) -> None:
        python, _prefixes = _python_install()
        scratch = tempfile.mkdtemp(prefix="tooluse-scratch-")
        self._host_scratch = scratch
        config: dict[str, object] = {
            "mode": "process",
            "prefork": self._prefork,
            "paths": self._python_paths,
            "scratch": scratch,
        }
        if os.geteuid() == 0:
            uid = self._claim_uid()
            os.chown(scratch, uid, uid)
            config.update(uid=uid, gid=uid)
        else:
            # RLIMIT_NPROC would count every process of this user, not only the script's.
            config["no_nproc"] = True
        seccomp = build_filter()
        if seccomp is not None:
            config["seccomp"] = seccomp.hex()
        ctl, ctl_remote = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        command = [
            python,
            "-I",
            "-S",
            "-B",
            "-X",
            "utf8",
            str(_HERE / "_supervisor.py"),
            str(ctl_remote.fileno()),
        ]
        self._spawn(command, [ctl_remote.fileno()], ctl, ctl_remote, config=config, cwd=scratch)
        self._isolation = "none"

    def _spawn(
        self,
        command: list[str],
        pass_fds: list[int],
        ctl: socket.socket,
        ctl_remote: socket.socket,
        *,
        config: dict[str, object],
        cwd: str | None = None,
    ) -> None:
        with tempfile.TemporaryFile() as errors:

            def start() -> subprocess.Popen[bytes]:
                return subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=errors,
                    pass_fds=pass_fds,
                    env={},
                    cwd=cwd,
                    start_new_session=True,
                )

            try:
                # Not from this thread, which may exit before the sandbox should.
                self._proc = popen(start)
            except OSError as exc:
                ctl.close()
                ctl_remote.close()
                raise _StartError(f"cannot run {command[0]}: {exc}") from None
            ctl_remote.close()
            self._ctl = ctl
            ctl.settimeout(_START_TIMEOUT_S)
            try:
                send_frame(ctl, config)
                frame = recv_frame(ctl)
            except (OSError, ValueError):
                frame = None
            if frame is not None and frame[0].get("t") == "failed":
                raise _StartError(
                    f"scripts cannot get namespaces of their own: {frame[0]['error']}"
                )
            if frame is None or frame[0].get("t") != "ready":
                errors.seek(0)
                detail = errors.read().decode(errors="replace").strip()
                raise _StartError(
                    detail.splitlines()[-1] if detail else "the sandbox did not start"
                )
        ctl.settimeout(None)
        self._broken = False

    def _claim_uid(self) -> int:
        if self._uid is not None:
            return self._uid
        for slot in random.sample(range(_UID_SLOTS), 64):
            claim = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            uid = _UID_BASE + slot
            try:
                claim.bind(f"\0tooluse-sandbox-uid-{uid}")
            except OSError:
                claim.close()
                continue
            self._uid_claim = claim
            self._uid = uid
            return uid
        raise _StartError("no free sandbox uid")

    def _teardown(self) -> None:
        if self._ctl is not None:
            self._ctl.close()
            self._ctl = None
        proc, self._proc = self._proc, None
        if proc is not None:
            # Closing the control socket lets the server kill its scripts and exit; killing
            # bwrap then takes down whatever is left (--die-with-parent, pid namespace).
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(_CLOSE_GRACE_S)
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    proc.kill()
            proc.wait()
        if self._host_scratch is not None:
            shutil.rmtree(self._host_scratch, ignore_errors=True)
            self._host_scratch = None
        if self._closed and self._uid_claim is not None:
            self._uid_claim.close()
            self._uid_claim = None

    @property
    def uid(self) -> int | None:
        """The host uid scripts run as (set when the host runs as root)."""
        return self._uid


class _ServerLink:
    """The sandbox as its executions see it (`ServerLink`): the control socket, nothing more."""

    __slots__ = ("_sandbox",)

    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    def send_run(self, message: dict[str, object], fds: list[int]) -> None:
        self._sandbox._send_run(message, fds)

    def send_kill(self, job_id: str) -> None:
        self._sandbox._send_kill(job_id)

    def mark_broken(self) -> None:
        self._sandbox._mark_broken()


class _StartError(Exception):
    pass


def _python_install() -> tuple[str, list[str]]:
    """The base interpreter (not a venv's) and the directories it needs."""
    executable = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    prefixes = [os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix)]
    if not any(_under(executable, (p,)) for p in prefixes):
        prefixes.append(os.path.dirname(executable))
    return executable, _dedupe(prefixes)


def _system_binds() -> list[str]:
    """Read-only system directories, mirrored as they are (merged-/usr symlinks stay links)."""
    args: list[str] = ["--ro-bind", "/usr", "/usr"]
    for path in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in ("/etc/ld.so.cache", "/etc/localtime"):
        if os.path.exists(path):
            args += ["--ro-bind", os.path.realpath(path), path]
    return args


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _dedupe(paths: Sequence[str]) -> list[str]:
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not _under(path, kept):
            kept.append(path)
    return kept
