"""Large results by reference: shown as a handle, passed on by it, resolved by the dispatcher.

Each run is a real agent loop over real tools; the scripted model reads the handle it
was shown out of the conversation, as a model would, and writes it as an argument.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tooluse import Agent, Approval, Limits, Message, tool
from tooluse import events as ev
from tooluse._exceptions import UsageError
from tooluse.models import ScriptedModel
from tooluse.view import Catalog, write_static

HANDLE = re.compile(r"@r[0-9]+-[0-9a-f]{6}")

#: What each tool that takes the items was given, to assert on.
received: list[Any] = []


@tool
def list_items(n: int) -> list[dict[str, Any]]:
    """The catalogue's first n items."""
    return [{"sku": f"S{i:05d}", "name": f"item number {i}", "price": i} for i in range(n)]


@tool
def total_price(items: list[dict[str, Any]]) -> int:
    """The sum of the items' prices."""
    received.append(items)
    return sum(int(item["price"]) for item in items)


@tool
def count_lines(text: str) -> int:
    """How many lines a text has."""
    received.append(text)
    return len(text.splitlines())


Step = Callable[[str | None], dict[str, Any] | str]


def scripted(steps: Sequence[Step]) -> ScriptedModel:
    """A model that answers step by step, each step given the last handle it was shown."""

    def respond(messages: Sequence[Message]) -> dict[str, Any] | str:
        replies = sum(1 for m in messages if m.role == "assistant")
        shown = [
            h for m in messages if m.role != "assistant" for h in HANDLE.findall(m.content or "")
        ]
        return steps[replies](shown[-1] if shown else None)

    return ScriptedModel(respond)


def json_call(name: str, **arguments: Any) -> dict[str, Any]:
    call = {
        "id": "",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return {"tool_calls": [call]}


def tool_messages(messages: Sequence[Message]) -> list[str]:
    return [m.content or "" for m in messages if m.role == "tool"]


def test_a_large_result_is_a_handle_and_a_later_call_gets_the_value() -> None:
    received.clear()
    model = scripted(
        [
            lambda _: json_call("list_items", n=2_000),
            lambda h: json_call("total_price", items=h),
            lambda _: "done",
        ]
    )
    result = Agent(model, [list_items, total_price]).run("What do the items cost?")
    assert result.status == "completed"
    first = tool_messages(result.messages)[0]
    handle = HANDLE.search(first)
    assert handle is not None
    assert first.startswith(
        f"[stored as {handle.group()}: list of 2,000 dicts with keys sku, name, price"
    )
    assert '{"sku":"S00000","name":"item number 0","price":0}' in first  # the preview
    assert len(first) < 1_000
    # The tool was given the list itself, never the handle's text.
    assert received == [list_items(2_000)]
    assert result.calls[1].ok and result.calls[1].result == sum(range(2_000))
    assert tool_messages(result.messages)[1] == str(sum(range(2_000)))


def test_a_handle_nested_in_the_arguments_is_resolved() -> None:
    received.clear()

    @tool
    def first_sku(batch: dict[str, Any]) -> str:
        """The first sku of a batch."""
        received.append(batch)
        return str(batch["rows"][0]["sku"])

    model = scripted(
        [
            lambda _: json_call("list_items", n=500),
            lambda h: json_call("first_sku", batch={"rows": h, "label": f"{h} as text"}),
            lambda _: "done",
        ]
    )
    result = Agent(model, [list_items, first_sku]).run("First sku?")
    assert result.calls[1].result == "S00000"
    (batch,) = received
    assert batch["rows"] == list_items(500)
    # Only a string that is exactly a handle stands for its value.
    assert HANDLE.fullmatch(batch["label"].removesuffix(" as text"))


def test_a_handle_in_the_text_convention() -> None:
    received.clear()
    model = scripted(
        [
            lambda _: "[list_items(n=2000)]",
            lambda h: f"[total_price(items='{h}')]",
            lambda _: "done",
        ]
    )
    result = Agent(model, [list_items, total_price], convention="text").run("Cost?")
    assert result.status == "completed"
    shown = model.requests[1].messages
    assert any("list of 2,000 dicts with keys sku, name, price" in (m.content or "") for m in shown)
    assert received == [list_items(2_000)]


def test_a_large_plan_result_is_a_handle_a_later_plan_passes_on() -> None:
    received.clear()
    model = scripted(
        [
            lambda _: "```plan\nitems = list_items(n=2000)\n```",
            lambda h: f'```plan\ntotal = total_price(items="{h}")\n```',
            lambda _: "done",
        ]
    )
    result = Agent(model, [list_items, total_price], convention="plan").run("Cost?")
    assert result.status == "completed", result.error
    report = tool_messages(result.messages)[0]
    assert "Result:\n[stored as @r" in report
    assert "list of 2,000 dicts with keys sku, name, price" in report
    assert received == [list_items(2_000)]
    assert tool_messages(result.messages)[1].endswith(f"Result:\n{sum(range(2_000))}")


def test_an_unknown_handle_is_refused_and_the_run_goes_on() -> None:
    received.clear()

    def unknown(handle: str | None) -> str:
        assert handle is not None
        return "@r999-" + handle.split("-")[1]  # this run's tag, a number it never made

    model = scripted(
        [
            lambda _: json_call("list_items", n=2_000),
            lambda h: json_call("total_price", items=unknown(h)),
            lambda h: json_call("total_price", items=h),
            lambda _: "done",
        ]
    )
    result = Agent(model, [list_items, total_price]).run("Cost?")
    assert result.status == "completed"
    (refused,) = result.rejected
    handle = HANDLE.findall(tool_messages(result.messages)[0])[0]
    assert refused.error == (
        f"invalid call to total_price: there is no stored result {unknown(handle)} in this "
        f"run (this run's handles: {handle})"
    )
    assert tool_messages(result.messages)[1] == f"Error: {refused.error}"
    assert received == [list_items(2_000)]  # nothing ran for the refused call
    assert result.calls[1].result == sum(range(2_000))  # the run went on


def test_a_conversation_continued_with_an_earlier_runs_handles_refuses_them() -> None:
    received.clear()
    first_steps: list[Step] = [lambda _: json_call("list_items", n=2_000), lambda _: "listed"]
    earlier = Agent(scripted(first_steps), [list_items, total_price]).run("List them.")
    (theirs,) = HANDLE.findall(tool_messages(earlier.messages)[0])[:1]
    # The new run makes its own @r1 too: the earlier one is never taken for it.
    # The earlier run's two replies come first in the conversation: steps 0 and 1.
    model = scripted(
        [
            *first_steps,
            lambda _: json_call("list_items", n=1_000),
            lambda _: json_call("total_price", items=theirs),
            lambda _: "could not",
        ]
    )
    result = Agent(model, [list_items, total_price]).run("Cost?", history=earlier.messages)
    assert result.status == "completed"
    (refused,) = result.rejected
    stored = [m for m in tool_messages(result.messages) if m.startswith("[stored as")]
    mine = HANDLE.findall(stored[-1])[0]
    assert mine.startswith("@r1-") and theirs.startswith("@r1-") and mine != theirs
    assert refused.error == (
        f"invalid call to total_price: {theirs} is a stored result of another run; a handle "
        f"is valid only in the run that made it (this run's handles: {mine})"
    )
    assert received == []


def test_another_runs_handle_is_refused() -> None:
    received.clear()
    first = scripted([lambda _: json_call("list_items", n=2_000), lambda _: "listed"])
    agent = Agent(first, [list_items, total_price])
    earlier = agent.run("List them.")
    (theirs,) = HANDLE.findall(tool_messages(earlier.messages)[0])[:1]
    model = scripted([lambda _: json_call("total_price", items=theirs), lambda _: "could not"])
    result = Agent(model, [list_items, total_price]).run("Cost?")
    assert result.status == "completed"
    (refused,) = result.rejected
    assert refused.error == (
        f"invalid call to total_price: {theirs} is a stored result of another run; a handle "
        "is valid only in the run that made it (this run's handles: none)"
    )
    assert received == []


def test_a_large_text_result_is_a_handle_too() -> None:
    received.clear()

    @tool
    def read_log() -> str:
        """The service log."""
        return "\n".join(f"line {i}: status ok" for i in range(1_000))

    model = scripted(
        [
            lambda _: json_call("read_log"),
            lambda h: json_call("count_lines", text=h),
            lambda _: "ok",
        ]
    )
    result = Agent(model, [read_log, count_lines]).run("How long is the log?")
    shown = tool_messages(result.messages)[0]
    assert shown.startswith("[stored as @r")
    assert ": text of 19,889 characters, 1,000 lines]\nPreview: line 0: status ok\n" in shown
    assert len(shown) < 1_000
    assert result.calls[1].result == 1_000


def test_small_results_are_unchanged() -> None:
    model = scripted([lambda _: json_call("list_items", n=3), lambda _: "done"])
    result = Agent(model, [list_items]).run("List three.")
    assert tool_messages(result.messages) == [json.dumps(list_items(3), separators=(",", ":"))]


def test_without_a_limit_results_are_shown_clipped_as_before() -> None:
    model = scripted([lambda _: json_call("list_items", n=2_000), lambda _: "done"])
    result = Agent(model, [list_items], limits=Limits(result_limit=None)).run("List.")
    (shown,) = tool_messages(result.messages)
    assert "characters cut ..." in shown and "@r" not in shown
    assert len(shown) < 51_000


def test_the_code_convention_gets_the_whole_value() -> None:
    code = (
        "```python\nimport tools\nitems = tools.list_items(n=2000)\n"
        "print(len(items), items[-1]['price'])\n```"
    )
    model = scripted([lambda _: {"content": code}, lambda _: "done"])
    with Agent(model, [list_items], convention="code") as agent:
        result = agent.run("How many?")
    assert result.status == "completed", result.error
    assert tool_messages(result.messages)[0] == "2000 1999"
    assert "@r" not in "".join(tool_messages(result.messages))


def test_the_trace_records_handles_and_the_view_shows_them(tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"
    model = scripted(
        [
            lambda _: json_call("list_items", n=2_000),
            lambda h: json_call("total_price", items=h),
            lambda _: "done",
        ]
    )
    result = Agent(model, [list_items, total_price], trace=trace).run("Cost?")
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    events = [ev.event_from_dict(line) for line in lines]
    (stored,) = [e for e in events if isinstance(e, ev.HandleStored)]
    (used,) = [e for e in events if isinstance(e, ev.HandleUsed)]
    assert stored.call_id == result.calls[0].id
    assert stored.shape == "list of 2,000 dicts with keys sku, name, price"
    assert used.handles == (stored.handle,) and used.call_id == result.calls[1].id
    # The dict forms read back as the same events.
    assert ev.event_from_dict(stored.to_dict()) == stored
    assert ev.event_from_dict(used.to_dict()) == used
    written = write_static(Catalog.of([trace]), tmp_path / "site")
    page = "".join(p.read_text() for p in written if p.suffix == ".html")
    assert f"stored as {stored.handle}" in page
    assert f"{stored.handle} passed to total_price" in page


@pytest.mark.parametrize("limit", [99, 0])
def test_a_result_limit_too_small_is_refused(limit: int) -> None:
    with pytest.raises(UsageError, match=r"must be at least 100 characters"):
        Limits(result_limit=limit)


def test_a_run_resumed_after_approval_keeps_its_handles() -> None:
    received.clear()

    @tool(side_effects=True)
    def save(note: str) -> str:
        """Save a note."""
        return "saved"

    model = scripted(
        [
            lambda _: json_call("list_items", n=2_000),
            lambda _: json_call("save", note="listed"),
            lambda h: json_call("total_price", items=h),
            lambda _: "done",
        ]
    )
    agent = Agent(model, [list_items, save, total_price], approval=lambda _: Approval.defer())
    paused = agent.run("List, note, total.")
    assert paused.status == "needs_approval"
    (pending,) = paused.pending
    result = agent.resume(paused, {pending.call_id: True})
    assert result.status == "completed", result.error
    assert not result.rejected  # the handle shown before the pause still names the list
    assert received == [list_items(2_000)]
