"""Trace events and the JSON Lines writer.

The loop emits plain dictionaries, one per event (``run_start``,
``model_request``, ``model_response``, ``call``, ``rejected``, ``feedback``,
``run_end``). Sinks receive them; they never change what the run does: a
sink that raises is counted (`RunResult.sink_errors`) and warned about once
per run, and the run goes on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["EventSink", "JsonlTrace", "read_trace"]

EventSink = Callable[[dict[str, Any]], None]


class JsonlTrace:
    """Writes each event as one JSON line and flushes it at once.

    Flushing per event means a run that dies keeps everything recorded before.
    Text UTF-8 cannot carry (a lone surrogate a model or a tool produced) is
    written as its JSON escape, so `read_trace` gives back the same string.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A surrogate only ever occurs inside a JSON string, where the
        # backslash escape Python writes for it is the JSON escape too.
        self._file: IO[str] | None = self.path.open(
            "a", encoding="utf-8", errors="backslashreplace"
        )

    def __call__(self, event: dict[str, Any]) -> None:
        if self._file is None:
            return
        self._file.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_trace(path: str | Path) -> Iterator[dict[str, Any]]:
    """The events of a trace file, in order."""
    with Path(path).open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                event: dict[str, Any] = json.loads(line)
                yield event


def stamp(event: dict[str, Any]) -> dict[str, Any]:
    event.setdefault("t", time.time())
    return event
