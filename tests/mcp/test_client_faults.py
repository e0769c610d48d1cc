"""Faults and bad input from MCP servers: each ends with a clear error, nothing is lost,
and no server process is left behind (checked on the process table, not trusted)."""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx2
import pytest
from client_helpers import EverythingHttp, HttpServer, alive, misbehaving, wait_for

from tooluse import Agent, RunResult, Toolbox
from tooluse.mcp import MCPClient, MCPStartError
from tooluse.mcp._client import _SessionWatch
from tooluse.models import ScriptedModel

pytestmark = pytest.mark.usefixtures("no_children_left")


def call(name: str, call_id: str = "c1", **arguments: Any) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


def run(tools: Toolbox, replies: list[dict[str, Any]], **options: Any) -> RunResult:
    with Agent(ScriptedModel(replies), tools, **options) as agent:
        return agent.run("task")


def test_a_command_that_does_not_exist_is_named() -> None:
    with pytest.raises(MCPStartError) as caught:
        MCPClient.stdio(["/nonexistent/mcp-server", "--flag"]).open()
    message = str(caught.value)
    assert "`/nonexistent/mcp-server --flag` did not start" in message
    assert "No such file or directory" in message


def test_a_server_that_exits_at_start_is_named_with_its_stderr(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    command = misbehaving("--fail-start", "--pid-file", str(pid_file))
    with pytest.raises(MCPStartError) as caught:
        MCPClient.stdio(command).open()
    message = str(caught.value)
    assert "client_servers.py --fail-start" in message
    assert "closed the connection before the handshake ended" in message
    assert "cannot open the configuration file /nonexistent/config.toml" in message
    assert not alive(int(pid_file.read_text()))


def hang_times_out(box: Toolbox) -> Toolbox:
    """`hang` times out after 1 s; the other tools get time to spare on a loaded machine."""
    return Toolbox(replace(t, timeout=1 if t.name == "hang" else 60) for t in box)


def test_a_server_that_never_answers_the_handshake_is_stopped(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    silent = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"
    client = MCPClient.stdio([sys.executable, "-c", silent, str(pid_file)], connect_timeout=1)
    with pytest.raises(MCPStartError, match="did not answer the handshake within 1 s"):
        client.open()
    wait_for(lambda: not alive(int(pid_file.read_text())), "the silent server to be stopped")


def test_nothing_at_the_url_is_a_start_error() -> None:
    with pytest.raises(MCPStartError, match=r"at http://127\.0\.0\.1:9/mcp cannot be reached"):
        MCPClient.http("http://127.0.0.1:9/mcp").open()


def test_a_malformed_schema_refuses_that_tool_only() -> None:
    with MCPClient.stdio(misbehaving()) as client:
        assert set(client.refused) == {"bad_schema", "bad name!"}
        assert "its inputSchema is not a valid JSON Schema" in client.refused["bad_schema"]
        assert "'strnig'" in client.refused["bad_schema"]
        assert "is not usable" in client.refused["bad name!"]
        assert client.tool_names == ["add", "echo", "fail", "hang", "die", "big", "pid"]
        result = run(client.toolbox(), [call("add", a=1, b=2), {"content": "3"}])
    assert result.calls[0].result == {"sum": 3, "terms": [1, 2]}


def test_an_error_result_reaches_the_model_in_the_servers_words() -> None:
    with MCPClient.stdio(misbehaving()) as client:
        result = run(client.toolbox(), [call("fail"), {"content": "the disk is full"}])
    assert result.status == "completed"
    assert result.calls[0].error == "the disk is full"
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert tool_message.content == "Error: the disk is full" and tool_message.is_error


def test_arguments_are_checked_against_the_input_schema_before_the_server_sees_them() -> None:
    with MCPClient.stdio(misbehaving()) as client:
        result = run(client.toolbox(), [call("add", a="one", b=2), {"content": "no"}])
    assert result.calls == []
    (rejected,) = result.rejected
    assert "argument 'a' must be number" in rejected.error


def test_a_hung_server_times_out_and_the_next_call_works(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    with MCPClient.stdio(misbehaving("--pid-file", str(pid_file))) as client:
        result = run(
            hang_times_out(client.toolbox()),
            [call("hang"), call("echo", "c2", text="still here"), {"content": "done"}],
        )
        assert result.status == "completed"
        hung, echoed = result.calls
        assert hung.error == "hang timed out after 1 s"
        assert echoed.result == "still here"
    # The server, whose handler still hangs, is stopped with the client.
    wait_for(lambda: not alive(int(pid_file.read_text())), "the hung server to be stopped")


def test_a_server_that_exits_during_a_call_is_reported_and_started_again() -> None:
    with MCPClient.stdio(misbehaving()) as client:
        result = run(
            client.toolbox(),
            [call("pid"), call("die", "c2"), call("pid", "c3"), {"content": "restarted"}],
        )
    assert result.status == "completed"
    first, died, second = result.calls
    assert died.error is not None
    assert "closed the connection during the call" in died.error
    assert "dying on purpose" in died.error  # its stderr, quoted
    assert first.result != second.result  # a new process answered
    assert not alive(int(first.result)) and not alive(int(second.result))


def test_ten_megabytes_of_content_are_shown_by_handle_and_kept_in_the_record() -> None:
    with MCPClient.stdio(misbehaving()) as client:
        result = run(client.toolbox(), [call("big", megabytes=10), {"content": "big"}])
    assert result.status == "completed"
    assert len(result.calls[0].result) == 10_000_000
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert len(tool_message.content) < 1_000
    assert "text of 10,000,000 characters" in tool_message.content


def test_a_stdio_server_killed_between_runs_is_started_again() -> None:
    with MCPClient.stdio(misbehaving()) as client:
        box = client.toolbox()
        before = run(box, [call("pid"), {"content": "one"}])
        pid = int(before.calls[0].result)
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not client.connected, "the client to see the server gone")
        after = run(box, [call("echo", text="again"), call("pid", "c2"), {"content": "two"}])
    assert after.status == "completed"
    assert [c.error for c in after.calls] == [None, None]
    assert after.calls[0].result == "again"
    assert int(after.calls[1].result) != pid


def test_an_http_server_killed_and_restarted_between_runs(http_server: HttpServer) -> None:
    with MCPClient.http(http_server.url) as client:
        box = client.toolbox()
        before = run(box, [call("echo", text="one"), {"content": "one"}])
        http_server.kill()
        down = run(box, [call("echo", text="nobody"), {"content": "down"}])
        http_server.start()  # the same port
        after = run(box, [call("echo", text="two"), {"content": "two"}])
    assert before.calls[0].result == "one"
    assert down.status == "completed"
    assert down.calls[0].error is not None and http_server.url in down.calls[0].error
    assert after.calls[0].result == "two"


def test_a_closed_client_makes_its_tools_fail_clearly() -> None:
    with MCPClient.stdio(misbehaving()) as client:
        box = client.toolbox()
    result = run(box, [call("echo", text="late"), {"content": "closed"}])
    assert result.status == "completed"
    error = result.calls[0].error
    assert error is not None and "was closed" in error


def test_a_client_left_open_is_closed_when_collected(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    client = MCPClient.stdio(misbehaving("--pid-file", str(pid_file))).open()
    pid = int(pid_file.read_text())
    assert alive(pid)
    del client
    gc.collect()
    wait_for(lambda: not alive(pid), "the server of a collected client to stop")


async def test_on_the_callers_loop_a_hang_times_out_and_a_death_is_reported(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pid"
    async with MCPClient.stdio(misbehaving("--pid-file", str(pid_file))) as client:
        agent = Agent(
            ScriptedModel(
                [
                    call("hang"),
                    call("die", "c2"),
                    call("echo", "c3", text="back"),
                    {"content": "ok"},
                ]
            ),
            hang_times_out(client.toolbox()),
        )
        async with agent:
            result = await agent.arun("task")
    assert result.status == "completed"
    hung, died, echoed = result.calls
    assert hung.error == "hang timed out after 1 s"
    assert died.error is not None and "dying on purpose" in died.error
    assert echoed.result == "back"
    assert not alive(int(pid_file.read_text()))


@pytest.mark.npm
def test_a_call_refused_for_a_session_the_restarted_server_forgot_is_sent_again() -> None:
    # Nothing is called while the server is down, so the first the client learns of
    # the restart is the new server refusing the session the call was sent in; a
    # refused call never ran, and goes again in a new session.
    server = EverythingHttp()
    server.start()
    try:
        with MCPClient.http(server.url) as client:
            box = client.toolbox()
            before = run(box, [call("echo", message="one"), {"content": "one"}])
            server.kill()
            server.start()  # the same port
            after = run(
                box,
                [
                    call("echo", message="two"),
                    call("echo", "c2", message="three"),
                    {"content": "ok"},
                ],
            )
    finally:
        server.kill()
    assert before.calls[0].result == "Echo: one"
    assert [c.error for c in after.calls] == [None, None]
    assert [c.result for c in after.calls] == ["Echo: two", "Echo: three"]


@pytest.mark.parametrize(
    ("method", "session", "status", "body", "refused"),
    [
        ("POST", True, 404, b'{"error": {"message": "Session not found"}}', True),
        ("POST", True, 404, b"", True),
        ("POST", True, 400, b'{"error": {"message": "No valid session ID provided"}}', True),
        ("POST", True, 400, b'{"error": {"message": "Invalid params"}}', False),
        ("POST", False, 404, b"Not Found", False),
        ("GET", True, 404, b"", False),
        ("POST", True, 500, b"session store failed", False),
    ],
)
async def test_what_counts_as_the_server_refusing_the_session(
    method: str, session: bool, status: int, body: bytes, refused: bool
) -> None:
    headers = {"mcp-session-id": "abc"} if session else {}
    request = httpx2.Request(method, "http://127.0.0.1:1/mcp", headers=headers)
    watch = _SessionWatch()
    await watch.observe(httpx2.Response(status, content=body, request=request))
    assert watch.refused is refused
