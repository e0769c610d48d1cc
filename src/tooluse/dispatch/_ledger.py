"""The ledger: what a script did to tools with side effects, so its retry does not repeat it."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

from .._records import CallRecord, call_identity
from ..tools._tool import Effects

__all__ = ["Ledger"]


class Ledger:
    """What a script did to tools with side effects, for the retry of a script that failed.

    While a script runs, its successful calls to tools with side effects are written
    down, each marked with its tool's effects; calls to ``read`` tools are not. When
    it fails, the next script's calls to those tools are answered from that list
    (marked ``replayed``) while they match it, identical and in the same order; the
    first ``write`` call that differs ends the replay. Every other call runs.

    The order that matters is the writes': an ``idempotent`` entry is answered when
    the call at its place matches it, but one the retry skips, or an idempotent call
    the failed script did not make, does not end the replay (running an idempotent
    call again changes nothing more, so nothing is lost by either). One ledger serves
    the scripts of one run, one after the other.
    """

    __slots__ = ("_lock", "_replayable", "_written")

    def __init__(self) -> None:
        self._written: list[tuple[CallRecord, Effects | None]] = []
        self._replayable: deque[tuple[CallRecord, Effects | None]] = deque()
        # Calls arrive on the event loop and on the sandbox's channel thread.
        self._lock = threading.Lock()

    def replay(
        self, name: str, arguments: Mapping[str, Any], effects: Effects | None = "write"
    ) -> CallRecord | None:
        """The earlier record answering this call, or None: the call runs."""
        with self._lock:
            identity = call_identity(name, arguments)
            queue = self._replayable
            # The idempotent entries before the next write: any of them may answer,
            # and those before the one that does are skipped.
            for index, (earlier, kind) in enumerate(queue):
                if call_identity(earlier.name, earlier.arguments) == identity:
                    for _ in range(index):
                        queue.popleft()
                    return queue.popleft()[0]
                if kind != "idempotent":
                    break
            if effects != "idempotent":
                queue.clear()  # a write that differs: the rest may mean something else now
            return None

    def write(self, record: CallRecord, effects: Effects | None = "write") -> None:
        """Note a successful call (run or replayed) of the script running now."""
        with self._lock:
            self._written.append((record, effects))

    def script_ended(self, ok: bool) -> None:
        """The script ended: if it failed, the next one may replay what it did."""
        with self._lock:
            self._replayable = deque() if ok else deque(self._written)
            self._written = []
