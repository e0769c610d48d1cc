"""The ledger: what a script did to tools with side effects, so its retry does not repeat it."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

from .._records import CallRecord, call_identity

__all__ = ["Ledger"]


class Ledger:
    """What a script did to tools with side effects, for the retry of a script that failed.

    While a script runs, its successful calls to tools marked ``side_effects`` are
    written down. When it fails, the next script's calls to those tools are answered
    from that list (marked ``replayed``) while they match it, identical and in the
    same order; the first call that differs ends the replay. Every other call runs.
    One ledger serves the scripts of one run, one after the other.
    """

    __slots__ = ("_lock", "_replayable", "_written")

    def __init__(self) -> None:
        self._written: list[CallRecord] = []
        self._replayable: deque[CallRecord] = deque()
        # Calls arrive on the event loop and on the sandbox's channel thread.
        self._lock = threading.Lock()

    def replay(self, name: str, arguments: Mapping[str, Any]) -> CallRecord | None:
        """The earlier record answering this call, or None: the call runs."""
        with self._lock:
            if not self._replayable:
                return None
            earlier = self._replayable[0]
            if call_identity(earlier.name, earlier.arguments) == call_identity(name, arguments):
                return self._replayable.popleft()
            self._replayable.clear()
            return None

    def write(self, record: CallRecord) -> None:
        """Note a successful call (run or replayed) of the script running now."""
        with self._lock:
            self._written.append(record)

    def script_ended(self, ok: bool) -> None:
        """The script ended: if it failed, the next one may replay what it did."""
        with self._lock:
            self._replayable = deque() if ok else deque(self._written)
            self._written = []
