"""What the viewer shows: runs read from trace files, and bench result directories.

Only what lies under the paths given on the command line is ever read, links
followed: a file whose real path leads out of every given path is not listed,
served or bundled (a given path that is itself a link is what the user asked for).
A ``results.jsonl`` given by name stands for its directory. Pages name a trace
file or a directory by a short hash of its path, never by the path itself, so a
URL cannot reach anywhere else.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._runs import PAGE_EVENTS, Corrupt, Line, Run, TraceFile

__all__ = ["PAGE_EVENTS", "BenchDir", "Catalog", "Corrupt", "Line", "Run", "TraceFile"]

#: Files in a bench directory the viewer serves (plots).
IMAGE_TYPES = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg"}


def _id(path: Path) -> str:
    return hashlib.sha1(str(path).encode()).hexdigest()[:10]


def _within(path: Path, roots: Sequence[Path]) -> Path | None:
    """``path`` with every link followed, if that lies under one of ``roots``."""
    try:
        real = path.resolve()
    except (OSError, RuntimeError):  # a loop of links
        return None
    return real if any(real.is_relative_to(root) for root in roots) else None


@dataclass(slots=True)
class BenchDir:
    id: str
    path: Path
    roots: tuple[Path, ...]
    """The given paths: none of its files is read from outside them."""

    def own(self, name: str) -> Path | None:
        """The real path of the file ``name`` in this directory, if it lies under the
        given paths."""
        real = _within(self.path / name, self.roots)
        return real if real is not None and real.is_file() else None

    @property
    def summary(self) -> Path | None:
        return self.own("summary.md")

    @property
    def results(self) -> Path | None:
        return self.own("results.jsonl")

    def images(self) -> list[str]:
        try:
            names = [p.name for p in self.path.iterdir() if p.suffix.lower() in IMAGE_TYPES]
        except OSError:
            return []
        return sorted(name for name in names if self.own(name) is not None)

    def image(self, name: str) -> Path | None:
        """The plot called `name` in this directory, and nothing else."""
        return self.own(name) if name in self.images() else None


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

    def roots(self) -> list[Path]:
        """What may be read: the given paths, a given results.jsonl's directory."""
        return [p.parent if p.name == "results.jsonl" and p.is_file() else p for p in self.paths]

    def scan(self) -> None:
        found: dict[str, TraceFile] = {}
        benches: dict[str, BenchDir] = {}
        self.empty, self.missing = [], []
        roots = tuple(self.roots())
        for given in self.paths:
            if given.is_file():
                if given.name == "results.jsonl":
                    self._bench(benches, given.parent, roots)
                else:
                    self._trace(found, given, roots)
                continue
            if not given.is_dir():
                self.missing.append(given)
                continue
            before = len(found) + len(benches)
            # Links to directories are not followed (os.walk's default); links to files
            # are, as far as the given paths reach.
            for root, dirs, files in os.walk(given):
                dirs.sort()
                here = Path(root)
                if "results.jsonl" in files or "summary.md" in files:
                    self._bench(benches, here, roots)
                for name in sorted(files):
                    if name.endswith(".jsonl") and name != "results.jsonl":
                        self._trace(found, here / name, roots)
            if len(found) + len(benches) == before:
                self.empty.append(given)
        self.traces, self.benches = found, benches

    def _bench(self, benches: dict[str, BenchDir], path: Path, roots: tuple[Path, ...]) -> None:
        bench = BenchDir(_id(path), path, roots)
        if bench.results is not None or bench.summary is not None:
            benches[bench.id] = bench

    def _trace(self, found: dict[str, TraceFile], path: Path, roots: tuple[Path, ...]) -> None:
        real = _within(path, roots)
        if real is None:
            return
        key = _id(path)
        trace = self.traces.get(key)
        if trace is None or trace.real != real:  # new, or its link now leads elsewhere
            trace = TraceFile(key, path, real)
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
            digest.update(f"run {run.id} {run.status} {run.count}\n".encode())
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


def _stamp(path: Path | None) -> tuple[int, int] | None:
    if path is None:
        return None
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size
