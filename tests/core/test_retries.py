"""A failed call to a tool whose repeat is safe is retried before its error is recorded."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooluse import Agent, Limits, ModelRetry, Tool, Toolbox, ToolDefinitionError, tool
from tooluse.models import ScriptedModel


def json_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


class Flaky:
    """Tools that fail their first ``failures`` calls, and count every call."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def attempt(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError(f"attempt {self.calls} failed")
        return f"ok after {self.calls}"


def run_json(tools: list[Tool], name: str) -> Any:
    model = ScriptedModel([json_call("c1", name, {}), {"content": "done"}])
    with Agent(model, Toolbox(tools)) as agent:
        return agent.run("call it")


@pytest.mark.parametrize("effects", ["read", "idempotent"])
def test_a_failed_call_is_retried_up_to_its_retries(effects: str) -> None:
    flaky = Flaky(failures=2)

    @tool(effects=effects, retries=2)  # type: ignore[call-overload]
    def fetch() -> str:
        """Fetch."""
        return flaky.attempt()

    result = run_json([fetch], "fetch")
    assert flaky.calls == 3
    assert result.calls[0].ok and result.calls[0].result == "ok after 3"
    assert result.calls[0].attempts == 3


def test_an_async_tool_is_retried_too() -> None:
    flaky = Flaky(failures=1)

    @tool(retries=1)
    async def fetch() -> str:
        """Fetch."""
        return flaky.attempt()

    result = run_json([fetch], "fetch")
    assert (flaky.calls, result.calls[0].result, result.calls[0].attempts) == (2, "ok after 2", 2)


def test_the_last_error_is_recorded_when_the_retries_run_out() -> None:
    flaky = Flaky(failures=5)

    @tool(retries=1)
    def fetch() -> str:
        """Fetch."""
        return flaky.attempt()

    result = run_json([fetch], "fetch")
    assert flaky.calls == 2
    assert result.calls[0].error == "fetch failed: ConnectionError: attempt 2 failed"
    assert result.calls[0].attempts == 2


def test_without_retries_a_failed_call_runs_once() -> None:
    flaky = Flaky(failures=1)

    @tool(effects="read")
    def fetch() -> str:
        """Fetch."""
        return flaky.attempt()

    result = run_json([fetch], "fetch")
    assert (flaky.calls, result.calls[0].ok, result.calls[0].attempts) == (1, False, 1)


def test_model_retry_is_for_the_model_and_not_retried() -> None:
    calls = 0

    @tool(retries=3)
    def fetch() -> str:
        """Fetch."""
        nonlocal calls
        calls += 1
        raise ModelRetry("ask for a smaller page")

    result = run_json([fetch], "fetch")
    assert calls == 1
    assert result.calls[0].error == "ask for a smaller page"


def test_a_script_call_is_retried(agents: list[Agent]) -> None:
    flaky = Flaky(failures=2)

    @tool(retries=2)
    def fetch() -> str:
        """Fetch."""
        return flaky.attempt()

    code = "```python\nimport tools\nprint(tools.fetch())\n```"
    agent = Agent(
        ScriptedModel([{"content": code}, {"content": "done"}]),
        Toolbox([fetch]),
        convention="code",
        limits=Limits(script_timeout=20),
    )
    agents.append(agent)
    result = agent.run("fetch")
    assert flaky.calls == 3
    assert result.scripts[0].status == "ok"
    assert result.calls[0].result == "ok after 3"


def test_a_write_tool_refuses_retries_unless_it_says_retries_are_safe() -> None:
    def send() -> str:
        """Send."""
        return "sent"

    with pytest.raises(ToolDefinitionError, match="retry_writes=True"):
        tool(effects="write", retries=2)(send)
    with pytest.raises(ToolDefinitionError, match="retry_writes=True"):
        tool(side_effects=True, retries=1)(send)
    with pytest.raises(ToolDefinitionError, match="retry_writes=True"):
        Tool.from_schema("send", "Send.", {"properties": {}}, send, effects="write", retries=1)
    built = tool(effects="write", retries=2, retry_writes=True)(send)
    assert (built.retries, built.retry_writes) == (2, True)


def test_a_write_tool_that_says_so_is_retried() -> None:
    flaky = Flaky(failures=1)

    @tool(effects="write", retries=1, retry_writes=True)
    def send() -> str:
        """Send; it fails before sending anything, so a retry is safe."""
        return flaky.attempt()

    result = run_json([send], "send")
    assert (flaky.calls, result.calls[0].result) == (2, "ok after 2")


@pytest.mark.parametrize("retries", [-1, 1.5, True])
def test_retries_must_be_a_count(retries: object) -> None:
    def fetch() -> str:
        """Fetch."""
        return ""

    with pytest.raises(ToolDefinitionError, match="retries must be"):
        tool(retries=retries)(fetch)  # type: ignore[call-overload]


def test_retry_writes_without_retries_says_nothing_to_retry() -> None:
    def send() -> str:
        """Send."""
        return ""

    with pytest.raises(ToolDefinitionError, match="retries"):
        tool(effects="read", retry_writes=True)(send)


def test_a_policy_asking_about_side_effects_asks_about_writes_and_idempotent_calls() -> None:
    asked: list[str] = []

    def policy(request: Any) -> bool:
        asked.append(request.tool)
        return True

    def done() -> str:
        return "done"

    made = {
        effects: Tool.from_schema(effects, "A tool.", {"properties": {}}, done, effects=effects)  # type: ignore[arg-type]
        for effects in ("read", "idempotent", "write")
    }
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        for i, name in enumerate(made)
    ]
    model = ScriptedModel([{"tool_calls": calls}, {"content": "done"}])
    with Agent(model, Toolbox(list(made.values())), approval=policy) as agent:
        result = agent.run("call them")
    assert [c.name for c in result.calls] == ["read", "idempotent", "write"]
    assert asked == ["idempotent", "write"]
