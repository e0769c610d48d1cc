"""The agent loop driving OpenAIChat against a real loopback server, in process and via the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from examples.seed_tools import toolbox as seed_tools
from tooluse import Agent
from tooluse.models import OpenAIChat

from ._chat_server import ChatServer, Reply, completion, error_body, tool_call
from ._dotted import dotted_factorial

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server() -> Iterator[ChatServer]:
    srv = ChatServer().start()
    yield srv
    srv.stop()


def hotel_replies(server: ChatServer) -> None:
    server.enqueue(
        completion(
            tool_calls=[tool_call("a", "get_exchange_rate", {"base": "USD", "traget": "EUR"})],
            usage={"prompt_tokens": 410, "completion_tokens": 21, "total_tokens": 431},
        ),
        completion(
            tool_calls=[
                tool_call("b", "get_exchange_rate", {"base": "USD", "target": "EUR"}),
                tool_call("c", "calculator", {"expression": "100 * 0.92 - 85"}),
            ],
            usage={"prompt_tokens": 470, "completion_tokens": 40, "total_tokens": 510},
        ),
        completion(
            "Yes: 92 EUR, 7 EUR to spare.",
            usage={"prompt_tokens": 530, "completion_tokens": 9, "total_tokens": 539},
        ),
    )


async def test_agent_runs_over_the_wire(server: ChatServer) -> None:
    hotel_replies(server)
    model = OpenAIChat("test-model", base_url=server.base_url, api_key="k")
    result = await Agent(model, seed_tools).arun("Convert 100 USD to EUR; enough for 85?")
    await model.aclose()
    assert result.status == "completed" and result.answer == "Yes: 92 EUR, 7 EUR to spare."
    assert [c.result for c in result.calls] == [0.92, 7.0]
    assert result.usage.source == "provider" and result.usage.input_tokens == 1410
    # what went over the wire in round 2: the refused call's error as its tool message
    second = server.requests[1].json
    assert second["messages"][-1]["role"] == "tool"
    assert "did you mean 'target'" in second["messages"][-1]["content"]
    assert [t["function"]["name"] for t in second["tools"]] == seed_tools.names
    third = server.requests[2].json
    assert [m["tool_call_id"] for m in third["messages"] if m["role"] == "tool"] == ["a", "b", "c"]


async def test_server_failure_mid_run_keeps_what_was_done(server: ChatServer) -> None:
    server.enqueue(
        completion(tool_calls=[tool_call("a", "lookup_capital", {"country": "Kenya"})]),
        Reply(status=400, body=error_body("context length exceeded")),
    )
    model = OpenAIChat("m", base_url=server.base_url, api_key="k", max_retries=0)
    result = await Agent(model, seed_tools).arun("capital of Kenya")
    await model.aclose()
    assert result.status == "error" and "context length exceeded" in (result.error or "")
    assert [c.result for c in result.calls] == ["Nairobi"]


def test_cli_against_the_server(server: ChatServer) -> None:
    hotel_replies(server)
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "tooluse"),
            "run",
            "Convert 100 USD to EUR",
            "--tools",
            "examples.seed_tools:toolbox",
            "--model",
            "openai:test-model",
            "--base-url",
            server.base_url,
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "k"},
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "completed" and data["usage"]["input_tokens"] == 1410


async def test_dotted_tool_names_are_mapped_on_the_wire_and_back(server: ChatServer) -> None:
    seen: list[int] = []
    dotted = dotted_factorial(seen)
    server.enqueue(
        completion(tool_calls=[tool_call("a", "math_factorial", {"number": 5})]),
        completion("120"),
    )
    model = OpenAIChat("m", base_url=server.base_url, api_key="k")
    result = await Agent(model, [dotted]).arun("5!")
    await model.aclose()
    assert result.status == "completed" and seen == [5]
    assert [c.name for c in result.calls] == ["math.factorial"]
    first, second = (r.json for r in server.requests)
    assert [t["function"]["name"] for t in first["tools"]] == ["math_factorial"]
    history_call = second["messages"][-2]["tool_calls"][0]["function"]["name"]
    assert history_call == "math_factorial"
