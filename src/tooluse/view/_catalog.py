"""What the viewer shows: runs read from trace files, and bench result directories.

Only the paths given on the command line and what lies under them are ever
read. Pages name a trace file or a directory by a short hash of its path, never
by the path itself, so a URL cannot reach anywhere else.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BenchDir", "Catalog", "Corrupt", "Line", "Run", "TraceFile"]

#: Files in a bench directory the viewer serves (plots).
IMAGE_TYPES = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg"}
#: Characters of a corrupt line shown on the page.
_CORRUPT_SHOWN = 300
#: A run with no end whose file changed this recently is still being written.
_LIVE_S = 120.0


def _id(path: Path) -> str:
    return hashlib.sha1(str(path).encode()).hexdigest()[:10]


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


@dataclass(slots=True)
class Run:
    id: str
    file: TraceFile
    index: int
    lines: list[Line] = field(default_factory=list)

    @property
    def start(self) -> dict[str, Any]:
        first = self.lines[0].event if self.lines else None
        return first if isinstance(first, dict) and first.get("event") == "run_start" else {}

    @property
    def end(self) -> dict[str, Any] | None:
        for line in reversed(self.lines):
            if isinstance(line.event, dict) and line.event.get("event") == "run_end":
                return line.event
        return None

    def _events(self, kind: str) -> list[dict[str, Any]]:
        return [
            line.event
            for line in self.lines
            if isinstance(line.event, dict) and line.event.get("event") == kind
        ]

    @property
    def status(self) -> str:
        end = self.end
        if end is not None:
            return str(end.get("status", "?"))
        last = self.index == len(self.file.runs) - 1
        fresh = time.time() - self.file.mtime < _LIVE_S
        return "running" if last and fresh else "incomplete"

    @property
    def rounds(self) -> int:
        end = self.end
        if end is not None:
            return int(end.get("rounds") or 0)
        return max((int(e.get("round") or 0) for e in self._events("model_request")), default=0)

    @property
    def calls(self) -> int:
        return len(self._events("call"))

    @property
    def rejected(self) -> int:
        return len(self._events("rejected"))

    @property
    def corrupt(self) -> int:
        return sum(isinstance(line.event, Corrupt) for line in self.lines)

    @property
    def tokens(self) -> tuple[int, int]:
        usage = [e.get("usage") or {} for e in self._events("model_response")]
        return (
            sum(int(u.get("input_tokens") or 0) for u in usage),
            sum(int(u.get("output_tokens") or 0) for u in usage),
        )

    @property
    def started(self) -> float | None:
        for line in self.lines:
            if isinstance(line.event, dict) and isinstance(line.event.get("t"), (int, float)):
                return float(line.event["t"])
        return None

    @property
    def duration_s(self) -> float | None:
        end = self.end
        if end is not None and isinstance(end.get("duration_s"), (int, float)):
            return float(end["duration_s"])
        stamps = [
            float(line.event["t"])
            for line in self.lines
            if isinstance(line.event, dict) and isinstance(line.event.get("t"), (int, float))
        ]
        return stamps[-1] - stamps[0] if stamps else None


@dataclass(slots=True)
class TraceFile:
    id: str
    path: Path
    mtime: float = 0.0
    size: int = -1
    runs: list[Run] = field(default_factory=list)

    def load(self) -> None:
        """Read the file again if it changed since the last read."""
        stat = self.path.stat()
        if stat.st_size == self.size and stat.st_mtime == self.mtime:
            return
        self.size, self.mtime = stat.st_size, stat.st_mtime
        runs: list[Run] = []
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                line = _parse(number, raw)
                if line is None:
                    continue
                starts = isinstance(line.event, dict) and line.event.get("event") == "run_start"
                if starts or not runs:
                    runs.append(Run(f"{self.id}-{len(runs)}", self, len(runs)))
                runs[-1].lines.append(line)
        self.runs = runs

    def raw_line(self, number: int) -> bytes | None:
        with self.path.open("rb") as handle:
            for n, raw in enumerate(handle, start=1):
                if n == number:
                    return raw
        return None


def _parse(number: int, raw: bytes) -> Line | None:
    if not raw.strip():
        return None
    try:
        event = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        text = raw.decode("utf-8", errors="replace").rstrip("\n")
        reason = str(exc) if raw.endswith(b"\n") else f"cut short ({exc})"
        return Line(number, Corrupt(reason, text[:_CORRUPT_SHOWN], len(text)))
    if not isinstance(event, dict):
        text = raw.decode("utf-8", errors="replace").rstrip("\n")
        return Line(number, Corrupt("not a JSON object", text[:_CORRUPT_SHOWN], len(text)))
    return Line(number, event)


@dataclass(slots=True)
class BenchDir:
    id: str
    path: Path

    @property
    def summary(self) -> Path:
        return self.path / "summary.md"

    @property
    def results(self) -> Path:
        return self.path / "results.jsonl"

    def images(self) -> list[str]:
        return sorted(
            p.name for p in self.path.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_TYPES
        )

    def image(self, name: str) -> Path | None:
        """The plot called `name` in this directory, and nothing else."""
        if name not in self.images():
            return None
        return self.path / name


@dataclass(slots=True)
class Catalog:
    """Everything under the given paths, scanned again on each `scan`."""

    paths: list[Path]
    traces: dict[str, TraceFile] = field(default_factory=dict)
    benches: dict[str, BenchDir] = field(default_factory=dict)
    #: Given directories with nothing to show, and given paths that do not exist.
    empty: list[Path] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)

    @classmethod
    def of(cls, paths: list[str] | list[Path]) -> Catalog:
        catalog = cls([Path(p).resolve() for p in paths])
        catalog.scan()
        return catalog

    def scan(self) -> None:
        found: dict[str, TraceFile] = {}
        benches: dict[str, BenchDir] = {}
        self.empty, self.missing = [], []
        for given in self.paths:
            if given.is_file():
                if given.name == "results.jsonl":
                    benches[_id(given.parent)] = BenchDir(_id(given.parent), given.parent)
                else:
                    self._trace(found, given)
                continue
            if not given.is_dir():
                self.missing.append(given)
                continue
            before = len(found) + len(benches)
            for root, dirs, files in os.walk(given):
                dirs.sort()
                here = Path(root)
                if "results.jsonl" in files or "summary.md" in files:
                    benches[_id(here)] = BenchDir(_id(here), here)
                for name in sorted(files):
                    if name.endswith(".jsonl") and name != "results.jsonl":
                        self._trace(found, here / name)
            if len(found) + len(benches) == before:
                self.empty.append(given)
        self.traces, self.benches = found, benches

    def _trace(self, found: dict[str, TraceFile], path: Path) -> None:
        key = _id(path)
        trace = self.traces.get(key) or TraceFile(key, path)
        try:
            trace.load()
        except OSError:
            return
        found[key] = trace

    def runs(self) -> list[Run]:
        return [run for trace in self.traces.values() for run in trace.runs]

    def state(self) -> str:
        """A digest of what the run list shows: it changes when a run starts, grows or ends,
        or a bench directory appears or is rewritten."""
        digest = hashlib.sha256()
        for run in self.runs():
            digest.update(f"run {run.id} {run.status} {len(run.lines)}\n".encode())
        for bench in self.benches.values():
            stamps = [_stamp(bench.results), _stamp(bench.summary)]
            digest.update(f"bench {bench.id} {stamps}\n".encode())
        for path in [*self.missing, *self.empty]:
            digest.update(f"none {path}\n".encode())
        return digest.hexdigest()[:16]

    def run(self, run_id: str) -> Run | None:
        file_id, _, index = run_id.partition("-")
        trace = self.traces.get(file_id)
        if trace is None or not index.isdigit():
            return None
        try:
            trace.load()
        except OSError:
            return None
        n = int(index)
        return trace.runs[n] if n < len(trace.runs) else None


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size
