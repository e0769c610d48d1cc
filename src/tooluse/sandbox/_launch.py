"""Root-only launcher: stage read-only paths, drop to the sandbox uid, exec bubblewrap.

Run as ``python -I -S _launch.py CONFIG_JSON`` by a host process running as root. bwrap must
not run as root (it would keep every capability inside the sandbox, and RLIMIT_NPROC does
not apply to root), but once it runs as an unprivileged uid it cannot reach paths under
directories that uid may not enter, such as a Python installed under ``/root``. So, in a
private mount namespace, each such path is bind-mounted under a world-readable staging
directory first; bwrap then binds the staged copies to their original places. The staging
mounts exist only in this process's mount namespace and vanish with it.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

_CLONE_NEWNS = 0x00020000
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    libc = ctypes.CDLL(None, use_errno=True)
    stage_dir: str = config["stage_dir"]
    _check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate /")
    _check(
        libc.mount(b"tmpfs", stage_dir.encode(), b"tmpfs", 0, b"mode=0755,size=64k"),
        "mount staging tmpfs",
    )
    for source, name in config["stage"]:
        target = os.path.join(stage_dir, name)
        if os.path.isdir(source):
            os.mkdir(target)
        else:
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
        _check(
            libc.mount(source.encode(), target.encode(), None, _MS_BIND | _MS_REC, None),
            f"bind {source}",
        )
    gid: int = config["gid"]
    uid: int = config["uid"]
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    argv_out: list[str] = config["argv"]
    os.execv(argv_out[0], argv_out)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
