"""A long run: a round late in the run costs what an early one did, whatever the history.

Measured without clocks: in memory a model keeps for its requests, and in what each
request shows.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Sequence
from typing import Any

from tooluse import Agent, Message, RunResult, tool
from tooluse.models import ScriptedModel


@tool
def step(i: int) -> int:
    """Return the number plus one."""
    return i + 1


def counting(rounds: int) -> ScriptedModel:
    """A model that calls `step` once a round for ``rounds`` rounds, then answers."""

    def reply(messages: Sequence[Message]) -> dict[str, Any]:
        n = sum(m.role == "assistant" for m in messages) + 1
        if n > rounds:
            return {"content": "done"}
        arguments = json.dumps({"i": n})
        call = {"id": f"c{n}", "function": {"name": "step", "arguments": arguments}}
        return {"tool_calls": [call]}

    return ScriptedModel(reply)


def run(rounds: int) -> tuple[ScriptedModel, RunResult]:
    model = counting(rounds)
    result = Agent(model, [step], max_rounds=rounds + 1).run("count")
    assert result.status == "completed", result.error
    assert len(result.calls) == rounds
    return model, result


def kept(rounds: int) -> int:
    """Bytes still held after a run of ``rounds`` rounds whose model keeps every request."""
    run(1)  # what is loaded once (the tokenizer) is not a round's
    gc.collect()
    tracemalloc.start()
    try:
        model, result = run(rounds)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(model.requests) == rounds + 1 and result.messages
    return held


def test_late_rounds_keep_no_more_memory_than_early_ones() -> None:
    # Each request shows the whole conversation so far; were it a copy, the requests
    # of the second half of a run would hold three times what the first half's do.
    first_half = kept(200)
    whole = kept(400)
    assert whole - first_half < 1.5 * first_half


def test_each_request_shows_the_conversation_as_it_stood_when_asked() -> None:
    model, result = run(5)
    for index, request in enumerate(model.requests):
        sent = list(request.messages)
        # system prompt (none here), task, then an assistant and a tool message a round
        assert len(sent) == len(request.messages) == 1 + 2 * index
        assert sent == result.messages[: len(sent)]
        assert request.messages[-1] is result.messages[len(sent) - 1]
        assert request.messages[len(sent) - 1 :] == [sent[-1]]
        assert list(reversed(request.messages)) == sent[::-1]
    last = model.requests[-1].messages
    assert last[0].content == "count"
    assert [m.role for m in last[-2:]] == ["assistant", "tool"]


def test_a_request_is_unchanged_by_what_the_run_adds_after_it() -> None:
    model, result = run(3)
    first = model.requests[0].messages
    assert len(first) == 1
    assert [m.content for m in first] == ["count"]
    result.messages.append(Message("user", "added after the run"))
    assert len(model.requests[-1].messages) == len(result.messages) - 2
