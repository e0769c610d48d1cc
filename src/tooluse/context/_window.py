"""The budgeted context window: what the model sees, under a hard token budget.

The harness owns the mechanism and the invariant: it counts every message,
and before each request, if the window would exceed the trigger and the agent
has not made room, it *offloads* (never deletes) the oldest eligible messages
to the store, leaving a one-line marker saying how to get them back. The agent
owns the policy: the `context_compress`, `context_offload` and
`context_query` tools let it decide when and what.

The system prompt, the task and the latest turn are never evicted. Tool results
larger than `ContextPolicy.result_limit` tokens enter the window as head and
tail plus a handle; the full payload goes to the store.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .._exceptions import ModelRetry, UsageError
from .._messages import Message
from ..tools import Tool
from ._store import ContextStore

__all__ = ["ContextPolicy", "ContextWindow"]

_ROLE_OVERHEAD = 4  # role and separators of one chat message, roughly


@dataclass(frozen=True, slots=True)
class ContextPolicy:
    """A hard token budget for what the model sees, and how it is kept.

    Args:
        budget: B, the most tokens a request may carry (messages + tool schemas).
        trigger: fraction of B past which the harness makes room itself.
        target: fraction of B the harness offloads down to when it does.
        result_limit: tool results longer than this many tokens are stored in
            full and shown as head and tail plus a handle.
        store: where offloaded material goes (default: in memory, per agent).
            Pass a file-backed `ContextStore` to keep it across processes.
        agent_tools: give the model `context_compress`, `context_offload` and
            `context_query`; without them only the harness manages the window.
        show_ids: prefix message contents with their ids (``[m7]``) so the
            model can name them.
    """

    budget: int = 12_000
    trigger: float = 0.92
    target: float = 0.60
    result_limit: int = 1_500
    store: ContextStore | None = None
    agent_tools: bool = True
    show_ids: bool = True

    def __post_init__(self) -> None:
        if self.budget <= 0:
            raise UsageError("the context budget must be positive")
        if not 0 < self.target < self.trigger <= 1:
            raise UsageError("need 0 < target < trigger <= 1 (fractions of the budget)")
        if self.result_limit < 16:
            raise UsageError("result_limit must be at least 16 tokens")


State = Literal["live", "offloaded", "summary", "folded"]


@dataclass(slots=True)
class _Entry:
    message: Message
    text: str  # what the model sees of the content (cut for large results)
    tokens: int
    pinned: bool = False
    state: State = "live"
    marker: str = ""
    covers: tuple[str, ...] = field(default_factory=tuple)


class ContextWindow:
    """One run's window over its messages, and the context tools bound to it."""

    def __init__(
        self,
        policy: ContextPolicy,
        store: ContextStore,
        count: Callable[[str], int],
        *,
        run_id: str | None = None,
    ) -> None:
        self.policy = policy
        self.store = store.with_namespace(run_id or f"run-{uuid.uuid4().hex[:12]}")
        self._count = count
        self._entries: list[_Entry] = []
        self._index: dict[str, _Entry] = {}
        self.live_tokens = 0
        self.marker_tokens = 0
        self.last_tokens = 0
        self._run_cache: list[tuple[int, int, str]] | None = []
        self._view: list[Message] | None = []
        self.offloaded_by_harness = 0
        self.offloaded_by_agent = 0
        self.queries = 0

    # --- adding and viewing ---------------------------------------------------------

    def add(self, message: Message) -> None:
        text = message.content or ""
        pinned = len(self._entries) < 2 and message.role in ("system", "user")
        if message.role == "tool" and self._count(text) > self.policy.result_limit:
            text = self._store_large_result(message, text)
        entry = _Entry(message, text, 0, pinned=pinned)
        entry.tokens = self._tokens_of(entry)
        self._entries.append(entry)
        self._index[message.id] = entry
        self.live_tokens += entry.tokens
        self.last_tokens = entry.tokens
        if self._view is not None:
            self._view.append(self._render(entry))

    def _prefix(self, message: Message) -> str:
        return f"[{message.id}] " if self.policy.show_ids and message.role != "system" else ""

    def _tokens_of(self, entry: _Entry) -> int:
        message = entry.message
        if entry.state == "summary":
            return self._count(entry.marker) + _ROLE_OVERHEAD
        calls = "".join(c.name + c.arguments for c in message.tool_calls)
        return self._count(self._prefix(message) + entry.text + calls) + _ROLE_OVERHEAD

    def _store_large_result(self, message: Message, text: str) -> str:
        self.store.put(message.id, text, kind="tool_result", tags=[message.name or "tool"])
        limit_chars = self.policy.result_limit * 3  # about 3-4 characters a token
        head, tail = text[: limit_chars * 2 // 3], text[-(limit_chars // 3) :]
        cut = len(text) - len(head) - len(tail)
        return (
            f"{head}\n[... {cut:,} characters cut; the whole result is stored as {message.id}: "
            f"context_query('{message.id}') returns it ...]\n{tail}"
        )

    def _runs(self) -> list[tuple[int, int, str]]:
        """Runs of consecutive offloaded entries: (first, last, marker), cached."""
        if self._run_cache is not None:
            return self._run_cache
        runs: list[tuple[int, int, str]] = []
        start: int | None = None
        for position, entry in enumerate([*self._entries, None]):
            moved = entry is not None and entry.state == "offloaded"
            if moved and start is None:
                start = position
            elif not moved and start is not None:
                runs.append((start, position - 1, self._run_marker(start, position - 1)))
                start = None
        self._run_cache = runs
        self.marker_tokens = sum(self._count(m) + _ROLE_OVERHEAD for _, _, m in runs)
        return runs

    def _run_marker(self, first: int, last: int) -> str:
        entries = self._entries[first : last + 1]
        moved = sum(e.tokens for e in entries)
        tags = sorted({t for e in entries for t in e.covers})
        tag_text = f"; tags: {', '.join(tags)}" if tags else ""
        if first == last:
            message = entries[0].message
            what = f"{message.role} message" + (f" from {message.name}" if message.name else "")
            return (
                f"[{message.id}: {what} moved to the store ({moved:,} tokens{tag_text}); "
                f"context_query('{message.id}') brings it back]"
            )
        span = f"{entries[0].message.id}-{entries[-1].message.id}"
        return (
            f"[{span}: {len(entries)} messages moved to the store ({moved:,} tokens{tag_text}); "
            "context_query with an id or a description brings one back]"
        )

    @property
    def total(self) -> int:
        """Tokens of the window as the next request would carry it."""
        self._runs()
        return self.live_tokens + self.marker_tokens

    def messages(self) -> list[Message]:
        """The window as the next request carries it.

        Kept between rounds and extended as messages arrive; rebuilt only after
        something left the window, so a round costs the same at any length.
        """
        if self._view is None:
            self._view = self._build()
        return list(self._view)

    def _render(self, entry: _Entry) -> Message:
        message = entry.message
        shown = self._prefix(message) + entry.text if entry.text else message.content
        return replace(message, content=shown)

    def _build(self) -> list[Message]:
        runs = {first: (last, marker) for first, last, marker in self._runs()}
        out: list[Message] = []
        position = 0
        while position < len(self._entries):
            if position in runs:
                last, marker = runs[position]
                out.append(Message("user", marker, id=self._entries[position].message.id))
                position = last + 1
                continue
            entry = self._entries[position]
            position += 1
            if entry.state == "folded":
                continue
            message = entry.message
            if entry.state == "summary":
                out.append(Message("user", entry.marker, id=message.id))
                continue
            out.append(self._render(entry))
        return out

    # --- what may leave the window --------------------------------------------------

    def _latest_turn_start(self) -> int:
        for i in range(len(self._entries) - 1, -1, -1):
            if self._entries[i].message.role == "assistant":
                return i
        return len(self._entries)

    def _movable(self, entry: _Entry, position: int) -> str | None:
        """Why `entry` cannot leave the window, or None if it can."""
        if entry.pinned:
            return "the system prompt and the task stay in the window"
        if position >= self._latest_turn_start():
            return "the latest turn stays in the window"
        if entry.state != "live":
            return "it is already out of the window"
        return None

    def _move(self, entry: _Entry, tags: Sequence[str], by: str) -> None:
        message = entry.message
        full = message.content or ""
        calls = "".join(f"\n{c.name}({c.arguments})" for c in message.tool_calls)
        if full or calls:
            self.store.put(message.id, full + calls, kind=message.role, tags=[*tags, by])
        entry.covers = tuple(tags)
        entry.state = "offloaded"
        self.live_tokens -= entry.tokens
        self._run_cache = None
        self._view = None

    def _move_groups(
        self, chosen: list[tuple[int, _Entry]], tags: Sequence[str], by: str
    ) -> list[str]:
        moved = []
        for _, entry in self._complete_groups(chosen):
            if entry.state == "live":
                self._move(entry, tags, by)
                moved.append(entry.message.id)
        return moved

    def enforce(self, fixed_tokens: int) -> list[str]:
        """Make room if the window would pass the trigger: offload oldest first.

        `fixed_tokens` is what every request carries besides the messages (tool
        schemas). A call and its results leave together. Returns the ids moved.
        """
        budget = self.policy.budget
        if self.total + fixed_tokens <= self.policy.trigger * budget:
            return []
        goal = self.policy.target * budget
        moved: list[str] = []
        for position, entry in enumerate(self._entries):
            if self.total + fixed_tokens <= goal:
                break
            if self._movable(entry, position) is None:
                moved += self._move_groups([(position, entry)], (), "harness")
        self.offloaded_by_harness += len(moved)
        return moved

    # --- the agent's tools ----------------------------------------------------------

    def _resolve(self, ids: Sequence[str]) -> list[tuple[int, _Entry]]:
        if not ids:
            raise ModelRetry("span_ids is empty: name the message ids to move, e.g. ['m4', 'm5']")
        found: list[tuple[int, _Entry]] = []
        positions = {e.message.id: i for i, e in enumerate(self._entries)}
        for item in ids:
            if item not in positions:
                known = ", ".join(e.message.id for e in self._entries[-5:])
                raise ModelRetry(f"no message {item!r} in this run (the latest are {known})")
            position = positions[item]
            entry = self._entries[position]
            why = self._movable(entry, position)
            if why is not None:
                raise ModelRetry(f"{item} cannot be moved: {why}")
            found.append((position, entry))
        return found

    def _complete_groups(self, chosen: list[tuple[int, _Entry]]) -> list[tuple[int, _Entry]]:
        """Add the results of chosen calls and the calls of chosen results.

        A call and its result leave the window together, or the conversation
        would no longer be valid on the wire.
        """
        owner: dict[str, int] = {}
        for position, entry in enumerate(self._entries):
            for call in entry.message.tool_calls:
                owner[call.id] = position
        results: dict[int, list[int]] = {}
        for position, entry in enumerate(self._entries):
            caller = owner.get(entry.message.tool_call_id or "")
            if entry.message.role == "tool" and caller is not None:
                results.setdefault(caller, []).append(position)
        picked = {position for position, _ in chosen}
        todo = list(picked)
        while todo:
            position = todo.pop()
            message = self._entries[position].message
            caller = owner.get(message.tool_call_id or "") if message.role == "tool" else None
            related = [*results.get(position, []), *([caller] if caller is not None else [])]
            for other in related:
                entry = self._entries[other]
                free = other not in picked and entry.state != "folded"
                if free and self._movable(entry, other) is None:
                    picked.add(other)
                    todo.append(other)
        return [(p, self._entries[p]) for p in sorted(picked)]

    def offload(self, span_ids: Sequence[str], tags: Sequence[str] = ()) -> str:
        before = self.total
        moved = self._move_groups(self._resolve(span_ids), tags, "agent")
        self.offloaded_by_agent += len(moved)
        return (
            f"moved {', '.join(moved)} to the store; the window is "
            f"{before - self.total:,} tokens smaller"
        )

    def compress(self, span_ids: Sequence[str], summary: str) -> str:
        if not summary.strip():
            raise ModelRetry("summary is empty: write what the span concluded and what is open")
        chosen = self._complete_groups(self._resolve(span_ids))
        positions = [p for p, _ in chosen]
        if positions != list(range(positions[0], positions[-1] + 1)):
            raise ModelRetry(
                "span_ids must be one contiguous span (with each call and its result); "
                f"got {', '.join(e.message.id for _, e in chosen)}"
            )
        before = self.total
        for _, entry in chosen:
            self._move(entry, ("compressed",), "agent")
            entry.state = "folded"
        first = chosen[0][1]
        covered = [e.message.id for _, e in chosen]
        span = covered[0] if len(covered) == 1 else f"{covered[0]}-{covered[-1]}"
        first.state = "summary"
        first.marker = (
            f"[summary of {span}; the originals are in the store, context_query brings them "
            f"back] {summary.strip()}"
        )
        first.tokens = self._tokens_of(first)
        self.live_tokens += first.tokens
        self.offloaded_by_agent += len(chosen)
        return f"compressed {span}; the window is {before - self.total:,} tokens smaller"

    def query(self, query: str, top_k: int = 3) -> list[dict[str, Any]]:
        self.queries += 1
        top_k = max(1, min(top_k, 20))
        exact = self.store.get(query.strip())
        if exact is not None:
            return [{"id": query.strip(), "text": exact.text, "tags": list(exact.tags)}]
        return [
            {"id": hit.item_id, "text": hit.text, "tags": list(hit.tags)}
            for hit in self.store.query(query, top_k)
        ]

    def tools(self) -> list[Tool]:
        """The context tools, bound to this window."""
        ids = {
            "type": "array",
            "items": {"type": "string"},
            "description": "Message ids, e.g. ['m4', 'm5']",
        }
        return [
            Tool.from_schema(
                "context_compress",
                "Replace a span of messages with your summary; the span stays retrievable in "
                "full. Use when a subtask is done and only its conclusion still matters.",
                {
                    "type": "object",
                    "properties": {
                        "span_ids": ids,
                        "summary": {
                            "type": "string",
                            "description": "Conclusions and open questions of the span",
                        },
                    },
                    "required": ["span_ids", "summary"],
                },
                self.compress,
            ),
            Tool.from_schema(
                "context_offload",
                "Move messages out of the context into the store, leaving a marker. Use for "
                "tool output you have finished with.",
                {
                    "type": "object",
                    "properties": {
                        "span_ids": ids,
                        "tags": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "Retrieval keys, e.g. file paths or names",
                        },
                    },
                    "required": ["span_ids"],
                },
                self.offload,
            ),
            Tool.from_schema(
                "context_query",
                "Bring back stored messages matching a description, or one id, with their ids.",
                {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What you need, or an id"},
                        "top_k": {"type": "integer", "default": 3, "description": "Most items"},
                    },
                    "required": ["query"],
                },
                self.query,
            ),
        ]
