"""What the run list and the run page make of traces written by the CLI's ask mode and by
`tooluse mcp serve`, and of every kind of event: real processes write the traces."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient

from tooluse import events as ev
from tooluse.view import Catalog, create_app

from ._traces import json_run

ROOT = Path(__file__).resolve().parents[2]
TOOLUSE = Path(sys.executable).parent / "tooluse"
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}", "COLUMNS": "200"}
PORT = 8765

TOOLS = '''
from pathlib import Path
from tooluse import Toolbox, tool

@tool(side_effects=True)
def send_money(recipient: str, amount: float) -> str:
    """Send money to an IBAN."""
    with Path("ledger.txt").open("a") as ledger:
        ledger.write(f"{recipient} {amount:g}\\n")
    return "sent"

@tool
def balance() -> float:
    """The account's balance."""
    return 1000.0

toolbox = Toolbox([send_money, balance])
'''


def reply(call_id: str, name: str, arguments: dict[str, object]) -> str:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return json.dumps({"tool_calls": [{"id": call_id, "type": "function", "function": function}]})


def client(*paths: Path) -> TestClient:
    return TestClient(
        create_app(Catalog.of(list(paths)), port=PORT), base_url=f"http://127.0.0.1:{PORT}"
    )


def run_ids(html: str) -> list[str]:
    return re.findall(r'href="/run/([0-9a-f]+-\d+)"', html)


def rows(html: str) -> list[str]:
    return re.findall(r"<tr>(.*?)</tr>", html.split("<tbody>", 1)[1].split("</tbody>", 1)[0], re.S)


def ask_trace(folder: Path) -> Path:
    """A `tooluse run --approve ask` run that pauses twice and is resumed twice, in one
    process: the user answers yes to each of two payments."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "paytools.py").write_text(TOOLS)
    model = [
        reply("c1", "balance", {}),
        reply("c2", "send_money", {"recipient": "DE89370400440532013000", "amount": 400}),
        reply("c3", "send_money", {"recipient": "FR7630006000011234567890189", "amount": 500}),
        json.dumps({"content": "Paid both."}),
    ]
    (folder / "model.jsonl").write_text("\n".join(model) + "\n")
    trace = folder / "ask.jsonl"
    done = subprocess.run(
        [
            *(str(TOOLUSE), "run", "pay the rent and the fees", "--tools", "paytools:toolbox"),
            *("--model", "scripted:model.jsonl", "--approve", "ask", "--trace", str(trace)),
        ],
        input="y\ny\n",
        cwd=folder,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("run it?") == 2
    return trace


@pytest.fixture(scope="module")
def ask(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ask_trace(tmp_path_factory.mktemp("ask"))


def test_a_cli_run_paused_and_resumed_twice_is_one_row(ask: Path) -> None:
    starts = [line for line in ask.read_text().splitlines() if '"run_start"' in line]
    assert len(starts) == 3  # the run, and each resume, writes a run_start
    c = client(ask)
    index = c.get("/").text
    [row] = rows(index)
    assert "pay the rent and the fees" in row and "completed" in row
    [run_id] = run_ids(index)
    page = c.get(f"/run/{run_id}").text
    assert page.count('class="event paused"') == 2 and page.count('class="event resumed"') == 2
    assert "Paid both." in page


def test_a_run_resumed_after_another_run_stays_its_own_row(ask: Path, tmp_path: Path) -> None:
    """Only a resume that follows its pause in the file joins it."""
    lines = ask.read_text().splitlines(keepends=True)
    first_end = next(i for i, line in enumerate(lines) if '"run_end"' in line)
    other = tmp_path / "other.jsonl"
    json_run(other)
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        "".join(lines[: first_end + 1]) + other.read_text() + "".join(lines[first_end + 1 :])
    )
    index = client(mixed).get("/").text
    statuses = [re.findall(r'class="status-([a-z_]+)"', row) for row in rows(index)]
    assert statuses == [["needs_approval"], ["completed"], ["completed"]]


def test_a_resume_read_in_two_polls_joins_its_pause(ask: Path, tmp_path: Path) -> None:
    """The file grows between the resume's run_start and its decision: one row still."""
    lines = ask.read_text().splitlines(keepends=True)
    second_start = [i for i, line in enumerate(lines) if '"run_start"' in line][1]
    growing = tmp_path / "growing.jsonl"
    growing.write_text("".join(lines[: second_start + 1]))
    c = client(growing)
    assert len(run_ids(c.get("/").text)) == 2  # the resume, until its decision is read
    with growing.open("a") as handle:
        handle.write("".join(lines[second_start + 1 :]))
    index = c.get("/").text
    [row] = rows(index)
    assert "completed" in row
    [run_id] = run_ids(index)
    assert c.get(f"/run/{run_id}").text.count('class="event run_start"') == 3


def samples(ask: Path, tmp_path: Path) -> list[dict[str, object]]:
    """A line of every event class: from real traces, and by hand for the events only
    streams give (a trace file may still hold them: a sink that writes every event)."""
    real = [json.loads(line) for line in ask.read_text().splitlines()]
    json_run(tmp_path / "json.jsonl")
    real += [json.loads(line) for line in (tmp_path / "json.jsonl").read_text().splitlines()]
    by_hand: list[dict[str, object]] = [
        {"event": "internal_error", "traceback": "Traceback: boom"},
        {"event": "scope", "tools": ["send_money"], "by": "model", "usage": {}},
        {"event": "text", "text": "Let me check", "round": 1},
        {"event": "round_end", "round": 1, "usage": None},
        {"event": "feedback", "round": 1, "text": "use a tool"},
        {
            "event": "answer_check",
            "round": 2,
            "outcome": "noted",
            "answer": "92 EUR is not enough for the 85 EUR room.",
            "note": "Check your answer: it says ..., but 92 ≥ 85.",
        },
        {"event": "call_start", "id": "c9", "name": "balance", "round": 1, "index": 0},
        {"event": "script_start", "id": "s1", "code": "print(1)", "round": 1},
        {"event": "script_output", "id": "s1", "line": "1"},
        {
            "event": "script",
            "id": "s1",
            "code": "print(1)",
            "status": "ok",
            "stdout": "1",
            "error": None,
        },
        {
            "event": "plan",
            "id": "p1",
            "round": 1,
            "code": "x = balance()",
            "ok": True,
            "steps": [{"name": "balance", "line": 1, "status": "ok"}],
            "content": "done",
        },
        {"event": "context_offload", "by": "agent", "ids": ["m1"], "round": 1},
        {"event": "context_compress", "by": "agent", "ids": ["m2"], "round": 1},
        {
            "event": "handle_stored",
            "handle": "@r1-5f1c0a",
            "call_id": "c9",
            "shape": "list of 2,000 dicts with keys sku",
            "chars": 50_033,
            "round": 1,
        },
        {
            "event": "handle_used",
            "handles": ["@r1-5f1c0a"],
            "call_id": "c10",
            "name": "balance",
            "round": 2,
        },
        {"event": "run_resumed", "decisions": ["c2"]},  # the release before wrote this
    ]
    return real + by_hand


def test_every_event_class_has_a_rendering(ask: Path, tmp_path: Path) -> None:
    lines = samples(ask, tmp_path)
    read = [ev.event_from_dict(line) for line in lines]
    every = {
        cls for cls in vars(ev).values() if isinstance(cls, type) and issubclass(cls, ev.Event)
    }
    every -= {ev.Event, ev.UnknownEvent}
    assert every <= {type(event) for event in read}  # a new event class needs a sample here
    trace = tmp_path / "all.jsonl"
    # One run: the first run_start opens it, the others would open runs of their own.
    one_run = lines[:1] + [line for line in lines[1:] if line["event"] != "run_start"]
    trace.write_text("".join(json.dumps(line) + "\n" for line in one_run))
    c = client(trace)
    [run_id] = run_ids(c.get("/").text)
    page = c.get(f"/run/{run_id}").text
    assert 'class="event other"' not in page
    for kind, count in [("paused", 2), ("resumed", 2), ("approval_decided", 3), ("scope", 1)]:
        assert page.count(f'class="event {kind}"') == count, kind
    for kind in ("plan", "call_start", "delta", "round_end", "script_output", "offload"):
        assert f'class="event {kind}"' in page, kind
    assert "&quot;event&quot;" not in page  # no event shown as its raw JSON


def test_a_trace_of_tooluse_mcp_serve_is_labelled_a_server_and_not_running(
    tmp_path: Path,
) -> None:
    from mcp import Client, StdioServerParameters

    trace = tmp_path / "served.jsonl"

    async def session() -> None:
        command = StdioServerParameters(
            command=str(TOOLUSE),
            args=["mcp", "serve", "examples.seed_tools:toolbox", "--trace", str(trace)],
            env=ENV,
            cwd=str(ROOT),
        )
        async with Client(command) as mcp_client:
            await mcp_client.call_tool("calculator", {"expression": "2 * (3 + 4)"})
            await mcp_client.call_tool("calculator", {"expression": "1 +"})
            await mcp_client.call_tool("calculator", {"expresion": "1"})

    asyncio.run(asyncio.wait_for(session(), 120))
    c = client(trace)
    index = c.get("/").text
    [row] = rows(index)
    assert "running" not in row and "incomplete" not in row
    assert "tooluse mcp serve" in row and "status-served" in row
    [run_id] = run_ids(index)
    assert "calculator" in c.get(f"/run/{run_id}").text
