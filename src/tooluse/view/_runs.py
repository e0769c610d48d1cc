"""Runs read from a trace file incrementally, with memory bounded by a page.

A trace file is read once, then from where the last read stopped: a poll after an
append reads the appended bytes and parses the lines they complete, nothing else.
Of each run only its summary (counts, tokens, first and last event) and the byte
offset of every page's first event are kept; a page's events are read from the file
when it is shown, so the viewer's memory grows with a page, not with the file.
"""

from __future__ import annotations

import json
import os
import time
from array import array
from bisect import bisect_right
from collections.abc import Generator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..events import (
    ApprovalDecided,
    CallEnd,
    CallRejected,
    Event,
    ModelReply,
    ModelRequest,
    Resumed,
    RunEnd,
    RunStart,
    event_from_dict,
)

__all__ = ["PAGE_EVENTS", "Corrupt", "Line", "Run", "TraceFile"]

#: Events on one page of a run; a 10k-event trace has 20 pages.
PAGE_EVENTS = 500
#: Characters of a corrupt line shown on the page.
_CORRUPT_SHOWN = 300
#: Characters kept of the task, model and convention a run started with.
_START_KEPT = 1_000
#: A run with no end whose file changed this recently is still being written.
_LIVE_S = 120.0
#: Bytes asked of the file per read.
_CHUNK = 1 << 20
#: The last bytes read, compared on each load: they differ when the file was rewritten
#: rather than appended to, and it is then read again from the start.
_CHECKED = 64


@dataclass(frozen=True, slots=True)
class Corrupt:
    """A line that is not a JSON object: cut short by a killed run, or damaged."""

    reason: str
    text: str
    length: int


@dataclass(frozen=True, slots=True)
class Line:
    number: int
    """1-based line number in the file."""
    event: dict[str, Any] | Corrupt
    """The line as written (its raw form is served as is)."""

    def typed(self) -> Event | Corrupt:
        """The line's event (`UnknownEvent` for a tag or fields this release cannot read)."""
        return self.event if isinstance(self.event, Corrupt) else event_from_dict(self.event)


def _parse(number: int, raw: bytes) -> Line | None:
    if not raw.strip():
        return None
    try:
        event = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        text = raw[: _CORRUPT_SHOWN * 4].decode("utf-8", errors="replace").rstrip("\n")
        reason = str(exc) if raw.endswith(b"\n") else f"cut short ({exc})"
        return Line(number, Corrupt(reason, text[:_CORRUPT_SHOWN], len(raw.rstrip(b"\n"))))
    if not isinstance(event, dict):
        text = raw[: _CORRUPT_SHOWN * 4].decode("utf-8", errors="replace").rstrip("\n")
        length = len(raw.rstrip(b"\n"))
        return Line(number, Corrupt("not a JSON object", text[:_CORRUPT_SHOWN], length))
    return Line(number, event)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: Any) -> int:
    number = _number(value)
    return int(number) if number is not None else 0


def _served(event: Event | Corrupt) -> bool:
    """A call answered by `tooluse mcp serve`, whose trace holds only such calls."""
    return isinstance(event, CallEnd | CallRejected) and event.record.source == "mcp"


def _kept(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return text[:_START_KEPT]


@dataclass(slots=True)
class Run:
    """One run of a trace file: its summary, and where its pages start in the file."""

    id: str
    file: TraceFile
    index: int
    count: int = 0
    """Events so far (lines that are not blank)."""
    start: dict[str, Any] = field(default_factory=dict)
    """The task, model and convention of its ``run_start`` event (clipped)."""
    end: dict[str, Any] | None = None
    """Status, rounds and duration of its ``run_end`` event; None while it runs."""
    calls: int = 0
    rejected: int = 0
    corrupt: int = 0
    tokens: tuple[int, int] = (0, 0)
    started: float | None = None
    """The first timestamp of its events."""
    last_t: float | None = None
    round: int = 0
    """The highest round a model request was made in."""
    served: bool = False
    """Its events are the calls a `tooluse mcp serve` answered: no run_start, no end."""
    # Offset and line number of event k * PAGE_EVENTS, for every page k.
    _offsets: array[int] = field(default_factory=lambda: array("q"))
    _numbers: array[int] = field(default_factory=lambda: array("q"))

    def _add(self, line: Line, event: Event | Corrupt, offset: int) -> None:
        if self.count % PAGE_EVENTS == 0:
            self._offsets.append(offset)
            self._numbers.append(line.number)
        self.count += 1
        if isinstance(event, Corrupt):
            self.corrupt += 1
            return
        t = _number(line.event.get("t")) if isinstance(line.event, dict) else None
        if t is not None:
            self.started = t if self.started is None else self.started
            self.last_t = t
        match event:
            case RunStart() if self.count == 1:
                self.start = {
                    "task": _kept(event.task),
                    "model": _kept(event.model),
                    "convention": _kept(event.convention),
                }
            case RunEnd():
                self.end = {
                    "status": event.status,
                    "rounds": event.rounds,
                    "duration_s": event.duration_s,
                }
            case ModelRequest():
                self.round = max(self.round, event.round)
            case ModelReply(usage=usage):
                used = (_count(usage.get("input_tokens")), _count(usage.get("output_tokens")))
                self.tokens = (self.tokens[0] + used[0], self.tokens[1] + used[1])
            case CallEnd():
                self.calls += 1
            case CallRejected():
                self.rejected += 1
            case _:
                pass

    @property
    def status(self) -> str:
        if self.served:
            return "served"  # a server's calls: it has no end to wait for
        if self.end is not None:
            return str(self.end.get("status", "?"))
        last = self.index == len(self.file.runs) - 1
        fresh = time.time() - self.file.mtime < _LIVE_S
        return "running" if last and fresh else "incomplete"

    @property
    def rounds(self) -> int:
        if self.end is not None and "rounds" in self.end:
            return _count(self.end["rounds"])
        return self.round

    @property
    def duration_s(self) -> float | None:
        if self.end is not None and _number(self.end.get("duration_s")) is not None:
            return float(self.end["duration_s"])
        if self.started is None or self.last_t is None:
            return None
        return self.last_t - self.started

    def lines(self, start: int, stop: int, max_bytes: int | None = None) -> list[Line]:
        """Events ``start`` to ``stop - 1`` (0-based), read from the file.

        With ``max_bytes``, it stops early once the lines read hold that many bytes
        (one line at least). Reads from the first event of ``start``'s page.
        """
        stop = min(stop, self.count)
        if start >= stop:
            return []
        page = start // PAGE_EVENTS
        out: list[Line] = []
        held = 0
        with closing(self._read(page)) as events:
            for index, number, raw in events:
                if index >= stop:
                    break
                if index < start:
                    continue
                line = _parse(number, raw)
                if line is not None:
                    out.append(line)
                    held += len(raw)
                if max_bytes is not None and held >= max_bytes:
                    break
        return out

    def raw(self, number: int) -> bytes | None:
        """Line ``number`` of the file as written, if it is one of this run's events."""
        page = bisect_right(self._numbers, number) - 1
        if page < 0:
            return None
        last = min((page + 1) * PAGE_EVENTS, self.count)
        with closing(self._read(page)) as events:
            for index, n, raw in events:
                if index >= last or n > number:
                    break
                if n == number:
                    return raw
        return None

    def _read(self, page: int) -> Generator[tuple[int, int, bytes], None, None]:
        """(event index, line number, bytes) of the events from ``page``'s first on."""
        if page >= len(self._offsets):
            return
        index, number = page * PAGE_EVENTS, self._numbers[page]
        try:
            with self.file.real.open("rb") as handle:
                handle.seek(self._offsets[page])
                while index < self.count:
                    raw = handle.readline()
                    if not raw:
                        return
                    if raw.strip():  # as `TraceFile` counts: a blank line is no event
                        yield index, number, raw
                        index += 1
                    number += 1
        except OSError:
            return


@dataclass(slots=True)
class TraceFile:
    """A trace file and its runs, read up to where it ended at the last `load`."""

    id: str
    path: Path
    """Where it was found, under a given path: what pages show."""
    real: Path
    """What it resolves to: what is read."""
    runs: list[Run] = field(default_factory=list)
    mtime: float = 0.0
    size: int = -1
    _stamp: tuple[int, int, int] = (0, 0, 0)
    _read: int = 0
    """Bytes read so far: every complete line, and the unfinished one below."""
    _lines: int = 0
    """Lines counted so far."""
    _pending: bytearray = field(default_factory=bytearray)
    """The unfinished last line: bytes read with no newline after them yet."""
    _joined: bool = False
    """The unfinished line was a whole JSON object and counted as an event; the next
    bytes up to a newline end it and are no event of their own."""
    _checked: bytes = b""
    _start: tuple[Line, Event | Corrupt, int] | None = None
    """The line, event and offset of the last run's first event."""

    @property
    def unfinished(self) -> int:
        """Bytes at the end of the file with no newline after them, not shown as an event:
        a line being written, or one a killed writer cut short."""
        return len(self._pending) if not self._joined else 0

    def load(self) -> None:
        """Read what was appended since the last load; all again if it was rewritten."""
        stat = os.stat(self.real)
        stamp = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if stamp == self._stamp:
            return
        # Unbuffered: only the bytes asked for are read.
        with self.real.open("rb", buffering=0) as handle:
            if (
                stat.st_ino != self._stamp[0]
                or stat.st_size < self._read
                or not self._continues(handle)
            ):
                self._restart()
            self._stamp, self.size, self.mtime = stamp, stat.st_size, stat.st_mtime
            handle.seek(self._read)
            while chunk := handle.read(_CHUNK):
                self._take(chunk)
        self._end_of_file()

    def _continues(self, handle: IO[bytes]) -> bool:
        if not self._read:
            return True
        handle.seek(self._read - len(self._checked))
        return handle.read(len(self._checked)) == self._checked

    def _restart(self) -> None:
        self.runs = []
        self._read = self._lines = 0
        self._pending = bytearray()
        self._joined = False
        self._checked = b""
        self._start = None

    def _take(self, chunk: bytes) -> None:
        """Count the lines `chunk` completes; keep the unfinished rest."""
        base = self._read - len(self._pending)  # the file offset of _pending's first byte
        self._read += len(chunk)
        self._checked = (self._checked + chunk)[-_CHECKED:]
        newline = chunk.find(b"\n")
        if newline < 0:
            self._pending += chunk
            return
        first = bytes(self._pending + chunk[: newline + 1])
        self._pending = bytearray()
        self._line(first, base)
        base += len(first)
        begin = newline + 1
        while (newline := chunk.find(b"\n", begin)) >= 0:
            self._line(chunk[begin : newline + 1], base)
            base += newline + 1 - begin
            begin = newline + 1
        self._pending = bytearray(chunk[begin:])

    def _end_of_file(self) -> None:
        """An unfinished last line that is a whole JSON object was written without its
        newline: count it now; whatever follows it on its line later is not an event."""
        if self._joined or not self._pending.rstrip().endswith(b"}"):
            return  # (a line being written is not parsed again on every poll)
        try:
            whole = isinstance(json.loads(self._pending), dict)
        except (json.JSONDecodeError, UnicodeDecodeError):
            whole = False
        if whole:
            self._line(bytes(self._pending), self._read - len(self._pending))
            self._joined = True

    def _line(self, raw: bytes, offset: int) -> None:
        if self._joined:  # the end of the line counted at the end of the file before
            self._joined = False
            return
        self._lines += 1
        line = _parse(self._lines, raw)
        if line is None:
            return
        event = line.typed()  # read once: the run's summary is built from it too
        served = _served(event)
        if isinstance(event, RunStart) or not self.runs or (served and not self.runs[-1].served):
            run = Run(f"{self.id}-{len(self.runs)}", self, len(self.runs), served=served)
            self.runs.append(run)
            self._start = (line, event, offset)
        elif self._resumes(event):
            self._join()
        self.runs[-1]._add(line, event, offset)

    def _resumes(self, event: Event | Corrupt) -> bool:
        """`event` is the first after the run_start of a resume, and the run before it
        paused: a run stopped for approval and resumed goes on in the same row (an agent
        writes a run_start for each resume; `tooluse run --approve ask` resumes at once)."""
        if not isinstance(event, ApprovalDecided | Resumed) or len(self.runs) < 2:
            return False
        resume, paused = self.runs[-1], self.runs[-2]
        return (
            resume.count == 1
            and self._start is not None
            and isinstance(self._start[1], RunStart)
            and paused.end is not None
            and paused.end.get("status") == "needs_approval"
            and paused.start.get("task") == _kept(self._start[1].task)
        )

    def _join(self) -> None:
        """Move the resume's run_start into the paused run before it, which goes on."""
        assert self._start is not None
        line, start, offset = self._start
        self.runs.pop()
        paused = self.runs[-1]
        paused.end = None
        paused._add(line, start, offset)
