"""The approval store: which paused states were resumed, so each is resumed once.

A run that stops for approval gets a pause id (`Paused.id`), and the id travels
with every copy of the paused state: the `RunResult` itself, a `copy.deepcopy`
of it, its `to_dict` read back by `RunResult.from_dict` in this process or
another. `Agent.resume` writes the id down here before anything runs, and
refuses an id written down already with `AlreadyResumedError`. The decisions
given at that resume are therefore used once, whichever copy carries them in.

``ApprovalStore()`` keeps the ids in this process's memory; every agent of the
process shares one such store unless given another. ``ApprovalStore(path)``
keeps them in a SQLite file: processes that open the same file resume each
paused state once between them. Writing an id down is one ``INSERT`` that
SQLite serialises across processes, so of two resumes of the same state racing
each other exactly one goes on. The file carries its version (SQLite's
``user_version``); a file of earlier releases is opened as it is, and one of a
version this release does not know is refused, by name, and left untouched.

The rule is "at most once": a resume that is refused because its decisions do not
fit writes nothing, but one that began and then died (the process killed after the
approved call, or before it) has used its pause. `ApprovalStore.release` is for a
person who knows that the call did not run.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .._closing import Closing
from .._exceptions import AlreadyResumedError, ResumeError, UsageError
from .._written import VERSION, version_of

__all__ = ["ApprovalStore", "Resumed"]

#: The version of the store file this release writes (SQLite's ``user_version``).
STORE_VERSION = 1
#: The versions it opens: 0 is a file of earlier releases, which held the same table.
READ_VERSIONS = (0, 1)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tooluse_resumed (
    pause TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    decisions TEXT NOT NULL,
    at REAL NOT NULL,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL
)
"""


@dataclass(frozen=True, slots=True)
class Resumed:
    """A pause that was resumed: when, by which process, with decisions for which calls."""

    pause: str
    task: str
    decisions: tuple[str, ...]
    at: float
    pid: int
    host: str

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.at))
        return f"at {when} by process {self.pid} on {self.host}"


class ApprovalStore(Closing):
    """The pauses resumed so far: in this process's memory, or in a SQLite file processes share.

    Args:
        path: the SQLite file (created if missing); None keeps the pauses in memory.
        timeout: seconds to wait for another process writing to the same file.
    """

    def __init__(self, path: str | Path | None = None, *, timeout: float = 30.0) -> None:
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._memory: dict[str, Resumed] = {}
        self._db: sqlite3.Connection | None = None
        if self.path is not None:
            self._db = self._open(self.path, timeout)

    @staticmethod
    def _open(path: Path, timeout: float) -> sqlite3.Connection:
        if not path.parent.is_dir():
            raise UsageError(
                f"cannot open the approval store {path}: its directory {path.parent} is missing"
            )
        try:
            # Autocommit: every claim is one statement, committed before it returns.
            db = sqlite3.connect(
                path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            try:
                # The file's version is SQLite's user_version: 0 in a new file and in one
                # an earlier release wrote (the same table); another is refused untouched.
                (found,) = db.execute("PRAGMA user_version").fetchone()
                version_of(
                    {VERSION: found},
                    f"the approval store {path}",
                    READ_VERSIONS,
                    advice="open it with the release that wrote it",
                )
                db.execute(_SCHEMA)
                if found != STORE_VERSION:
                    db.execute(f"PRAGMA user_version = {STORE_VERSION}")
            except BaseException:
                db.close()
                raise
        except sqlite3.Error as exc:
            raise UsageError(f"cannot use {path} as an approval store: {exc}") from exc
        return db

    def claim(self, pause: str, *, task: str, decisions: Sequence[str]) -> None:
        """Write down that `pause` is being resumed; `AlreadyResumedError` if it was before."""
        entry = Resumed(
            pause, task, tuple(decisions), time.time(), os.getpid(), socket.gethostname()
        )
        with self._lock:
            if self._db is None:
                earlier = self._memory.get(pause)
                if earlier is None:
                    self._memory[pause] = entry
                    return
            else:
                earlier = self._insert(entry)
                if earlier is None:
                    return
        raise AlreadyResumedError(
            f"the paused run {pause} was resumed already ({earlier.describe()}), and each "
            "approval is used once: a copy of a paused state, here or in another process, "
            "cannot run its approved calls again; resume the result that run returned"
        )

    def _insert(self, entry: Resumed) -> Resumed | None:
        """Insert `entry`, or return the row that is there already: one transaction."""
        assert self._db is not None
        try:
            # IMMEDIATE takes the write lock first, so two processes cannot both see no row.
            self._db.execute("BEGIN IMMEDIATE")
            try:
                earlier = self._row(entry.pause)
                if earlier is None:
                    self._db.execute(
                        "INSERT INTO tooluse_resumed (pause, task, decisions, at, pid, host) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (
                            entry.pause,
                            entry.task,
                            json.dumps(list(entry.decisions)),
                            entry.at,
                            entry.pid,
                            entry.host,
                        ),
                    )
                self._db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back itself
                    self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            # Nothing is known about the pause: refuse rather than risk running it twice.
            raise ResumeError(
                f"the approval store {self.path} could not record this resume ({exc}); "
                "nothing ran, and the paused run can be resumed once the store works"
            ) from exc
        return earlier

    def _row(self, pause: str) -> Resumed | None:
        assert self._db is not None
        row = self._db.execute(
            "SELECT pause, task, decisions, at, pid, host FROM tooluse_resumed WHERE pause = ?",
            (pause,),
        ).fetchone()
        if row is None:
            return None
        return Resumed(row[0], row[1], tuple(json.loads(row[2])), row[3], row[4], row[5])

    def resumed(self, pause: str) -> Resumed | None:
        """How `pause` was resumed, or None if it was not."""
        with self._lock:
            if self._db is None:
                return self._memory.get(pause)
            return self._row(pause)

    def release(self, pause: str) -> None:
        """Forget that `pause` was resumed, so it can be resumed again.

        The resume path calls it when a resume fails before anything ran. By hand,
        it is for a person who knows the approved calls did not run.
        """
        with self._lock:
            if self._db is None:
                self._memory.pop(pause, None)
            else:
                self._db.execute("DELETE FROM tooluse_resumed WHERE pause = ?", (pause,))

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()

    def __repr__(self) -> str:
        return f"ApprovalStore({str(self.path)!r})" if self.path is not None else "ApprovalStore()"


#: The store of agents given none: resumes in this process are resumed once.
PROCESS_STORE = ApprovalStore()
