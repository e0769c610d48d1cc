"""What runs in the script's own process, inside the sandbox: the worker.

This file runs inside the sandbox beside ``_supervisor.py``, which imports it: it
imports nothing but the standard library and ``_wire.py``. The worker is forked by a
monitor (see ``_supervisor.py``); it takes the script's namespaces, drops every
privilege, loads the seccomp filter, waits for its job, then runs the script with a
module of tool proxies that talk to the host over the tool channel.

It also holds the few kernel calls (``prctl``, ``unshare``, ``mount``) that the
supervisor needs too, so that the supervisor imports the worker and never the reverse.
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
import signal
import socket
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from ._wire import close_all, json_encoder, recv_frame, send_frame
else:
    # Imported by _supervisor.py, run as a script, while it has this directory on sys.path.
    from _wire import close_all, json_encoder, recv_frame, send_frame

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
_PR_SET_SECCOMP = 22
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_SECCOMP_MODE_FILTER = 2
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
_CO_COROUTINE = 0x80

libc = ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def prctl(option: int, arg: int = 0) -> None:
    check(libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl({option})")


# -- the worker ------------------------------------------------------------------------------


def worker_main(
    chan: socket.socket, holder: socket.socket, config: dict[str, Any], monitor_pid: int
) -> NoReturn:
    # Non-dumpable before anything else: no other process of the sandbox's uid may open
    # this process's /proc/<pid>/mem while it still holds capabilities.
    prctl(PR_SET_DUMPABLE, 0)
    if config["mode"] == "bwrap":
        private_namespaces(config)
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
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() not in (monitor_pid, 0):
        os._exit(0)
    if config["mode"] == "bwrap":
        # Nothing outside this pid namespace can name the worker now, and it holds no
        # capability: dumpable again, so that its monitor may read its memory use.
        prctl(PR_SET_DUMPABLE, 1)
    else:
        # Scripts share one pid namespace here; a uid change resets dumpability.
        prctl(PR_SET_DUMPABLE, 0)
    holder.close()
    # Everything that does not depend on the job is done before it arrives.
    random.seed()
    frame = recv_frame(chan)
    if frame is None:
        os._exit(0)
    msg, fds = frame
    chan.close()
    _run_job(msg, fds, config)


def private_namespaces(config: dict[str, Any]) -> None:
    """Give the script a world of its own, before it exists (pid 1 of its pid namespace).

    A mount namespace with a fresh ``/proc`` that shows this pid namespace only (no other
    script, no server, no bubblewrap and its command line), and fresh ``/tmp`` and
    ``/dev/shm`` bounded in bytes and in inodes, which vanish with the namespace; an IPC
    namespace and a network namespace (abstract unix sockets live there), so scripts
    cannot meet through either. Needs CAP_SYS_ADMIN, dropped right after.
    """
    check(libc.unshare(_CLONE_NEWNS | _CLONE_NEWIPC | _CLONE_NEWNET), "unshare")
    check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate")
    flags = _MS_NOSUID | _MS_NODEV
    check(libc.mount(b"proc", b"/proc", b"proc", flags | _MS_NOEXEC, None), "mount /proc")
    for path, size, inodes in (
        (config["scratch"], config["scratch_bytes"], config["scratch_files"]),
        ("/dev/shm", config["shm_bytes"], config["scratch_files"]),
    ):
        options = f"size={size},nr_inodes={inodes},mode=1777".encode()
        check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", flags, options), f"mount {path}")
    # The working directory was the directory now mounted over.
    os.chdir(config["scratch"])


def _drop_capabilities() -> None:
    prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    check(libc.capset(header, data), "capset")


def _load_seccomp(program: bytes) -> None:
    class SockFprog(ctypes.Structure):
        _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_char_p))

    prog = SockFprog(len(program) // 8, program)
    prctl(_PR_SET_NO_NEW_PRIVS, 1)
    check(
        libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0),
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
    job = json.loads(read_all(job_fd))
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


def read_all(fd: int) -> bytes:
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
