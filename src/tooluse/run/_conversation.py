"""Conversations: many runs of one agent, each continuing the last, kept in SQLite.

A `Conversation` holds the history a chat needs: every message its runs said, in
order, without the system prompt (each run puts the agent's own first, so a
changed prompt or toolbox applies from the next turn on). Its `run` takes the
user's next message, runs the agent on it with the history so far
(``Agent.run(message, history=...)``), and keeps what the run added: the user's
message, the calls and their results, the answer. The history lives in a
`ConversationStore`, a SQLite file any process may open, so a chat goes on after
a restart: open the same store with the same id.

What is kept of a turn:

- a turn that ended (any status but ``needs_approval``) is kept at once, in one
  transaction, after the run ended: a crash mid-turn keeps the turns before it;
- a turn paused for approval is kept when `resume` ends it;
- a turn that stopped with calls unanswered (cancelled, an error mid-round)
  keeps its messages up to the last reply whose calls all have results, since a
  model is never shown a call without its result. The user's message is kept
  whatever happened, so the model knows it was asked.

The agent's context policy (`ContextPolicy`) applies to each run over the whole
history: a long chat is compressed or offloaded as one long run would be.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._closing import Closing
from .._exceptions import UsageError
from .._expect import Expect
from .._messages import Message
from ..policy._approval import Approval
from ._result import RunResult

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["Conversation", "ConversationInfo", "ConversationStore", "Turn"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS turns (
    conversation TEXT NOT NULL REFERENCES conversations(id),
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    status TEXT NOT NULL,
    answer TEXT,
    messages TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (conversation, seq)
);
"""


@dataclass(frozen=True, slots=True)
class Turn:
    """One run of a conversation: the user's message, how it ended, what it added."""

    seq: int
    message: str
    status: str
    answer: str | None
    messages: tuple[Message, ...]
    at: float


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    """A stored conversation, as `ConversationStore.conversations` lists it."""

    id: str
    created: float
    updated: float
    turns: int
    last_message: str | None


class ConversationStore(Closing):
    """Conversations in one SQLite file (``":memory:"`` for none on disk).

    Any thread may use a store, and processes may share its file: a turn is
    appended in one ``BEGIN IMMEDIATE`` transaction, numbered after the turns
    already there.
    """

    def __init__(self, path: str | Path = ":memory:", *, timeout: float = 30.0) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"cannot open the conversation store {self.path}: {exc}") from exc
        self._lock = threading.Lock()

    def create(self, conversation_id: str | None = None) -> str:
        """A new conversation's id (``conversation_id`` if given and not taken)."""
        chosen = conversation_id or f"c-{secrets.token_hex(6)}"
        now = time.time()
        with self._lock:
            try:
                self._db.execute(
                    "INSERT INTO conversations (id, created, updated) VALUES (?, ?, ?)",
                    (chosen, now, now),
                )
            except sqlite3.IntegrityError:
                raise UsageError(f"a conversation {chosen!r} exists already") from None
        return chosen

    def exists(self, conversation_id: str) -> bool:
        with self._lock:
            row = self._db.execute(
                "SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)
            ).fetchone()
        return row is not None

    def append(
        self, conversation_id: str, message: str, result: RunResult, added: Sequence[Message]
    ) -> Turn:
        """Keep one ended turn: ``added`` are the messages it said after the history."""
        now = time.time()
        written = json.dumps([m.to_dict() for m in added], ensure_ascii=False, default=str)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                (last,) = self._db.execute(
                    "SELECT COALESCE(MAX(seq), 0) FROM turns WHERE conversation = ?",
                    (conversation_id,),
                ).fetchone()
                self._db.execute(
                    "INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        conversation_id,
                        last + 1,
                        message,
                        result.status,
                        result.answer,
                        written,
                        now,
                    ),
                )
                self._db.execute(
                    "UPDATE conversations SET updated = ? WHERE id = ?", (now, conversation_id)
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return Turn(last + 1, message, result.status, result.answer, tuple(added), now)

    def turns(self, conversation_id: str) -> list[Turn]:
        """The conversation's turns, first first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, message, status, answer, messages, at FROM turns "
                "WHERE conversation = ? ORDER BY seq",
                (conversation_id,),
            ).fetchall()
        return [
            Turn(
                seq,
                message,
                status,
                answer,
                tuple(Message.from_dict(m) for m in json.loads(said)),
                at,
            )
            for seq, message, status, answer, said, at in rows
        ]

    def messages(self, conversation_id: str) -> list[Message]:
        """Every message of the conversation, in order: the history of its next run."""
        return [m for turn in self.turns(conversation_id) for m in turn.messages]

    def conversations(self) -> list[ConversationInfo]:
        """Every stored conversation, the one updated last first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT c.id, c.created, c.updated, COUNT(t.seq), "
                "(SELECT message FROM turns WHERE conversation = c.id ORDER BY seq DESC LIMIT 1) "
                "FROM conversations c LEFT JOIN turns t ON t.conversation = c.id "
                "GROUP BY c.id ORDER BY c.updated DESC, c.id"
            ).fetchall()
        return [ConversationInfo(*row) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()


class Conversation(Closing):
    """Runs of ``agent`` that continue one another, their history kept in ``store``.

    Args:
        agent: answers each turn.
        store: a `ConversationStore`, or the path of its SQLite file; by default
            one in memory, gone with the process.
        id: the conversation to continue, or to start under this id; by default
            a new one.

    One turn runs at a time: starting another while one runs is a `UsageError`.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        store: ConversationStore | str | Path | None = None,
        id: str | None = None,
    ) -> None:
        self.agent = agent
        self._owns_store = not isinstance(store, ConversationStore)
        self.store = (
            store
            if isinstance(store, ConversationStore)
            else ConversationStore(store or ":memory:")
        )
        if id is not None and self.store.exists(id):
            self.id = id
        else:
            self.id = self.store.create(id)
        self._busy = threading.Lock()

    @property
    def history(self) -> list[Message]:
        """What the next run is given as ``history``: every message so far."""
        return self.store.messages(self.id)

    @property
    def turns(self) -> list[Turn]:
        return self.store.turns(self.id)

    def run(
        self,
        message: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        deps: Any = None,
        output_type: Any = None,
    ) -> RunResult:
        """The agent's run on ``message``, continuing the conversation (see `Agent.run`).

        `output_type` sets this turn's typed output, in place of the agent's.
        """
        with self._turn() as history:
            result = self.agent.run(
                message, expect=expect, history=history, deps=deps, output_type=output_type
            )
            self.keep(message, history, result)
        return result

    async def arun(
        self,
        message: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        deps: Any = None,
        output_type: Any = None,
    ) -> RunResult:
        """`run`, for async code."""
        with self._turn() as history:
            try:
                result = await self.agent.arun(
                    message, expect=expect, history=history, deps=deps, output_type=output_type
                )
            except BaseException as exc:
                ended = getattr(exc, "result", None)
                if isinstance(ended, RunResult):
                    self.keep(message, history, ended)
                raise
            self.keep(message, history, result)
        return result

    async def stream(
        self,
        message: str,
        *,
        expect: Expect | Sequence[Expect] = (),
        deps: Any = None,
        output_type: Any = None,
    ) -> AsyncIterator[Any]:
        """The events of the agent's run on ``message`` (see `Agent.stream`); the turn
        is kept once the stream ends, however it ends."""
        with self._turn() as history:
            events = self.agent.stream(
                message, expect=expect, history=history, deps=deps, output_type=output_type
            )
            try:
                async for event in events:
                    yield event
            finally:
                self.keep(message, history, await events.aclose())

    def resume(
        self,
        result: RunResult,
        decisions: Mapping[str, bool | Approval | Mapping[str, Any]],
        *,
        deps: Any = None,
        output_type: Any = None,
    ) -> RunResult:
        """Continue a turn paused for approval (see `Agent.resume`), and keep it.

        A turn with its own `output_type` is resumed with the same one.
        """
        with self._turn() as history:
            ended = self.agent.resume(result, decisions, deps=deps, output_type=output_type)
            task = result.paused.task if result.paused is not None else ""
            self.keep(task, history, ended)
        return ended

    def keep(self, message: str, history: Sequence[Message], result: RunResult) -> Turn | None:
        """Keep a turn that ended (None for one paused for approval: resume keeps it)."""
        if result.status == "needs_approval":
            return None
        said = [m for m in result.messages if m.role != "system"]
        added = _answered(said[len(history) :]) or [Message("user", message)]
        return self.store.append(self.id, message, result, added)

    def close(self) -> None:
        """Close the store if the conversation opened it."""
        if self._owns_store:
            self.store.close()

    @contextlib.contextmanager
    def _turn(self) -> Iterator[list[Message]]:
        """One turn at a time: held while a turn runs; gives the history it continues."""
        if not self._busy.acquire(blocking=False):
            raise UsageError("a turn of this conversation is still running: one turn at a time")
        try:
            yield self.history
        finally:
            self._busy.release()


def _answered(messages: Sequence[Message]) -> list[Message]:
    """``messages`` up to the last point where every call made has its result."""
    open_calls: set[str] = set()
    closed_at = 0
    for index, message in enumerate(messages, 1):
        open_calls.update(call.id for call in message.tool_calls)
        if message.role == "tool" and message.tool_call_id is not None:
            open_calls.discard(message.tool_call_id)
        if not open_calls:
            closed_at = index
    return list(messages[:closed_at])
