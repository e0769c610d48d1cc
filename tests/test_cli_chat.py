"""`tooluse chat`: a terminal conversation, each turn kept in the store as it ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tooluse import ConversationStore

ROOT = Path(__file__).resolve().parent.parent
TOOLUSE = Path(sys.executable).parent / "tooluse"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def chat(*args: str, typed: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLUSE), "chat", "--tools", "examples.seed_tools:toolbox", *args],
        input=typed,
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def replies(path: Path, *items: object) -> str:
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return f"scripted:{path}"


def test_each_line_is_a_turn_and_the_conversation_is_kept(tmp_path: Path) -> None:
    store = tmp_path / "chat.db"
    call = {
        "tool_calls": [
            {
                "id": "a",
                "type": "function",
                "function": {"name": "lookup_capital", "arguments": '{"country": "France"}'},
            }
        ]
    }
    model = replies(tmp_path / "m.jsonl", call, {"content": "Paris."}, {"content": "Still Paris."})
    done = chat(
        "--model",
        model,
        "--store",
        str(store),
        "--id",
        "trip",
        typed="Capital of France?\n\nAre you sure?\n/exit\nnever read\n",
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Paris.", "Still Paris."]
    assert "conversation trip" in done.stderr
    assert "lookup_capital" in done.stderr  # the call, drawn as it ran
    with ConversationStore(store) as kept:
        turns = kept.turns("trip")
    assert [(t.message, t.answer) for t in turns] == [
        ("Capital of France?", "Paris."),
        ("Are you sure?", "Still Paris."),
    ]


def test_id_continues_a_conversation_and_list_shows_it(tmp_path: Path) -> None:
    store = tmp_path / "chat.db"
    first = chat(
        "--model",
        replies(tmp_path / "1.jsonl", {"content": "Hello, Ada."}),
        "--store",
        str(store),
        "--id",
        "ada",
        typed="I am Ada.\n",
    )
    assert first.returncode == 0, first.stderr
    # The second session's model is shown the first session's turn.
    script = tmp_path / "2.jsonl"
    second = chat(
        "--model",
        replies(script, {"content": "You told me: Ada."}),
        "--store",
        str(store),
        "--id",
        "ada",
        "--trace",
        str(tmp_path / "t.jsonl"),
        typed="Who am I?\n",
    )
    assert second.returncode == 0, second.stderr
    requests = [
        json.loads(line)
        for line in (tmp_path / "t.jsonl").read_text().splitlines()
        if json.loads(line)["event"] == "model_request"
    ]
    # Its one request held the earlier turn: a user message, the answer, the new message
    # (no system prompt was given).
    assert [r["messages"] for r in requests] == [3]
    listed = chat("--store", str(store), "--list", typed="")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:3] == ["ada", "2", "turns"]
    assert "Who am I?" in listed.stdout
    with ConversationStore(store) as kept:
        history = kept.messages("ada")
    assert [(m.role, m.content) for m in history] == [
        ("user", "I am Ada."),
        ("assistant", "Hello, Ada."),
        ("user", "Who am I?"),
        ("assistant", "You told me: Ada."),
    ]


def test_a_store_that_cannot_be_read_is_one_error_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_text("not sqlite " * 200)
    done = chat("--store", str(bad), "--list", typed="")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot open the conversation store" in lines[0]
