"""``tooluse run --mcp`` and ``tooluse tools show --mcp``, run as real processes."""

from __future__ import annotations

import ast
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from client_helpers import MISBEHAVING, ROOT, HttpServer

pytestmark = pytest.mark.usefixtures("no_children_left")

TOOLUSE = Path(sys.executable).parent / "tooluse"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
TIME = "python -m mcp_server_time"


def tooluse(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLUSE), *args],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_tools_show_renders_a_servers_tools_as_stubs() -> None:
    proc = tooluse("tools", "show", "--mcp", TIME, "--format", "stubs")
    assert proc.returncode == 0, proc.stderr
    ast.parse(proc.stdout)
    assert "def get_current_time(timezone: str) -> GetCurrentTimeResult:" in proc.stdout


def test_tools_show_renders_a_servers_tools_for_anthropic_and_warns_of_refused_ones() -> None:
    server = f"{shlex.quote(sys.executable)} {shlex.quote(MISBEHAVING)}"
    proc = tooluse("tools", "show", "--mcp", server, "--format", "anthropic")
    assert proc.returncode == 0, proc.stderr
    tools = json.loads(proc.stdout)
    assert [t["name"] for t in tools][:2] == ["add", "echo"]
    assert tools[0]["input_schema"]["required"] == ["a", "b"]
    warnings = proc.stderr.splitlines()
    assert len(warnings) == 2 and all(w.startswith("warning: MCP server ") for w in warnings)
    assert "tool 'bad_schema': its inputSchema is not a valid JSON Schema" in warnings[0]
    assert warnings[0].endswith("the tool is left out")


def test_run_combines_servers_over_stdio_and_http_with_local_tools(
    tmp_path: Path, http_server: HttpServer
) -> None:
    replies = [
        {
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "get_current_time", "arguments": '{"timezone": "UTC"}'},
                },
                {
                    "id": "b",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 40, "b": 2}'},
                },
                {
                    "id": "c",
                    "type": "function",
                    "function": {
                        "name": "get_exchange_rate",
                        "arguments": '{"base": "USD", "target": "EUR"}',
                    },
                },
            ]
        },
        {"content": "done"},
    ]
    script = tmp_path / "model.jsonl"
    script.write_text("".join(json.dumps(r) + "\n" for r in replies))
    proc = tooluse(
        "run", "What time is it?",
        "--mcp", TIME,
        "--mcp", http_server.url,
        "--tools", "examples.seed_tools:toolbox",
        "--model", f"scripted:{script}",
        "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    calls = json.loads(proc.stdout)["calls"]
    assert [c["error"] for c in calls] == [None, None, None]
    assert calls[0]["result"]["timezone"] == "UTC"
    assert calls[1]["result"] == {"sum": 42, "terms": [40, 2]}


def test_a_server_that_does_not_start_is_one_error_line_naming_it() -> None:
    proc = tooluse("tools", "show", "--mcp", "/nonexistent/server --port 1")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "`/nonexistent/server --port 1` did not start" in lines[0]


def test_run_needs_some_tools() -> None:
    proc = tooluse("run", "task", "--model", "scripted:examples/hotel.jsonl")
    assert proc.returncode == 2
    assert "--tools MODULE:ATTR, --mcp CMD|URL, or both" in proc.stderr


ODD = shlex.join([sys.executable, str(Path(MISBEHAVING).with_name("odd_servers.py"))])


def echo_model(tmp_path: Path, name: str = "echo") -> str:
    replies = [
        {
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": name, "arguments": '{"text": "hello"}'},
                }
            ]
        },
        {"content": "done"},
    ]
    script = tmp_path / "model.jsonl"
    script.write_text("".join(json.dumps(r) + "\n" for r in replies))
    return f"scripted:{script}"


def test_a_banner_on_stdout_is_one_warning_line_quoting_it_and_the_run_works(
    tmp_path: Path,
) -> None:
    model = echo_model(tmp_path)
    proc = tooluse("run", "task", "--mcp", f"{ODD} banner", "--model", model, "--json")
    assert proc.returncode == 0, proc.stderr
    assert [c["result"] for c in json.loads(proc.stdout)["calls"]] == ["hello"]
    (line,) = proc.stderr.splitlines()
    assert line.startswith("warning: the MCP server `")
    assert "odd_servers.py banner` wrote a line to stdout that is not JSON-RPC" in line
    assert "'Odd MCP server 1.0 starting, press Ctrl-C to stop'" in line


def test_text_on_stdout_during_a_call_is_one_warning_line_and_the_call_works(
    tmp_path: Path,
) -> None:
    model = echo_model(tmp_path, "chat")
    proc = tooluse("run", "task", "--mcp", f"{ODD} banner", "--model", model, "--json")
    assert proc.returncode == 0, proc.stderr
    assert [c["result"] for c in json.loads(proc.stdout)["calls"]] == ["hello"]
    # Once per connection: the banner is quoted, the later line is not another warning.
    (line,) = proc.stderr.splitlines()
    assert "'Odd MCP server 1.0 starting, press Ctrl-C to stop'" in line


def test_a_server_that_writes_garbage_and_exits_is_one_error_line_quoting_it(
    tmp_path: Path,
) -> None:
    model = echo_model(tmp_path)
    proc = tooluse("run", "task", "--mcp", f"{ODD} garbage", "--model", model, "--json")
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: the MCP server `") and "odd_servers.py garbage`" in line
    assert "does not speak MCP: it wrote a line to stdout that is not JSON-RPC: " in line
    assert "'Usage: odd-server [--port N]', and ended before the handshake" in line
    assert "closed the connection" not in line
    assert line.endswith("its stderr ends: odd-server: giving up")
