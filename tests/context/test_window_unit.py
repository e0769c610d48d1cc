"""`ContextWindow` on its own: messages added by hand, the budget enforced, the agent's tools.

What README's context section promises: the harness offloads (never deletes) the oldest
messages once the window passes the trigger, down to the target; a call leaves with its
result; one marker line per run of moved messages says how to get them back; the system
prompt, the task and the latest turn never move; results over ``result_limit`` enter as
head and tail plus a handle; compress replaces a span with the agent's summary.
"""

from __future__ import annotations

import pytest

from tooluse import Message, ModelRetry, ToolCall, UsageError
from tooluse._tokens import count_tokens
from tooluse.context import ContextStore
from tooluse.context._window import ContextPolicy, ContextWindow


def window(budget: int = 400, *, result_limit: int = 1_500) -> ContextWindow:
    policy = ContextPolicy(budget=budget, result_limit=result_limit)
    return ContextWindow(policy, ContextStore(), count_tokens, run_id="unit")


#: Messages added to each window so far, to number the next one as the loop does. The
#: window is kept with its count: once freed, its id could go to a later window, which
#: would then go on from the old count.
_added: dict[int, tuple[ContextWindow, int]] = {}


def add(w: ContextWindow, message: Message) -> None:
    _, count = _added.get(id(w), (w, 0))
    _added[id(w)] = (w, count + 1)
    message.id = f"m{count + 1}"
    w.add(message)


def turn(w: ContextWindow, n: int, words: int = 30) -> None:
    """One call and its result: an assistant message and a tool message."""
    call = ToolCall(f"c{n}", "read", f'{{"n": {n}}}')
    add(w, Message("assistant", None, (call,)))
    text = " ".join(f"fact{n}-{i}" for i in range(words))
    add(w, Message("tool", text, tool_call_id=f"c{n}", name="read"))


def opened(budget: int = 400, *, result_limit: int = 1_500) -> ContextWindow:
    w = window(budget, result_limit=result_limit)
    add(w, Message("system", "You help."))
    add(w, Message("user", "Read every page."))
    return w


def contents(w: ContextWindow) -> list[str]:
    return [m.content or "" for m in w.messages()]


def test_the_policy_refuses_a_budget_that_cannot_work() -> None:
    with pytest.raises(UsageError, match="budget must be positive"):
        ContextPolicy(budget=0)
    with pytest.raises(UsageError, match="target < trigger"):
        ContextPolicy(target=0.9, trigger=0.5)
    with pytest.raises(UsageError, match="result_limit"):
        ContextPolicy(result_limit=4)


def test_under_the_trigger_nothing_moves() -> None:
    w = opened(budget=10_000)
    turn(w, 1)
    before = contents(w)
    assert w.enforce(0) == []
    assert contents(w) == before
    assert w.offloaded_by_harness == 0


def test_past_the_trigger_the_oldest_turns_move_down_to_the_target() -> None:
    w = opened(budget=400)
    for n in range(1, 8):
        turn(w, n)
    assert w.total > 0.92 * 400  # the test's premise: past the trigger
    moved = w.enforce(0)
    assert moved[:2] == ["m3", "m4"]  # oldest first, the first call with its result
    assert w.total <= 0.60 * 400
    assert w.offloaded_by_harness == len(moved)
    # Nothing is deleted: every moved message is in the store, in full.
    for item in moved:
        assert w.store.get(item) is not None
    tool_text = w.store.get("m4")
    assert tool_text is not None and tool_text.text.startswith("fact1-0 fact1-1")


def test_fixed_tokens_count_against_the_budget() -> None:
    w = opened(budget=1_000)
    for n in range(1, 4):
        turn(w, n)
    assert w.total < 0.92 * 1_000
    assert w.enforce(0) == []
    assert w.enforce(1_000 - w.total) != []  # tool schemas fill the rest


def test_a_run_of_moved_messages_is_one_marker_line() -> None:
    w = opened(budget=400)
    for n in range(1, 8):
        turn(w, n)
    moved = w.enforce(0)
    assert len(moved) >= 2
    shown = w.messages()
    markers = [m for m in shown if "moved to the store" in (m.content or "")]
    assert len(markers) == 1
    marker = markers[0]
    assert marker.role == "user"
    assert marker.content is not None
    assert marker.content.startswith(f"[{moved[0]}-{moved[-1]}: {len(moved)} messages")
    assert "context_query" in marker.content
    assert not any(m.id in moved for m in shown if m is not marker)


def test_the_system_prompt_task_and_latest_turn_never_move() -> None:
    w = opened(budget=120)
    turn(w, 1, words=200)  # one turn alone is past the whole budget
    assert w.total > 120
    assert w.enforce(0) == []
    assert [m.id for m in w.messages()] == ["m1", "m2", "m3", "m4"]
    with pytest.raises(ModelRetry, match="the system prompt and the task stay"):
        w.offload(["m1"])
    with pytest.raises(ModelRetry, match="the latest turn stays"):
        w.offload(["m4"])


def test_a_call_leaves_with_its_result() -> None:
    w = opened(budget=10_000)
    turn(w, 1)
    turn(w, 2)
    text = w.offload(["m4"], tags=["page1"])  # the result only: its call goes too
    assert text.startswith("moved m3, m4 to the store")
    shown = contents(w)
    assert not any("fact1-" in c for c in shown)
    assert any("m3-m4: 2 messages moved to the store" in c and "page1" in c for c in shown)
    assert w.offloaded_by_agent == 2


def test_a_large_result_enters_as_head_and_tail_with_a_handle() -> None:
    w = opened(budget=100_000, result_limit=50)
    add(w, Message("assistant", None, (ToolCall("c1", "dump", "{}"),)))
    full = "\n".join(f"line {i}" for i in range(2_000))
    add(w, Message("tool", full, tool_call_id="c1", name="dump"))
    shown = w.messages()[-1].content or ""
    assert shown.startswith("[m4] line 0\nline 1")
    assert shown.endswith("line 1999")
    assert "the whole result is stored as m4: context_query('m4') returns it" in shown
    assert len(shown) < len(full) // 10
    stored = w.store.get("m4")
    assert stored is not None and stored.text == full
    assert w.query("m4") == [{"id": "m4", "text": full, "tags": ["dump"]}]


def test_compress_replaces_a_span_with_the_summary_and_keeps_the_originals() -> None:
    w = opened(budget=10_000)
    turn(w, 1)
    turn(w, 2)
    turn(w, 3)
    before = w.total
    text = w.compress(["m3", "m6"], "Pages 1 and 2 say the valve is closed.")
    assert text.startswith("compressed m3-m6")
    assert w.total < before
    shown = w.messages()
    assert [m.id for m in shown] == ["m1", "m2", "m3", "m7", "m8"]
    assert shown[2].content == (
        "[summary of m3-m6; the originals are in the store, context_query brings them back] "
        "Pages 1 and 2 say the valve is closed."
    )
    stored = w.store.get("m4")
    assert stored is not None and stored.text.startswith("fact1-0")


def test_compress_refuses_an_empty_summary_or_a_broken_span() -> None:
    w = opened(budget=10_000)
    for n in range(1, 5):
        turn(w, n)
    with pytest.raises(ModelRetry, match="summary is empty"):
        w.compress(["m3"], "  ")
    with pytest.raises(ModelRetry, match="one contiguous span"):
        w.compress(["m3", "m7"], "pages 1 and 3")
    with pytest.raises(ModelRetry, match="no message 'm99'"):
        w.compress(["m99"], "nothing")
    assert w.offloaded_by_agent == 0  # a refused request moved nothing
