"""MCPClient against servers nobody here wrote, driven end to end by scripted models.

`mcp-server-time`, `mcp-server-git` and `mcp-server-sqlite` from PyPI, and the npm
reference server `@modelcontextprotocol/server-everything` through npx, in the json
and code conventions: their calls go through the dispatcher and are recorded as any.
"""

from __future__ import annotations

import ast
import json
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from client_helpers import PYTHON, everything_server, misbehaving, sqlite_server, time_server

from tooluse import Agent, Limits, RunResult, Toolbox, tool
from tooluse.mcp import MCPClient, combine
from tooluse.models import ScriptedModel


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


def fenced(code: str) -> dict[str, str]:
    return {"content": f"```python\n{code}\n```"}


def run(tools: Toolbox, replies: list[dict[str, Any]], convention: str = "json") -> RunResult:
    with Agent(
        ScriptedModel(replies), tools, convention=convention, limits=Limits(script_timeout=60)
    ) as agent:
        return agent.run("task")


@pytest.fixture(scope="module")
def time_client() -> Iterator[MCPClient]:
    with MCPClient.stdio(time_server()) as client:
        yield client


# --- mcp-server-time ---------------------------------------------------------------


def test_time_server_tools_keep_their_schemas(time_client: MCPClient) -> None:
    box = time_client.toolbox()
    assert box.names == ["get_current_time", "convert_time"]
    now = box.get("get_current_time")
    assert now is not None
    assert now.parameters["required"] == ["timezone"]
    assert now.returns is not None and "datetime" in now.returns["properties"]
    assert time_client.refused == {}


def test_time_server_stub_returns_a_typed_dict(time_client: MCPClient) -> None:
    stub = time_client.toolbox().stub_module()
    ast.parse(stub)
    assert "def get_current_time(timezone: str) -> GetCurrentTimeResult:" in stub
    assert "class GetCurrentTimeResult(TypedDict):" in stub
    assert "    day_of_week: str" in stub


def test_time_server_in_the_json_convention(time_client: MCPClient) -> None:
    result = run(
        time_client.toolbox(),
        [call("get_current_time", timezone="Asia/Tokyo"), {"content": "It is late in Tokyo."}],
    )
    assert result.status == "completed"
    (record,) = result.calls
    assert record.ok and record.source == "json"
    assert record.result["timezone"] == "Asia/Tokyo"
    assert record.result["datetime"].endswith("+09:00")
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert json.loads(tool_message.content)["timezone"] == "Asia/Tokyo"


def test_time_server_in_the_code_convention_indexes_into_results(time_client: MCPClient) -> None:
    script = (
        "import tools\n"
        "r = tools.convert_time(source_timezone='Europe/London', time='12:00', "
        "target_timezone='Asia/Tokyo')\n"
        "print(r['target']['datetime'][11:16], r['time_difference'])\n"
    )
    result = run(time_client.toolbox(), [fenced(script), {"content": "done"}], "code")
    assert result.status == "completed"
    (script_record,) = result.scripts
    assert script_record.status == "ok", script_record.error
    hour, difference = script_record.stdout.split()
    assert hour in {"20:00", "21:00"} and difference in {"+8.0h", "+9.0h"}  # with or without DST
    (record,) = result.calls
    assert record.source == "script" and record.name == "convert_time"


async def test_async_client_and_run() -> None:
    async with MCPClient.stdio(time_server()) as client:
        agent = Agent(
            ScriptedModel([call("get_current_time", timezone="UTC"), {"content": "ok"}]),
            client.toolbox(),
        )
        async with agent:
            result = await agent.arun("task")
    assert result.status == "completed"
    assert result.calls[0].result["timezone"] == "UTC"


# --- mcp-server-git, over a repository the test makes ------------------------------------


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=Ada", "-c", "user.email=ada@example.org", *args],
            cwd=repo,
            check=True,
            capture_output=True,
        )

    git("init", "-q", "-b", "main")
    (repo / "notes.txt").write_text("first\n")
    git("add", "notes.txt")
    git("commit", "-q", "-m", "Add the notes")
    (repo / "notes.txt").write_text("first\nsecond\n")
    return repo


def test_git_server_in_both_conventions(repository: Path) -> None:
    command = [PYTHON, "-m", "mcp_server_git", "--repository", str(repository)]
    with MCPClient.stdio(command) as client:
        box = client.toolbox()
        log = run(box, [call("git_log", repo_path=str(repository)), {"content": "one commit"}])
        assert log.status == "completed"
        assert "Add the notes" in log.calls[0].result
        script = f"import tools\nprint(tools.git_diff_unstaged(repo_path={str(repository)!r}))\n"
        diff = run(box, [fenced(script), {"content": "one line added"}], "code")
    assert diff.status == "completed"
    assert "+second" in diff.scripts[0].stdout
    status = box.get("git_status")
    reset = box.get("git_reset")
    assert status is not None and status.side_effects is False
    assert reset is not None and reset.side_effects is True
    assert reset.annotations["destructiveHint"] is True


# --- mcp-server-sqlite, over a database the test makes ----------------------------------


def test_sqlite_server_in_both_conventions(tmp_path: Path) -> None:
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE fruit (name TEXT, price REAL)")
        con.executemany("INSERT INTO fruit VALUES (?, ?)", [("apple", 0.5), ("fig", 2.0)])
    with MCPClient.stdio(sqlite_server(db)) as client:
        box = client.toolbox()
        tables = run(box, [call("list_tables"), {"content": "one table"}])
        assert "fruit" in tables.calls[0].result
        script = (
            "import tools\n"
            "tools.write_query(query=\"INSERT INTO fruit VALUES ('kiwi', 1.25)\")\n"
            "print(tools.read_query(query='SELECT name FROM fruit ORDER BY price'))\n"
        )
        result = run(box, [fenced(script), {"content": "three fruits"}], "code")
    assert result.status == "completed"
    assert [c.name for c in result.calls] == ["write_query", "read_query"]
    stdout = result.scripts[0].stdout
    assert stdout.index("apple") < stdout.index("kiwi") < stdout.index("fig")
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM fruit").fetchone() == (3,)


# --- the npm reference server, through npx ----------------------------------------------


@pytest.mark.npm
def test_everything_server_through_npx() -> None:
    with MCPClient.stdio(everything_server()) as client:
        box = client.toolbox()
        assert {"echo", "get-sum", "get-structured-content"} <= set(box.names)
        summed = run(box, [call("get-sum", a=2, b=40), {"content": "42"}])
        assert summed.calls[0].result == "The sum of 2 and 40 is 42."
        script = (
            "import tools\n"
            "weather = tools.get_structured_content(location='Chicago')\n"
            "print(sorted(weather))\n"
        )
        structured = run(box, [fenced(script), {"content": "done"}], "code")
    assert structured.status == "completed", structured.scripts[0].error
    assert structured.calls[0].name == "get-structured-content"
    assert isinstance(structured.calls[0].result, dict)
    assert "temperature" in structured.scripts[0].stdout


# --- several servers and local tools in one toolbox -------------------------------------


def test_clashing_names_get_the_server_name_in_front(time_client: MCPClient) -> None:
    @tool
    def echo(text: str) -> str:
        """Say it back, locally."""
        return text

    with (
        MCPClient.stdio(misbehaving(), name="odd") as odd,
        MCPClient.stdio(time_server(), name="clock") as clock,
    ):
        box = combine(Toolbox([echo]), odd, time_client, clock)
        assert "echo" in box and "odd_echo" in box and "add" in box
        assert {"mcp_time_get_current_time", "clock_get_current_time"} <= set(box.names)
        result = run(
            box,
            [
                {
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": "echo", "arguments": '{"text": "here"}'},
                        },
                        {
                            "id": "b",
                            "type": "function",
                            "function": {"name": "odd_echo", "arguments": '{"text": "there"}'},
                        },
                    ]
                },
                {"content": "both"},
            ],
        )
    assert [c.result for c in result.calls] == ["here", "there"]
