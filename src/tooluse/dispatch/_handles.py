"""Results kept by reference: a large result is shown as a handle, and passed on as one.

A call's result whose text is over the run's result limit is kept whole in the run's
`Handles` and the model is shown a short id (``@r3-5f1c0a``), the value's kind and shape
(``list of 2,000 dicts with keys sku, name, price``) and a preview. The model passes
the value on by writing the id as a tool argument, exactly and alone (``"rows": "@r3-5f1c0a"``,
at any depth of the arguments): the dispatcher puts the stored value in its place
before the call is checked, so a tool never sees a handle. An id that names nothing,
or a result of another run, refuses the call with the reason; the run goes on.

Only the recorded result of a call that ran (or a plan's result, made of such
results) is ever kept, so every value a handle gives a tool came from a real
execution.

An id is the result's number in its run and the run's tag, six hex digits of a hash
of the run's id: a handle of another run (a conversation continued with an earlier
run's messages, say) is told apart from one of this run by its tag, never taken for
this run's result of the same number. The numbers follow the order results arrive, so
a durable run that is recovered makes the same ids again.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

from .._records import HANDLE, render_result

__all__ = ["HANDLE", "Handles", "Kept", "describe"]

#: Characters of a value the model sees before its handle's id.
_PREVIEW = 400
#: How the message that shows a kept result begins, its handle right after.
_SHOWN_START = "[stored as "


@dataclass(frozen=True, slots=True)
class Kept:
    """One stored result: its handle, the call that made it, and what the model is told."""

    handle: str
    call_id: str
    value: Any
    kind: str
    shape: str
    chars: int


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, dict):
        return "dict"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__


def describe(value: Any) -> tuple[str, str]:
    """The kind of `value` and its shape in words: ``("list", "list of 3 dicts with keys a")``."""
    kind = _kind_of(value)
    if isinstance(value, str):
        return (
            kind,
            f"text of {_plural(len(value), 'character')}, "
            f"{_plural(value.count(chr(10)) + 1, 'line')}",
        )
    if isinstance(value, dict):
        names = list(value)
        listed = ", ".join(str(k) for k in names[:12]) + (", ..." if len(names) > 12 else "")
        return kind, f"dict with {_plural(len(names), 'key')}: {listed}"
    if isinstance(value, list | tuple):
        kinds = {_kind_of(item) for item in value}
        if len(kinds) != 1:
            return kind, f"list of {_plural(len(value), 'item')}"
        (inner,) = kinds
        shape = f"list of {_plural(len(value), inner)}"
        if inner == "dict":
            keys: dict[str, None] = {}
            for item in value[:50]:  # the first items say enough; a scan of all would not
                keys.update(dict.fromkeys(str(k) for k in item))
            listed = ", ".join(list(keys)[:12]) + (", ..." if len(keys) > 12 else "")
            shape += f" with keys {listed}"
        return kind, shape
    return kind, kind


def _preview(value: Any, text: str) -> str:
    if isinstance(value, list | tuple) and value:
        shown: list[str] = []
        used = 0
        for item in value:
            piece = render_result(item)
            if shown and used + len(piece) > _PREVIEW:
                break
            shown.append(piece[:_PREVIEW])
            used += len(piece)
        more = len(value) - len(shown)
        return "[" + ",".join(shown) + (f", ... {more:,} more]" if more else "]")
    return text[:_PREVIEW] + (" ..." if len(text) > _PREVIEW else "")


class Handles:
    """One run's results kept by reference, and the resolution of handles in arguments.

    Args:
        limit: a result whose text is longer than this many characters is kept and
            shown as a handle; shorter ones are shown as they are.
        run_id: the run's id, whose hash tags its handles (a new one if None).
    """

    def __init__(self, limit: int, run_id: str | None = None) -> None:
        self.limit = limit
        run = run_id if run_id is not None else uuid.uuid4().hex
        self.tag = hashlib.sha256(run.encode()).hexdigest()[:6]
        self._kept: dict[str, Kept] = {}
        #: The handles each call's arguments named, by call id (the trace records them).
        self.used: dict[str, tuple[str, ...]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, handle: str) -> Kept | None:
        return self._kept.get(handle)

    def keep(self, call_id: str, value: Any, text: str) -> Kept | None:
        """Keep `value` (whose text is `text`) if the text is over the limit, else None."""
        if len(text) <= self.limit:
            return None
        handle = f"@r{len(self._kept) + 1}-{self.tag}"
        kind, shape = describe(value)
        kept = Kept(handle, call_id, value, kind, shape, len(text))
        self._kept[handle] = kept
        return kept

    def adopt(self, shown: str, call_id: str, value: Any) -> None:
        """Take up a handle a resumed run showed before it paused: `shown` is the tool
        message it was shown in, `value` the recorded result of call `call_id`.

        A run paused for approval is the same run when it goes on: the handles in its
        conversation must still name their results. Does nothing for other messages.
        """
        if not shown.startswith(_SHOWN_START):
            return
        found = HANDLE.match(shown, len(_SHOWN_START))
        if found is None:
            return
        text = render_result(value)
        kind, shape = describe(value)
        self._kept[found.group()] = Kept(found.group(), call_id, value, kind, shape, len(text))

    def shown(self, kept: Kept, text: str) -> str:
        """What the model sees of a kept result: its handle, kind and shape, a preview."""
        size = "" if kept.kind == "text" else f" ({kept.chars:,} characters)"  # text says it
        return (
            f"{_SHOWN_START}{kept.handle}: {kept.shape}{size}]\n"
            f"Preview: {_preview(kept.value, text)}\n"
            f'To give a tool the whole value, pass the string "{kept.handle}" as the argument.'
        )

    def resolve(self, call_id: str, arguments: dict[str, Any]) -> dict[str, Any] | str:
        """`arguments` with each handle replaced by its value, or why the call is refused.

        Only strings that are exactly a handle are replaced; a handle inside a longer
        string is text.
        """
        used: list[str] = []
        problems: list[str] = []

        def walk(value: Any) -> Any:
            if isinstance(value, str):
                if HANDLE.fullmatch(value) is None:
                    return value
                kept = self._kept.get(value)
                if kept is None:
                    problems.append(self._unknown(value))
                    return value
                used.append(value)
                return kept.value
            if isinstance(value, dict):
                return {k: walk(v) for k, v in value.items()}
            if isinstance(value, list):
                return [walk(v) for v in value]
            return value

        resolved = {k: walk(v) for k, v in arguments.items()}
        if problems:
            return "; ".join(problems)
        if used:
            self.used[call_id] = tuple(used)
        return resolved

    def _unknown(self, handle: str) -> str:
        mine = ", ".join(self._kept) or "none"
        if not handle.endswith(f"-{self.tag}"):
            return (
                f"{handle} is a stored result of another run; a handle is valid only in the "
                f"run that made it (this run's handles: {mine})"
            )
        return f"there is no stored result {handle} in this run (this run's handles: {mine})"
