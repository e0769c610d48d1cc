"""What a script's whole process tree uses, read from ``/proc``, and the limits on it.

rlimits bind one process at a time: six forked children could each use a whole memory
limit. The monitor of a script therefore also watches the tree rooted at the worker (in
a pid namespace every process of the script is in that tree: orphans are reparented to
the worker, which is its namespace's pid 1) and kills the worker, and with it the whole
namespace, once the tree as a whole passes the script's CPU or memory limit.

- CPU is user + system time of every live or zombie process in the tree, plus the
  ``cutime``/``cstime`` the kernel moves into a parent when it reaps a child: time of a
  process that has been reaped is counted once, in its reaper.
- Memory is each process's proportional share of its anonymous pages (``Pss_Anon``):
  what the script allocated, not the libraries it mapped, and a page that forks share
  counted once across them. A process that makes itself non-dumpable hides that figure
  and is charged its resident anonymous pages in full. Files in the script's ``/tmp`` and
  ``/dev/shm`` are bounded by the size of those mounts instead.

The tree is sampled every few milliseconds, so a limit is enforced within one interval:
a script can briefly go past it by what it allocates or spends in that time, which each
process's own rlimit still bounds. This file runs inside the sandbox beside ``_supervisor.py``
and uses the standard library only.
"""

from __future__ import annotations

import os
import resource
import select
import signal
from dataclasses import dataclass

__all__ = ["TreeUsage", "supervise", "tree_usage"]

_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
# How often the tree is sampled while the script runs.
_INTERVAL_MS = 20


@dataclass
class TreeUsage:
    cpu_s: float = 0.0
    anon_bytes: int = 0
    processes: int = 0


def _stat(pid: str) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and of its reaped children)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name may hold spaces or parentheses; the fields after it do not.
    fields = data.rsplit(b")", 1)[-1].split()
    # fields[0] is field 3 of proc(5): state; ppid is field 4; utime..cstime are 14..17.
    ticks = sum(int(value) for value in fields[11:15])
    return int(fields[1]), ticks / _TICKS


def _anon_bytes(pid: int) -> int:
    # The proportional share of anonymous pages: a page a fork still shares with its
    # parent counts half in each, so a tree of forks is charged what it holds.
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss_Anon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    # A process that made itself non-dumpable hides that: its resident anonymous pages,
    # shared or not, are charged in full.
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            fields = f.read().split()
    except OSError:
        return 0
    return max(0, int(fields[1]) - int(fields[2])) * _PAGE


def tree_usage(root: int) -> TreeUsage:
    """The CPU time and anonymous memory of ``root`` and every process below it."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _stat(entry)
        if stat is not None:
            pid = int(entry)
            parents[pid], cpu[pid] = stat
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    usage = TreeUsage()
    if root not in parents:
        return usage
    todo = [root]
    while todo:
        pid = todo.pop()
        usage.processes += 1
        usage.cpu_s += cpu[pid]
        usage.anon_bytes += _anon_bytes(pid)
        todo.extend(children.get(pid, ()))
    return usage


def supervise(
    worker: int, root: int, cpu_s: float | None, memory_bytes: int | None
) -> tuple[int, resource.struct_rusage, str | None, TreeUsage]:
    """Wait for ``worker`` to end, killing it if the tree under ``root`` passes a limit.

    ``root`` is the worker itself in a pid namespace, and otherwise the monitor, to which
    the script's orphans are reparented. ``memory_bytes`` is what the tree may hold on
    top of what it held when the watch began. Returns the wait status, the worker's
    rusage, the limit that was passed (or None) and the last sample of the tree.
    """
    # When the watch begins the script is one process: no scan of /proc on the way of a
    # script that ends within the first interval.
    baseline = _anon_bytes(worker)
    last = TreeUsage(anon_bytes=baseline, processes=1)
    passed: str | None = None
    pidfd = os.pidfd_open(worker)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        while not poller.poll(_INTERVAL_MS):
            sample = tree_usage(root)
            if sample.processes:
                last = sample
            if passed is not None:
                continue
            if cpu_s is not None and sample.cpu_s > cpu_s:
                passed = "cpu"
            elif memory_bytes is not None and sample.anon_bytes - baseline > memory_bytes:
                passed = "memory"
            if passed is not None:
                # The worker is pid 1 of the script's namespace: the kernel kills the rest.
                os.kill(worker, signal.SIGKILL)
    finally:
        os.close(pidfd)
    _pid, status, rusage = os.wait4(worker, 0)
    return status, rusage, passed, last
