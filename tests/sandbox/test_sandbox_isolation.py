"""Scripts are isolated from each other and from the sandbox's own processes, and every
limit holds for a script as a whole: attacks made from inside a script, as an attacker
would make them."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from typing import ClassVar

import pytest

from tooluse.sandbox import ProxySpec, Sandbox, SandboxLimits, ToolReply

pytestmark = pytest.mark.usefixtures("no_leftovers")

# Every process the script can name, with its parent, from the script's own /proc.
LIST_PROCESSES = """
import os
def processes():
    found = {}
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                stat = open(f'/proc/{entry}/stat').read()
            except OSError:
                continue
            found[int(entry)] = int(stat.rsplit(')', 1)[1].split()[1])
    return found
"""


class Rendezvous:
    """Tools that let two scripts running at once wait for each other, on the host."""

    def __init__(self) -> None:
        self.events: dict[str, asyncio.Event] = {}

    def event(self, name: str) -> asyncio.Event:
        return self.events.setdefault(name, asyncio.Event())

    async def handler(self, name: str, arguments: dict[str, object]) -> ToolReply:
        key = str(arguments["name"])
        if name == "signal":
            self.event(key).set()
        else:
            await self.event(key).wait()
        return ToolReply.ok(True)

    tools: ClassVar[list[ProxySpec]] = [ProxySpec("signal", ["name"]), ProxySpec("wait", ["name"])]


async def test_a_script_sees_and_opens_no_process_but_its_own(sandbox: Sandbox) -> None:
    script = LIST_PROCESSES + (
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "seen = processes()\n"
        "mine = {os.getpid()}\n"
        "for pid in sorted(seen):\n"
        "    if seen[pid] in mine:\n"
        "        mine.add(pid)\n"
        "print('pid', os.getpid(), 'child', child.pid)\n"
        "print('foreign', sorted(set(seen) - mine))\n"
        "opened = []\n"
        "for pid in sorted(set(seen) - mine):\n"
        "    for name in ('mem', 'environ', 'cmdline'):\n"
        "        try:\n"
        "            flags = os.O_RDWR if name == 'mem' else os.O_RDONLY\n"
        "            os.close(os.open(f'/proc/{pid}/{name}', flags))\n"
        "            opened.append((pid, name))\n"
        "        except OSError:\n"
        "            pass\n"
        "print('opened', opened)\n"
        # Popen returns once the exec began; its arguments appear a moment later.
        "cmdline = ''\n"
        "while not cmdline:\n"
        "    cmdline = open(f'/proc/{child.pid}/cmdline').read()\n"
        "print('child cmdline', cmdline.split(chr(0))[-2])\n"
        "child.kill()\n"
    )
    result = await sandbox.execute(script)
    assert result.status == "ok", result.error
    lines = result.stdout.splitlines()
    assert lines[0].startswith("pid 1 child ")
    # No bubblewrap, no fork server, no monitor: nothing outside the script's own tree.
    assert lines[1] == "foreign []"
    assert lines[2] == "opened []"
    # /proc/<pid> of the script's own child is that child.
    assert lines[3] == "child cmdline import time; time.sleep(60)"


async def test_a_script_cannot_reach_a_script_running_beside_it(sandbox: Sandbox) -> None:
    """Script A starts a child holding a secret; script B, running at the same time, looks
    for it through /proc and an abstract unix socket A listens on."""
    secret = secrets.token_hex(16)
    meet = Rendezvous()
    first = (
        "import os, socket, subprocess, sys\n"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        f" env={{'SECRET': {secret!r}}})\n"
        "listener = socket.socket(socket.AF_UNIX)\n"
        "listener.bind('\\0tooluse-test-meeting')\n"
        "listener.listen()\n"
        "signal('a-ready')\n"
        "wait('b-done')\n"
        "child.kill()\n"
    )
    second = LIST_PROCESSES + (
        "import socket\n"
        "wait('a-ready')\n"
        "found = []\n"
        "for pid in processes():\n"
        "    for name in ('environ', 'cmdline', 'mem'):\n"
        "        try:\n"
        "            with open(f'/proc/{pid}/{name}', 'rb') as f:\n"
        "                data = f.read(1 << 16)\n"
        "        except OSError:\n"
        "            continue\n"
        "        found.append(data)\n"
        "client = socket.socket(socket.AF_UNIX)\n"
        "try:\n"
        "    client.connect('\\0tooluse-test-meeting')\n"
        "    print('CONNECTED')\n"
        "except OSError as exc:\n"
        "    print('refused', type(exc).__name__)\n"
        "print('SECRET' if any(b'SECRET' in data for data in found) else 'nothing')\n"
        "signal('b-done')\n"
    )
    a, b = await asyncio.gather(
        sandbox.execute(first, tools=meet.tools, handler=meet.handler, timeout=20),
        sandbox.execute(second, tools=meet.tools, handler=meet.handler, timeout=20),
    )
    assert a.status == "ok", a.error
    assert b.status == "ok", b.error
    assert b.stdout.splitlines() == ["refused ConnectionRefusedError", "nothing"]


async def test_proc_shows_nothing_of_the_sandbox_machinery(sandbox: Sandbox) -> None:
    script = (
        "import os\n"
        "text = []\n"
        "for entry in os.listdir('/proc'):\n"
        "    if entry.isdigit():\n"
        "        for name in ('cmdline', 'environ'):\n"
        "            try:\n"
        "                text.append(open(f'/proc/{entry}/{name}', 'rb').read())\n"
        "            except OSError:\n"
        "                pass\n"
        "print(b' '.join(text).decode(errors='replace'))\n"
    )
    result = await sandbox.execute(script)
    assert result.status == "ok", result.error
    for leak in ("bwrap", "tooluse-stage", "seccomp", "--ro-bind", "prefork", "scratch"):
        assert leak not in result.stdout


async def test_a_script_finds_no_text_of_an_earlier_script_in_its_memory(
    sandbox: Sandbox,
) -> None:
    secret = secrets.token_hex(16)
    padding = "".join(f"# filler line {n} of a long script\n" for n in range(900))
    first = f"password = 'MARKER-{secret}'\n{padding}print(len(password))\n"
    assert len(first) > 30_000
    await sandbox.execute(first)
    await sandbox.execute("print('a script in between')\n")
    # Every read-write mapping of the script's own process, searched for the marker: the
    # pattern is in this script, the earlier script's value is not.
    scan = (
        "import ctypes, re\n"
        "found = set()\n"
        "pattern = re.compile(rb'MARKER-[0-9a-f]{32}')\n"
        "for line in open('/proc/self/maps'):\n"
        "    span, perms = line.split()[:2]\n"
        "    start, end = (int(x, 16) for x in span.split('-'))\n"
        "    if perms.startswith('rw') and end - start <= 64 << 20:\n"
        "        data = ctypes.string_at(start, end - start)\n"
        "        found.update(m.group().decode() for m in pattern.finditer(data))\n"
        "print(sorted(found))\n"
    )
    result = await sandbox.execute(scan)
    assert result.status == "ok", result.error
    assert secret not in result.stdout
    assert result.stdout.startswith("[")


async def test_files_and_shared_memory_do_not_outlive_a_script(sandbox: Sandbox) -> None:
    first = (
        "import os\n"
        "open('/tmp/card.txt', 'w').write('4111 1111 1111 1111')\n"
        "open('/dev/shm/card', 'w').write('4111 1111 1111 1111')\n"
        "open('card-in-cwd.txt', 'w').write('4111 1111 1111 1111')\n"
        "print(sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')))\n"
    )
    result = await sandbox.execute(first)
    assert result.status == "ok", result.error
    assert "card.txt" in result.stdout
    second = (
        "import os\n"
        "print(sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')), os.getcwd())\n"
    )
    result = await sandbox.execute(second)
    assert result.status == "ok", result.error
    assert result.stdout == "[] [] /tmp\n"


async def test_system_v_shared_memory_and_queues_are_refused(sandbox: Sandbox) -> None:
    script = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print(libc.shmget(0, 192 << 20, 0o1600), os.strerror(ctypes.get_errno()))\n"
        "print(libc.msgget(0, 0o1600), os.strerror(ctypes.get_errno()))\n"
    )
    result = await sandbox.execute(script)
    assert result.status == "ok", result.error
    assert result.stdout.splitlines() == [
        "-1 Operation not permitted",
        "-1 Operation not permitted",
    ]


TIGHT = SandboxLimits(
    cpu_seconds=1, memory_mb=64, max_processes=32, scratch_mb=8, scratch_files=500
)


@pytest.fixture(params=["required", "none"])
def tight(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """CPU and memory hold without isolation too ("none": no namespaces, the same
    supervisor of the script's processes). The default mode is "required"'s sandbox here
    (see the `sandbox` fixture)."""
    with Sandbox(isolation=request.param, limits=TIGHT) as sb:
        yield sb


@pytest.fixture
def tight_isolated() -> Iterator[Sandbox]:
    """The script's own mounts exist only with isolation."""
    with Sandbox(isolation="required", limits=TIGHT) as sb:
        yield sb


async def test_memory_is_limited_for_the_script_as_a_whole(tight: Sandbox) -> None:
    """Six children hold 48 MiB each: each is under the limit, together far over it."""
    script = (
        "import os, signal\n"
        "ready_r, ready_w = os.pipe()\n"
        "for _ in range(6):\n"
        "    if os.fork() == 0:\n"
        "        hold = bytearray(48 << 20)\n"
        "        for i in range(0, len(hold), 4096):\n"
        "            hold[i] = 1\n"
        "        os.write(ready_w, b'.')\n"
        "        while True:\n"
        "            signal.pause()\n"
        "got = b''\n"
        "while len(got) < 6:\n"
        "    got += os.read(ready_r, 6)\n"
        "print('all six hold their memory', flush=True)\n"
        "while True:\n"
        "    signal.pause()\n"
    )
    result = await tight.execute(script, timeout=60)
    assert (result.status, result.limit) == ("killed", "memory"), result
    assert "all of the script's processes together" in (result.error or "")


async def test_cpu_time_is_limited_for_the_script_as_a_whole(tight: Sandbox) -> None:
    """Four children spin: each would stop at its own second; together they are stopped at
    the script's."""
    script = (
        "import os\n"
        "for _ in range(4):\n"
        "    if os.fork() == 0:\n"
        "        while True:\n"
        "            pass\n"
        "for _ in range(4):\n"
        "    os.wait()\n"
        "print('the children died one by one')\n"
    )
    result = await tight.execute(script, timeout=60)
    assert (result.status, result.limit) == ("killed", "cpu"), result
    assert result.stdout == ""


async def test_the_scratch_directory_holds_a_bounded_number_of_files(
    tight_isolated: Sandbox,
) -> None:
    tight = tight_isolated
    script = (
        "import os\n"
        "for where in ('/tmp', '/dev/shm'):\n"
        "    made = 0\n"
        "    try:\n"
        "        for n in range(100_000):\n"
        "            os.mknod(f'{where}/f{n}')\n"
        "            made += 1\n"
        "    except OSError as exc:\n"
        "        print(where, made, exc.strerror)\n"
    )
    result = await tight.execute(script, timeout=60)
    assert result.status == "ok", result.error
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["/tmp", "/dev/shm"]
    for line in lines:
        assert int(line.split()[1]) < tight.limits.scratch_files
        assert line.endswith("No space left on device")


# Writes "finished, ok" and the monitor's exit record to every pipe the script can write to.
FORGE_FINISHED = (
    "import os, stat, fcntl, time\n"
    "for fd in range(3, 64):\n"
    "    try:\n"
    "        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:\n"
    '            os.write(fd, b\'{"t":"done","ok":true}\\n\')\n'
    '            os.write(fd, b\'{"t":"exit","code":0,"signal":null}\\n\')\n'
    "    except OSError:\n"
    "        pass\n"
)


async def test_a_script_cannot_declare_itself_finished(sandbox: Sandbox) -> None:
    script = FORGE_FINISHED + "while True:\n    time.sleep(1)\n"
    result = await sandbox.execute(script, timeout=1)
    # The run ends when the script does: here, at the wall clock, and nothing is left.
    assert (result.status, result.limit) == ("timeout", "wall_clock")


async def test_a_forged_finish_does_not_hide_the_cpu_limit(tight: Sandbox) -> None:
    script = FORGE_FINISHED + "while True:\n    pass\n"
    result = await tight.execute(script, timeout=60)
    assert (result.status, result.limit) == ("killed", "cpu"), result.error


async def test_a_forged_finish_does_not_hide_the_exit_status(sandbox: Sandbox) -> None:
    script = FORGE_FINISHED + "os._exit(3)\n"
    result = await sandbox.execute(script, timeout=30)
    assert result.status == "error"
    assert result.error == "the script exited with status 3"


# The script's end of the tool channel: the pipe it writes calls to and the one it reads
# replies from, found by their access modes.
CHANNEL = """
import os, fcntl, stat
def channel_fds():
    calls = replies = None
    for fd in range(3, 64):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if stat.S_ISFIFO(mode):
            access = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
            if access == os.O_WRONLY:
                calls = fd
            elif access == os.O_RDONLY:
                replies = fd
    return calls, replies
def read_line(fd):
    os.set_blocking(fd, True)
    line = b''
    while not line.endswith(b'\\n'):
        line += os.read(fd, 1)
    return line
"""


async def test_replies_never_copy_what_a_forged_call_sent(sandbox: Sandbox) -> None:
    async def handler(name: str, arguments: dict[str, object]) -> ToolReply:
        return ToolReply.ok("fine")

    script = CHANNEL + (
        "calls, replies = channel_fds()\n"
        "big = b'x' * 1_000_000\n"
        'os.write(calls, b\'{"t":"call","id":"\' + big + b\'","name":"echo"}{}\\n\')\n'
        'os.write(calls, b\'{"t":"call","id":7,"name":"\' + big + b\'"}{}\\n\')\n'
        'os.write(calls, b\'{"t":"call","id":8,"name":{"n":"\' + big + b\'"}}{}\\n\')\n'
        "for _ in range(2):\n"
        "    line = read_line(replies)\n"
        "    print(len(line), line[:8].decode())\n"
    )
    result = await sandbox.execute(
        script, tools=[ProxySpec("echo", ["text"])], handler=handler, timeout=20
    )
    assert result.status == "ok", result.error
    # The call with a forged id gets no reply at all; the others' replies stay short.
    lines = result.stdout.splitlines()
    assert [line.split()[1] for line in lines] == ['{"id":7,', '{"id":8,']
    assert all(int(line.split()[0]) < 200 for line in lines)


async def test_replies_a_script_leaves_unread_are_bounded(sandbox: Sandbox) -> None:
    async def handler(name: str, arguments: dict[str, object]) -> ToolReply:
        return ToolReply.ok("y" * (1 << 20))

    script = CHANNEL + (
        "import signal\n"
        "calls, replies = channel_fds()\n"
        "for n in range(1, 200):\n"
        '    os.write(calls, b\'{"t":"call","id":%d,"name":"big"}{}\\n\' % n)\n'
        "while True:\n"
        "    signal.pause()\n"
    )
    result = await sandbox.execute(
        script, tools=[ProxySpec("big", [])], handler=handler, timeout=30
    )
    assert (result.status, result.limit) == ("killed", "output"), result
    assert "unread" in (result.error or "")


@pytest.mark.parametrize(
    "ending",
    [
        "raise ValueError('x' * 3_000_000)",
        "import sys\nsys.exit('x' * 3_000_000)",
        "e = ValueError('short')\ne.add_note('x' * 3_000_000)\nraise e",
    ],
)
async def test_error_text_counts_against_the_output_limit(sandbox: Sandbox, ending: str) -> None:
    script = "print('o' * 5_000)\nimport sys\nprint('e' * 5_000, file=sys.stderr)\n" + ending
    result = await sandbox.execute(script)
    assert result.status == "error"
    assert result.error is not None and "characters cut" in result.error
    returned = len(result.stdout) + len(result.stderr) + len(result.error)
    # The budget, plus the notes that say what was cut.
    assert returned <= sandbox.limits.max_output_bytes + 200
    assert result.truncated


async def test_a_script_stopped_at_its_call_limit_keeps_what_it_printed(
    sandbox: Sandbox,
) -> None:
    async def handler(name: str, arguments: dict[str, object]) -> ToolReply:
        return ToolReply.ok(1)

    script = "print('started the loop')\nwhile True:\n    tick()\n"
    result = await sandbox.execute(
        script, tools=[ProxySpec("tick", [])], handler=handler, max_calls=5
    )
    assert (result.status, result.limit) == ("killed", "calls")
    assert result.stdout == "started the loop\n"
    assert result.calls_made == 5
