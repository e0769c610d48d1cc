"""Conversations: runs that continue one another, their history kept in SQLite."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from examples.seed_tools import toolbox as seed_tools
from tooluse import Agent, Conversation, ConversationStore, Message, UsageError, tool
from tooluse.models import Model, ModelRequest, ModelResponse, ScriptedModel
from tooluse.policy import Approval


def calls(*items: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"id": f"c{i}", "function": {"name": name, "arguments": arguments}}
            for i, (name, arguments) in enumerate(items)
        ]
    }


def shown(request: ModelRequest) -> list[tuple[str, str | None]]:
    return [(m.role, m.content) for m in request.messages if m.role in ("user", "assistant")]


def test_each_turn_sees_every_earlier_turn_and_only_one_system_prompt(tmp_path: Path) -> None:
    model = ScriptedModel(
        [calls(("lookup_capital", {"country": "France"})), "Paris.", "About 2.1 million."]
    )
    agent = Agent(model, seed_tools, system_prompt="Be brief.")
    with Conversation(agent, store=tmp_path / "chat.db") as chat:
        first = chat.run("What is the capital of France?")
        second = chat.run("How many people live there?")

    assert (first.answer, second.answer) == ("Paris.", "About 2.1 million.")
    last = model.requests[-1]
    assert [m.role for m in last.messages].count("system") == 1
    assert shown(last) == [
        ("user", "What is the capital of France?"),
        ("assistant", None),
        ("assistant", "Paris."),
        ("user", "How many people live there?"),
    ]
    # The tool's result is in the history the second turn was given.
    assert any(m.role == "tool" and "Paris" in (m.content or "") for m in last.messages)


def test_a_conversation_goes_on_in_another_process(tmp_path: Path) -> None:
    store = tmp_path / "chat.db"
    model = ScriptedModel(["Noted: your name is Ada."])
    with Conversation(Agent(model, seed_tools), store=store, id="ada") as chat:
        chat.run("My name is Ada.")

    # A new process opens the same file and id, and its run is given the history.
    script = f"""
import sys
sys.path[:0] = {sys.path!r}
from examples.seed_tools import toolbox
from tooluse import Agent, Conversation
from tooluse.models import ScriptedModel
model = ScriptedModel(lambda messages: "You are " + messages[1].content.split()[-1])
with Conversation(Agent(model, toolbox), store={str(store)!r}, id="ada") as chat:
    print(chat.run("What is my name?").answer)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "You are Ada."

    with ConversationStore(store) as kept:
        turns = kept.turns("ada")
        listed = kept.conversations()
    assert [(t.seq, t.message, t.answer) for t in turns] == [
        (1, "My name is Ada.", "Noted: your name is Ada."),
        (2, "What is my name?", "You are Ada."),
    ]
    assert [(c.id, c.turns, c.last_message) for c in listed] == [("ada", 2, "What is my name?")]


# The tool is left running when the turn is cancelled, and says so.
@pytest.mark.filterwarnings("ignore:hang is still running:RuntimeWarning")
def test_a_turn_cut_while_a_call_runs_keeps_no_call_without_its_result() -> None:
    started, release = threading.Event(), threading.Event()

    @tool
    def hang(x: int) -> int:
        """Wait until released."""
        started.set()
        release.wait(60)
        return x

    model = ScriptedModel(["Hello.", calls(("hang", {"x": 1})), "Next."])

    async def main() -> Conversation:
        chat = Conversation(Agent(model, [hang]))
        await chat.arun("Hi")
        task = asyncio.create_task(chat.arun("Hang, please"))
        assert await asyncio.to_thread(started.wait, 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return chat

    try:
        chat = asyncio.run(main())
    finally:
        release.set()
    # The cancelled turn said a call that never got its result: the call is not kept,
    # the user's message is, and the next turn runs on a history a model accepts.
    assert [(m.role, m.content) for m in chat.history] == [
        ("user", "Hi"),
        ("assistant", "Hello."),
        ("user", "Hang, please"),
    ]
    assert [t.status for t in chat.turns] == ["completed", "cancelled"]
    assert chat.run("Still there?").answer == "Next."


@tool(side_effects=True)
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"sent to {to}"


def test_a_turn_paused_for_approval_is_kept_when_resumed() -> None:
    model = ScriptedModel(
        [calls(("send_email", {"to": "a@example.com", "body": "hi"})), "Sent.", "You sent one."]
    )
    agent = Agent(model, [send_email], approval=lambda request: Approval.defer())
    with Conversation(agent) as chat:
        paused = chat.run("Email Ada hi")
        assert paused.status == "needs_approval"
        assert chat.turns == []  # not ended: nothing kept yet
        ended = chat.resume(paused, {paused.pending[0].call_id: True})
        assert ended.status == "completed"
        assert [(t.message, t.answer) for t in chat.turns] == [("Email Ada hi", "Sent.")]
        chat.run("What did I send?")
        assert [t.seq for t in chat.turns] == [1, 2]


async def test_a_streamed_turn_is_kept_when_the_stream_ends() -> None:
    model = ScriptedModel(["First.", "Second."], chunk=2)
    with Conversation(Agent(model, seed_tools)) as chat:
        kinds = [event.kind async for event in chat.stream("one")]
        await chat.arun("two")
        turns = chat.turns
    assert "text" in kinds
    assert [(t.message, t.answer) for t in turns] == [("one", "First."), ("two", "Second.")]


def test_one_turn_at_a_time() -> None:
    started, release = threading.Event(), threading.Event()

    def slow(messages: Any) -> str:
        started.set()
        release.wait(60)
        return "late"

    with Conversation(Agent(ScriptedModel(slow), seed_tools)) as chat:
        first = threading.Thread(target=chat.run, args=("one",))
        first.start()
        try:
            assert started.wait(60)
            with pytest.raises(UsageError, match="one turn at a time"):
                chat.run("two")
        finally:
            release.set()
            first.join(60)
        assert [t.message for t in chat.turns] == ["one"]


def test_a_store_that_is_not_sqlite_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "not.db"
    bad.write_text("this is not a database " * 100)
    with pytest.raises(UsageError, match="cannot open the conversation store"):
        ConversationStore(bad)


def test_a_taken_id_is_refused_when_created_but_continued_by_a_conversation() -> None:
    store = ConversationStore()
    store.create("x")
    with pytest.raises(UsageError, match="exists already"):
        store.create("x")
    chat = Conversation(Agent(ScriptedModel(["ok"]), seed_tools), store=store, id="x")
    assert chat.id == "x"
    chat.run("hi")
    assert [m.role for m in store.messages("x")] == ["user", "assistant"]
    assert isinstance(store.messages("x")[0], Message)


def test_turns_appended_from_two_threads_are_numbered_once_each(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    ConversationStore(path).create("shared")
    chats = [
        Conversation(Agent(ScriptedModel([f"answer {i}"]), seed_tools), store=path, id="shared")
        for i in range(4)
    ]
    threads = [threading.Thread(target=c.run, args=(f"q{i}",)) for i, c in enumerate(chats)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    with sqlite3.connect(path) as db:
        seqs = sorted(s for (s,) in db.execute("SELECT seq FROM turns"))
    assert seqs == [1, 2, 3, 4]
    for chat in chats:
        chat.close()


def test_asyncio_cancellation_keeps_the_turn() -> None:
    class Waiting(Model):
        name = "waiting"

        def __init__(self) -> None:
            self.started = asyncio.Event()

        async def respond(self, request: ModelRequest) -> ModelResponse:
            self.started.set()
            await asyncio.sleep(3600)
            raise AssertionError("never answers")

    async def main() -> tuple[list[str], str]:
        model = Waiting()
        started = model.started
        chat = Conversation(Agent(model, seed_tools))
        task = asyncio.create_task(chat.arun("wait forever"))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return [t.status for t in chat.turns], chat.history[0].content or ""

    statuses, first = asyncio.run(main())
    assert statuses == ["cancelled"]
    assert first == "wait forever"
