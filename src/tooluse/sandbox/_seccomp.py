"""A classic-BPF seccomp filter, assembled by hand so no libseccomp is needed.

The filter is built once per process and handed to bubblewrap (``--seccomp FD``) or loaded
with ``prctl`` by the in-sandbox server. Compiling it with libseccomp would cost a few
milliseconds per fork; a fixed byte string costs nothing.

What it does, in order:

- any syscall made through a foreign ABI (i386 ``int 0x80``, x32) kills the process, so a
  denied number cannot be reached under another numbering;
- ``socket()`` is allowed for ``AF_UNIX`` only: no IP, netlink, packet or vsock sockets;
- io_uring (which can open sockets without calling ``socket()``), ptrace and cross-process
  memory access, BPF, perf, userfaultfd, key management, mounting, module loading, kexec,
  swap, reboot and namespace joining fail with ``EPERM``;
- System V shared memory and message queues fail with ``EPERM``: their segments and
  queues hold memory that belongs to no process, so no per-script account could see it.

Two variants: the one bubblewrap loads for the whole sandbox still lets the fork server's
workers call ``mount()``, which each needs once to give its script a fresh ``/proc``,
``/tmp`` and ``/dev/shm``; every worker then loads the full filter on top (filters stack,
and the stricter answer wins) before it runs a script.
"""

from __future__ import annotations

import functools
import platform
import struct
import sys
from dataclasses import dataclass

__all__ = ["build_filter"]

# <linux/filter.h> and <linux/seccomp.h>
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000

_EPERM = 1
_AF_UNIX = 1
_X32_SYSCALL_BIT = 0x40000000

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6];
_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARG0 = 16


@dataclass(frozen=True)
class _Abi:
    audit_arch: int
    socket: int
    denied: dict[str, int]
    has_x32: bool = False


_COMMON_GENERIC = {
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
}

_ABIS = {
    "x86_64": _Abi(
        audit_arch=0xC000003E,
        socket=41,
        has_x32=True,
        denied={
            **_COMMON_GENERIC,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "kexec_load": 246,
            "kexec_file_load": 320,
            "init_module": 175,
            "finit_module": 313,
            "delete_module": 176,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "swapon": 167,
            "swapoff": 168,
            "reboot": 169,
            "setns": 308,
            "open_by_handle_at": 304,
            "acct": 163,
            "quotactl": 179,
            "syslog": 103,
            "iopl": 172,
            "ioperm": 173,
            "shmget": 29,
            "msgget": 68,
        },
    ),
    "aarch64": _Abi(
        audit_arch=0xC00000B7,
        socket=198,
        denied={
            **_COMMON_GENERIC,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "kexec_load": 104,
            "kexec_file_load": 294,
            "init_module": 105,
            "finit_module": 273,
            "delete_module": 106,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "swapon": 224,
            "swapoff": 225,
            "reboot": 142,
            "setns": 268,
            "open_by_handle_at": 265,
            "acct": 89,
            "quotactl": 60,
            "syslog": 116,
            "shmget": 194,
            "msgget": 186,
        },
    ),
}


class _Assembler:
    """Just enough of a BPF assembler: forward jumps to named labels."""

    def __init__(self) -> None:
        self._code: list[tuple[int, str | int, str | int, int]] = []
        self._labels: dict[str, int] = {}

    def load(self, offset: int) -> None:
        self._code.append((_LD_W_ABS, 0, 0, offset))

    def jump(self, op: int, k: int, if_true: str | int, if_false: str | int) -> None:
        self._code.append((op, if_true, if_false, k))

    def ret(self, value: int) -> None:
        self._code.append((_RET_K, 0, 0, value))

    def label(self, name: str) -> None:
        self._labels[name] = len(self._code)

    def assemble(self) -> bytes:
        out = bytearray()
        for index, (code, jt, jf, k) in enumerate(self._code):
            out += struct.pack("=HBBI", code, self._offset(index, jt), self._offset(index, jf), k)
        return bytes(out)

    def _offset(self, index: int, target: str | int) -> int:
        if isinstance(target, int):
            return target
        distance = self._labels[target] - index - 1
        if not 0 <= distance <= 255:
            raise ValueError(f"BPF jump to {target!r} out of range")
        return distance


# What the sandbox-wide filter leaves to the per-script one (see the module docstring).
_LEFT_TO_SCRIPTS = frozenset({"mount"})


@functools.cache
def build_filter(machine: str | None = None, *, for_scripts: bool = True) -> bytes | None:
    """The filter for this machine's architecture, or None where it is not supported.

    ``for_scripts=False`` gives the sandbox-wide variant, which still allows ``mount()``.
    """
    abi = _ABIS.get(machine or platform.machine())
    if abi is None:
        return None
    denied = {
        name: number
        for name, number in abi.denied.items()
        if for_scripts or name not in _LEFT_TO_SCRIPTS
    }
    arg0_low = _OFF_ARG0 if sys.byteorder == "little" else _OFF_ARG0 + 4
    asm = _Assembler()
    asm.load(_OFF_ARCH)
    asm.jump(_JEQ_K, abi.audit_arch, 1, 0)
    asm.ret(_RET_KILL_PROCESS)
    asm.load(_OFF_NR)
    if abi.has_x32:
        asm.jump(_JGE_K, _X32_SYSCALL_BIT, "kill", 0)
    asm.jump(_JEQ_K, abi.socket, "socket", 0)
    for number in sorted(set(denied.values())):
        asm.jump(_JEQ_K, number, "deny", 0)
    asm.ret(_RET_ALLOW)
    asm.label("socket")
    asm.load(arg0_low)
    asm.jump(_JEQ_K, _AF_UNIX, "allow", "deny")
    asm.label("allow")
    asm.ret(_RET_ALLOW)
    asm.label("deny")
    asm.ret(_RET_ERRNO | _EPERM)
    asm.label("kill")
    asm.ret(_RET_KILL_PROCESS)
    return asm.assemble()
