"""Tracing never changes what a run does."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from tooluse import Agent, read_trace, tool
from tooluse.models import ScriptedModel

# A lone surrogate: valid in a Python string and in JSON text, not in UTF-8.
LONE = "\ud83d"


@tool
def echo(text: str) -> str:
    """Return the text with a marker.

    Args:
        text: anything
    """
    return f"{text}{LONE}!"


def echo_then_answer() -> ScriptedModel:
    arguments = json.dumps({"text": f"a{LONE}b"})
    return ScriptedModel(
        [
            {
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "echo", "arguments": arguments},
                    }
                ]
            },
            {"content": f"done {LONE}"},
        ]
    )


def test_lone_surrogates_are_traced_as_escapes_and_the_run_completes(tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"

    result = Agent(echo_then_answer(), [echo], trace=trace).run("Echo it.")

    assert result.status == "completed" and result.sink_errors == 0
    assert result.answer == f"done {LONE}"
    [call] = result.calls
    assert call.arguments == {"text": f"a{LONE}b"} and call.result == f"a{LONE}b{LONE}!"
    events = list(read_trace(trace))
    [traced_call] = [e for e in events if e["event"] == "call"]
    assert traced_call["arguments"] == call.arguments and traced_call["result"] == call.result
    assert events[-1]["event"] == "run_end" and events[-1]["answer"] == f"done {LONE}"
    assert "\\ud83d" in trace.read_text(encoding="utf-8")


def test_a_failing_sink_is_counted_and_warned_about_once(tmp_path: Path) -> None:
    seen: list[str] = []

    def broken_sink(event: dict[str, Any]) -> None:
        seen.append(event["event"])
        raise OSError("disk full")

    trace = tmp_path / "run.jsonl"
    agent = Agent(echo_then_answer(), [echo], trace=trace, on_event=broken_sink)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = agent.run("Echo it.")

    assert result.status == "completed" and result.answer == f"done {LONE}"
    assert [c.name for c in result.calls] == ["echo"]
    assert result.sink_errors == len(seen) and seen[0] == "run_start" and seen[-1] == "run_end"
    [warning] = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert "OSError: disk full" in str(warning.message)
    assert "sink_errors" in str(warning.message)
    # the other sink got every event all the same
    assert [e["event"] for e in read_trace(trace)] == seen
    assert result.to_dict()["sink_errors"] == result.sink_errors


async def test_a_failing_sink_does_not_end_an_async_run() -> None:
    def broken_sink(event: dict[str, Any]) -> None:
        raise ValueError(event["event"])

    with pytest.warns(RuntimeWarning, match="ValueError: run_start"):
        result = await Agent(echo_then_answer(), [echo], on_event=broken_sink).arun("Echo it.")

    assert result.status == "completed" and result.sink_errors > 0
