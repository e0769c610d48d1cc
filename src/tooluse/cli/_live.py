"""`tooluse run` as it happens: the events of `Agent.stream_sync` drawn on the terminal."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape

from .._messages import Message
from .._records import CallRecord, RejectedCall
from ..events import (
    AnswerChecked,
    ApprovalNeeded,
    CallOutcome,
    CallStart,
    ContextMove,
    Event,
    ModelDelta,
    ScriptEnd,
    ScriptOutput,
    ScriptStart,
    call_outcome,
)
from ..run._agent import Agent
from ..run._result import RunResult
from ..run._stream import StreamEvent, SyncRunStream

__all__ = ["LiveView"]


class LiveView:
    """Draws a streamed run on `console`: the model's text as it comes, each call as it
    starts and ends, a script's code and then its output line by line.

    Ended calls are drawn by `render_record` (given the call's `CallEnd` or
    `CallRejected`), so they look as they do without streaming. Each thing is drawn
    once: a script the model wrote in its streamed text is not drawn again when it
    starts, and `streamed` tells whether a text (the answer) is already on screen.
    """

    def __init__(self, console: Console, render_record: Callable[[Event], None]) -> None:
        self.console = console
        self.render_record = render_record
        self._in_text = False
        self._shown: set[str] = set()
        # The model's text as streamed, by round: what is already on screen.
        self._text: dict[int, str] = {}
        #: Whether a streamed run is being drawn.
        self.streaming = False

    def run(self, agent: Agent, task: str, *, history: Sequence[Message] = ()) -> RunResult:
        """Run `task` streamed; Ctrl-C stops it and returns what was done (status cancelled)."""
        return self._draw(agent.stream_sync(task, history=history))

    def resume(
        self, agent: Agent, result: RunResult, decisions: Mapping[str, bool | dict[str, Any]]
    ) -> RunResult:
        """Resume a run that stopped for approval, streamed as `run` is."""
        return self._draw(agent.resume_stream_sync(result, decisions))

    def _draw(self, events: SyncRunStream) -> RunResult:
        self.streaming = True
        try:
            for event in events:
                self.show(event)
        except KeyboardInterrupt:
            pass  # pressed while an event was drawn rather than while the run ran
        finally:
            self.streaming = False
        self._end_text()
        result = events.close()
        # Stopped by Ctrl-C, the run may have ended calls the screen never got to.
        records: list[CallRecord | RejectedCall] = [*result.calls, *result.rejected]
        for record in records:
            if record.id not in self._shown:
                self.render_record(call_outcome(record))
        return result

    def show(self, event: StreamEvent) -> None:
        if isinstance(event, ModelDelta):
            self.console.print(event.text, end="", style="dim", markup=False, highlight=False)
            self._text[event.round] = self._text.get(event.round, "") + event.text
            self._in_text = True
            return
        self._end_text()
        if isinstance(event, CallStart):
            self.console.print(f"[cyan]… {escape(event.name)}[/]")
        elif isinstance(event, CallOutcome):
            self._shown.add(event.record.id)
            self.render_record(event)
        elif isinstance(event, ScriptStart):
            if _holds(self._text.get(event.round, ""), event.code):
                self.console.print(f"[cyan]… {escape(event.id)}[/]")
            else:  # the script came some other way than the streamed text (a call's arguments)
                from rich.syntax import Syntax  # it loads pygments: only shown code pays for it

                self.console.print(Syntax(event.code.rstrip(), "python", line_numbers=False))
        elif isinstance(event, ScriptOutput):
            self.console.print(f"[dim]│[/] {escape(event.line)}", highlight=False)
        elif isinstance(event, ScriptEnd) and event.status != "paused":
            colour = "green" if event.status == "ok" else "red"
            self.console.print(f"[{colour}]▶ {event.id}: {event.status}, {event.calls} calls[/]")
            if event.error:
                self.console.print(escape(event.error))
        elif isinstance(event, ContextMove):
            ids = ", ".join(event.ids) or "-"
            self.console.print(f"[blue]⇢ context {event.action} by the {event.by}[/]: {ids}")
        elif isinstance(event, AnswerChecked):
            self.render_record(event)
        elif isinstance(event, ApprovalNeeded):
            names = ", ".join(sorted({r.tool for r in event.pending}))
            self.console.print(f"[yellow]⏸ waiting for approval[/]: {escape(names)}")

    def streamed(self, text: str) -> bool:
        """Whether `text` is on screen already, as the streamed text of the latest round."""
        if not self._text or not text.strip():
            return False
        return _holds(self._text[max(self._text)], text)

    def _end_text(self) -> None:
        if self._in_text:
            self.console.print()
            self._in_text = False


def _holds(shown: str, text: str) -> bool:
    """Whether `shown` holds `text` line by line, leading and trailing blanks aside (a
    script taken from a fenced block in the text may have been dedented or trimmed)."""
    lines = [line.strip() for line in text.strip().splitlines()]
    seen = [line.strip() for line in shown.splitlines()]
    return bool(lines) and any(
        seen[i : i + len(lines)] == lines for i in range(len(seen) - len(lines) + 1)
    )
