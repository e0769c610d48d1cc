"""What the client writes to stderr on its own: one line for a server that writes what
is not MCP to stdout, and nothing at all when calls time out and the run ends."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from client_helpers import MISBEHAVING, PYTHON, ROOT

from tooluse.mcp import MCPClient, MCPStartError

pytestmark = pytest.mark.usefixtures("no_children_left")

ODD = str(Path(__file__).with_name("odd_servers.py"))


def test_json_that_is_not_a_message_is_quoted_when_the_handshake_fails() -> None:
    client = MCPClient.stdio([PYTHON, ODD, "refuse"])
    with pytest.raises(MCPStartError) as caught:
        client.open()
    message = str(caught.value)
    assert message.startswith("the MCP server `") and "odd_servers.py refuse`" in message
    assert message.endswith(
        "does not speak MCP: it wrote a line to stdout that is not JSON-RPC: "
        """'{"status": "listening", "port": 8080}', and did not start: """
        "MCPError: not ready yet"
    )


# Two runs whose MCP calls time out, in a fresh interpreter each time the test runs.
# The first makes the call that was given up on end only after run() closed its event
# loop, every time: the server is wedged in a call (it reads no more of its stdin), so
# the second call's request fills the pipe and its cancellation waits on it. The second
# is the common case, two calls of one turn timing out together, three times over.
TIMEOUT_RUNS = """
import json, sys
from dataclasses import replace
from tooluse import Agent, Toolbox
from tooluse.mcp import MCPClient
from tooluse.models import ScriptedModel

ODD, MISBEHAVING = sys.argv[1], sys.argv[2]


def calls(name, *ids, **arguments):
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"tool_calls": [{"id": i, "type": "function", "function": function} for i in ids]}


with MCPClient.stdio([sys.executable, ODD, "stall"], timeout=1) as client:
    replies = [calls("stall", "a"), calls("stall", "b", pad="x" * 300_000), {"content": "done"}]
    with Agent(ScriptedModel(replies), client.toolbox()) as agent:
        result = agent.run("task")
    print(result.status, *[c.error for c in result.calls], sep="|")

with MCPClient.stdio([sys.executable, MISBEHAVING]) as client:
    box = Toolbox(replace(t, timeout=0.5) for t in client.toolbox())
    for _ in range(3):
        with Agent(ScriptedModel([calls("hang", "a", "b"), {"content": "done"}]), box) as agent:
            result = agent.run("task")
        print(result.status, *[c.error for c in result.calls], sep="|")
"""


def test_calls_that_time_out_leave_nothing_on_stderr_when_the_run_ends(tmp_path: Path) -> None:
    script = tmp_path / "timeout_runs.py"
    script.write_text(textwrap.dedent(TIMEOUT_RUNS))
    proc = subprocess.run(
        [sys.executable, str(script), ODD, MISBEHAVING],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "completed|stall timed out after 1 s|stall timed out after 1 s",
        *["completed|hang timed out after 0.5 s|hang timed out after 0.5 s"] * 3,
    ]
    assert proc.stderr == ""
