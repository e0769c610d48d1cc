"""The budgeted window in the real loop: harness offload, large results, the agent's tools."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tooluse import Agent, Message, RunResult, tool
from tooluse._tokens import count_tokens
from tooluse.context import ContextStore
from tooluse.context._window import ContextPolicy
from tooluse.models import ScriptedModel


@tool
def read_page(n: int) -> str:
    """Read page n of the manual."""
    return f"Page {n}: " + " ".join(f"fact{n}-{i} about valve {n}" for i in range(40))


@tool
def dump(n: int) -> str:
    """Return a very large log."""
    return "\n".join(f"log line {i} of dump {n}: status ok" for i in range(2000))


@tool
def count_lines(text: str) -> int:
    """How many lines a text has."""
    return len(text.splitlines())


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": "",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


def request_tokens(messages: Sequence[Message]) -> int:
    return sum(count_tokens(m.content or "") + 4 for m in messages)


def run(
    replies: list[dict[str, Any]], policy: ContextPolicy, tools: list[Any]
) -> tuple[RunResult, ScriptedModel]:
    model = ScriptedModel(replies)
    result = Agent(model, tools, context=policy, max_rounds=len(replies) + 1).run(
        "Read the manual."
    )
    return result, model


def test_harness_offloads_oldest_first_and_keeps_the_budget() -> None:
    policy = ContextPolicy(budget=3_000, agent_tools=False)
    replies = [call("read_page", n=i) for i in range(1, 16)] + [{"content": "done"}]
    result, model = run(replies, policy, [read_page])
    assert result.status == "completed"
    tools_tokens = 60  # the one small schema, generously
    for request in model.requests:
        assert request_tokens(request.messages) + tools_tokens <= policy.budget
    last = model.requests[-1].messages
    assert last[0].role == "user" and "Read the manual." in (
        last[0].content or ""
    )  # the task stays
    markers = [m for m in last if "moved to the store" in (m.content or "")]
    assert markers, "the harness offloaded nothing"
    # the oldest call and its result went first, as one run with one marker
    assert markers[0].id == "m2" and markers[0].role == "user"
    assert (markers[0].content or "").startswith("[m2-m")
    assert len(markers) == 1  # consecutive moves share a marker instead of piling up
    # nothing destroyed: every tool result is either in the window or in the store
    assert len(result.calls) == 15


def test_large_results_enter_as_a_handle_the_next_call_passes_on() -> None:
    policy = ContextPolicy(budget=50_000, result_limit=300)

    def respond(messages: Sequence[Message]) -> dict[str, Any] | str:
        if len([m for m in messages if m.role == "assistant"]) == 0:
            return call("dump", n=1)
        if len([m for m in messages if m.role == "assistant"]) == 1:
            handle = re.findall(r"@r[0-9]+-[0-9a-f]{6}", messages[-1].content or "")[0]
            return call("count_lines", text=handle)
        return {"content": "ok"}

    model = ScriptedModel(respond)
    result = Agent(model, [dump, count_lines], context=policy).run("Read the manual.")
    shown = model.requests[1].messages[-1].content or ""
    # over the policy's result limit: a handle, its shape and a preview, not the text
    assert re.match(
        r"\[m3\] \[stored as @r[0-9]+-[0-9a-f]{6}: text of 68,889 characters, 2,000 lines\]", shown
    )
    assert count_tokens(shown) < 300
    assert result.calls[1].result == 2_000  # the tool was given the whole text


def test_agent_offload_and_query_by_description() -> None:
    policy = ContextPolicy(budget=50_000)
    replies = [
        call("read_page", n=1),
        call("read_page", n=2),
        call("context_offload", span_ids=["m3", "m5"], tags=["manual"]),
        call("context_query", query="valve 2", top_k=1),
        {"content": "ok"},
    ]
    result, model = run(replies, policy, [read_page])
    window = model.requests[3].messages
    # each result leaves with its call: m2-m5 become one marker
    assert [m.id for m in window][:3] == ["m1", "m2", "m6"]
    assert (window[1].content or "").startswith("[m2-m5: 4 messages moved to the store")
    assert "tags: manual" in (window[1].content or "")
    query = next(c for c in result.calls if c.name == "context_query")
    assert query.result[0]["id"] == "m5" and "valve 2" in query.result[0]["text"]


def test_compress_replaces_a_span_with_the_summary_and_keeps_calls_with_results() -> None:
    policy = ContextPolicy(budget=50_000)
    replies = [
        call("read_page", n=1),
        call("read_page", n=2),
        # naming only the results: their calls (m2, m4) join the span
        call(
            "context_compress", span_ids=["m3", "m5"], summary="Pages 1-2: valves 1 and 2 are fine."
        ),
        {"content": "ok"},
    ]
    result, model = run(replies, policy, [read_page])
    window = model.requests[3].messages
    assert [m.id for m in window][:3] == ["m1", "m2", "m6"]
    assert window[1].role == "user" and "[summary of m2-m5" in (window[1].content or "")
    assert "valves 1 and 2 are fine" in (window[1].content or "")
    assert result.status == "completed"
    assert window[2].tool_calls and window[2].tool_calls[0].name == "context_compress"


def test_what_must_stay_cannot_be_moved() -> None:
    policy = ContextPolicy(budget=50_000)
    replies = [
        call("context_offload", span_ids=["m1"]),
        call("context_offload", span_ids=["m9"]),
        {"content": "ok"},
    ]
    result, _ = run(replies, policy, [read_page])
    errors = [c.error for c in result.calls]
    assert errors[0] == "m1 cannot be moved: the system prompt and the task stay in the window"
    assert errors[1] is not None and errors[1].startswith("no message 'm9' in this run")


def test_context_tools_work_from_a_script() -> None:
    policy = ContextPolicy(budget=50_000)
    first = "```python\nimport tools\nprint(tools.read_page(1))\n```"
    second = (
        "```python\nimport tools\n"
        "print(tools.context_offload(['m4'], tags=['manual']))\n"
        "hits = tools.context_query('valve 1')\n"
        "print([h['id'] for h in hits])\n```"
    )
    model = ScriptedModel([{"content": first}, {"content": second}, {"content": "ok"}])
    with Agent(model, [read_page], context=policy, convention="code") as agent:
        result = agent.run("Read the manual.")
    assert [s.status for s in result.scripts] == ["ok", "ok"]
    assert result.scripts[1].stdout.splitlines()[-1] == "['m4']"
    assert "moved to the store" in (model.requests[2].messages[3].content or "")


def test_offloaded_material_survives_in_a_file_store(tmp_path: Any) -> None:
    store = ContextStore(tmp_path / "ctx.db")
    policy = ContextPolicy(budget=50_000, store=store)
    replies = [
        call("read_page", n=7),
        call("context_offload", span_ids=["m3"], tags=["p7"]),
        {"content": "ok"},
    ]
    run(replies, policy, [read_page])
    store.close()
    reopened = ContextStore(tmp_path / "ctx.db")
    namespaces = {
        row[0] for row in reopened._shared.conn.execute("SELECT DISTINCT namespace FROM items")
    }
    (namespace,) = namespaces
    assert reopened.with_namespace(namespace).get("m3") is not None
