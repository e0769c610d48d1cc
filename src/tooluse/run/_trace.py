"""The JSON Lines trace writer and reader.

The loop emits typed events (`tooluse.events`); a trace line is an event's
dict form (`Event.to_dict`), and `read_events` gives the events back. Sinks
never change what the run does: a sink that raises is counted
(`RunResult.sink_errors`) and warned about once per run, and the run goes on.
An `Agent`'s ``on_event`` receives each event's dict form, as the trace has it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from ..events import Event, event_from_dict

__all__ = ["EventSink", "JsonlTrace", "TypedSink", "as_dict_sink", "read_events", "read_trace"]

#: A sink of events in their dict form (an `Agent`'s ``on_event``).
EventSink = Callable[[dict[str, Any]], None]
#: A sink of typed events.
TypedSink = Callable[[Event], None]


def as_dict_sink(sink: EventSink) -> TypedSink:
    """`sink`, given each event's dict form."""

    def typed(event: Event) -> None:
        sink(event.to_dict())

    return typed


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

    def __call__(self, event: Event | dict[str, Any]) -> None:
        if self._file is None:
            return
        data = event.to_dict() if isinstance(event, Event) else event
        self._file.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
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


def read_events(path: str | Path) -> Iterator[Event]:
    """The typed events of a trace file, in order (see `tooluse.events.event_from_dict`)."""
    for data in read_trace(path):
        yield event_from_dict(data)
