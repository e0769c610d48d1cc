"""`agent_flow` on its own: the loop is a generator of effects, answered here by hand.

Each test plays the driver: it answers `AskModel` with model replies it builds and
`RunCalls` with outcomes (made by a real `Dispatcher`, or an `ApprovalRequest`), and
checks what the loop asks for next and what it records.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Sequence
from typing import Any

import pytest

from tooluse import CallRecord, Dispatcher, Message, RejectedCall, Toolbox, ToolCall, tool
from tooluse.conventions import JsonConvention
from tooluse.events import Event
from tooluse.models import ModelRequest, ModelResponse
from tooluse.policy._approval import ApprovalRequest
from tooluse.run._loop import AskModel, LoopConfig, RunCalls, RunState, agent_flow


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


TOOLS = Toolbox([add, shout])
Flow = Generator[Any, Any, None]


def call(call_id: str, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, json.dumps(arguments))


def start(
    task: str = "do it",
    *,
    config: LoopConfig | None = None,
    events: list[dict[str, Any]] | None = None,
) -> tuple[RunState, Flow]:
    """A fresh state and the loop over it, with the JSON convention and `TOOLS`."""

    # The loop emits typed events; the test reads their trace form.
    def sink(event: Event) -> None:
        if events is not None:
            events.append(event.to_dict())

    state = RunState(emit=sink, tracing=events is not None)
    convention = JsonConvention()
    prepared = convention.prepare(TOOLS, "You help.")
    flow = agent_flow(state, task, prepared, convention, config or LoopConfig())
    return state, flow


def ask(effect: object) -> ModelRequest:
    """The request of an effect that must be `AskModel`."""
    assert isinstance(effect, AskModel), effect
    return effect.request


def finish(flow: Flow, reply: Any) -> None:
    """Send the last reply; the loop must end on it."""
    with pytest.raises(StopIteration):
        flow.send(reply)


async def dispatch(calls: Sequence[ToolCall], round_: int) -> list[Any]:
    """What a real dispatcher answers for `calls`."""
    dispatcher = Dispatcher(TOOLS)
    try:
        return await dispatcher.run(calls, round_=round_)
    finally:
        dispatcher.close()


def roles(messages: Sequence[Message]) -> list[str]:
    return [m.role for m in messages]


async def test_a_one_call_turn_asks_runs_and_answers() -> None:
    state, flow = start("What is 2 + 3?")
    first = ask(next(flow))
    assert roles(first.messages) == ["system", "user"]
    assert first.messages[-1].content == "What is 2 + 3?"
    assert [t.name for t in first.tools] == ["add", "shout"]

    effect = flow.send(ModelResponse(tool_calls=[call("c1", "add", a=2, b=3)]))
    assert isinstance(effect, RunCalls)
    assert effect.round == 1
    assert [(c.id, c.name) for c in effect.calls] == [("c1", "add")]

    second = ask(flow.send(await dispatch(effect.calls, effect.round)))
    assert roles(second.messages) == ["system", "user", "assistant", "tool"]
    assert second.messages[-1].tool_call_id == "c1"
    assert second.messages[-1].content == "5"
    assert not second.messages[-1].is_error

    finish(flow, ModelResponse(content="2 + 3 = 5"))
    assert state.status == "completed"
    assert state.answer == "2 + 3 = 5"
    assert state.rounds == 2
    assert [(c.name, c.result) for c in state.calls] == [("add", 5)]
    assert len(state.usage.rounds) == 2


async def test_parallel_calls_run_as_one_effect_and_are_answered_in_order() -> None:
    state, flow = start()
    next(flow)
    effect = flow.send(
        ModelResponse(
            tool_calls=[call("a", "add", a=1, b=1), call("b", "shout", text="hi")],
        )
    )
    assert isinstance(effect, RunCalls)
    assert [c.id for c in effect.calls] == ["a", "b"]

    outcomes = await dispatch(effect.calls, effect.round)
    # Answered in reverse: the conversation still follows the order of the calls.
    request = ask(flow.send(list(reversed(outcomes))))
    results = [(m.tool_call_id, m.content) for m in request.messages if m.role == "tool"]
    assert results == [("a", "2"), ("b", "HI")]
    assert [c.id for c in state.calls] == ["b", "a"]  # recorded as they came back
    finish(flow, ModelResponse(content="done"))
    assert state.status == "completed"


async def test_ids_a_model_repeats_across_turns_are_made_unique() -> None:
    _, flow = start()
    next(flow)
    effect = flow.send(ModelResponse(tool_calls=[call("call_0", "add", a=1, b=2)]))
    ask(flow.send(await dispatch(effect.calls, effect.round)))
    effect = flow.send(ModelResponse(tool_calls=[call("call_0", "add", a=3, b=4)]))
    assert isinstance(effect, RunCalls)
    assert [c.id for c in effect.calls] == ["call_0~2"]
    request = ask(flow.send(await dispatch(effect.calls, effect.round)))
    answered = [m.tool_call_id for m in request.messages if m.role == "tool"]
    assert answered == ["call_0", "call_0~2"]
    finish(flow, ModelResponse(content="ok"))


async def test_a_refused_call_is_fed_back_as_an_error_and_the_run_goes_on() -> None:
    events: list[dict[str, Any]] = []
    state, flow = start(events=events)
    next(flow)
    effect = flow.send(ModelResponse(tool_calls=[call("c1", "add", a="two", b=3)]))
    assert isinstance(effect, RunCalls)
    outcomes = await dispatch(effect.calls, effect.round)
    assert isinstance(outcomes[0], RejectedCall)

    request = ask(flow.send(outcomes))
    fed_back = request.messages[-1]
    assert fed_back.role == "tool" and fed_back.tool_call_id == "c1"
    assert fed_back.is_error
    assert fed_back.content == f"Error: {outcomes[0].error}"
    assert state.rejected == outcomes and state.calls == []
    assert [e["event"] for e in events if e["event"] in ("call", "rejected")] == ["rejected"]

    # The model corrects itself and the run completes.
    effect = flow.send(ModelResponse(tool_calls=[call("c2", "add", a=2, b=3)]))
    assert isinstance(effect, RunCalls)
    ask(flow.send(await dispatch(effect.calls, effect.round)))
    finish(flow, ModelResponse(content="5"))
    assert state.status == "completed"
    assert [c.result for c in state.calls] == [5]


async def test_a_failed_tool_is_marked_as_an_error_for_the_model() -> None:
    state, flow = start()
    next(flow)
    effect = flow.send(ModelResponse(tool_calls=[call("c1", "add", a=1, b=2)]))
    assert isinstance(effect, RunCalls)
    failed = CallRecord("c1", "add", {"a": 1, "b": 2}, error="add failed: disk on fire", round=1)
    request = ask(flow.send([failed]))
    assert request.messages[-1].is_error
    assert request.messages[-1].content == "Error: add failed: disk on fire"
    finish(flow, ModelResponse(content="it failed"))
    assert state.calls == [failed]


def play(
    flow: Flow,
    model: Callable[[ModelRequest], ModelResponse],
    tools: Callable[[RunCalls], list[Any]],
) -> None:
    """Answer every effect until the loop ends (it must, within 100 effects)."""
    effect = next(flow)
    for _ in range(100):
        if isinstance(effect, AskModel):
            reply: Any = model(effect.request)
        else:
            assert isinstance(effect, RunCalls), effect
            reply = tools(effect)
        try:
            effect = flow.send(reply)
        except StopIteration:
            return
    raise AssertionError("the loop did not end")


def results(value: Any) -> Callable[[RunCalls], list[Any]]:
    """Answer each call with a successful record returning `value`."""
    return lambda effect: [
        CallRecord(c.id, c.name, json.loads(c.arguments), result=value, round=effect.round)
        for c in effect.calls
    ]


def test_max_rounds_ends_the_run_without_an_answer() -> None:
    state, flow = start(config=LoopConfig(max_rounds=2))
    asked: list[ModelRequest] = []

    def model(request: ModelRequest) -> ModelResponse:
        asked.append(request)
        return ModelResponse(tool_calls=[call(f"c{len(asked)}", "add", a=len(asked), b=0)])

    play(flow, model, results(0))
    assert len(asked) == 2
    assert state.status == "max_rounds"
    assert state.rounds == 2
    assert state.answer is None
    assert state.error == "no final answer after 2 rounds"
    assert len(state.calls) == 2


def test_an_identical_call_repeating_is_noted_then_stopped() -> None:
    state, flow = start(config=LoopConfig(cycle_note_at=2, cycle_limit=3, max_rounds=10))
    notes: list[str] = []

    def model(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        if last.role == "user" and last.content and last.content.startswith("Note:"):
            notes.append(last.content)
        return ModelResponse(tool_calls=[call(f"c{state.rounds}", "add", a=1, b=1)])

    play(flow, model, results(2))
    assert len(notes) == 1 and "returned the same result 2 times" in notes[0]
    assert state.status == "cycle"
    assert state.rounds == 3


def test_a_model_error_ends_the_run_with_it() -> None:
    from tooluse import ModelError

    state, flow = start()
    next(flow)
    with pytest.raises(StopIteration):
        flow.throw(ModelError("the server went away"))
    assert state.status == "error"
    assert state.error == "ModelError: the server went away"


async def test_a_deferred_call_pauses_the_run_and_resuming_runs_only_what_waited() -> None:
    events: list[dict[str, Any]] = []
    state, flow = start("add then shout", events=events)
    convention = JsonConvention()
    prepared = convention.prepare(TOOLS, "You help.")
    next(flow)
    effect = flow.send(
        ModelResponse(tool_calls=[call("a", "add", a=1, b=2), call("s", "shout", text="hey")])
    )
    assert isinstance(effect, RunCalls)
    ran = await dispatch([c for c in effect.calls if c.name == "add"], effect.round)
    waiting = ApprovalRequest("s", "shout", {"text": "hey"}, caller="model", reason="asks first")
    finish(flow, [*ran, waiting])

    assert state.status == "needs_approval"
    assert state.pending == [waiting]
    assert state.error == "1 call(s) wait for approval: shout"
    paused = state.paused
    assert paused is not None
    assert paused.round == 1 and paused.done == ("a",)
    assert [c.id for c in paused.calls] == ["a", "s"]
    assert [c.id for c in state.calls] == ["a"]  # what ran is recorded
    assert not any(m.role == "tool" for m in state.messages)  # the turn is not answered yet
    # The trace says what waits for approval, then that the run paused there.
    assert [e["event"] for e in events][-2:] == ["approval_needed", "paused"]

    resumed = agent_flow(state, "add then shout", prepared, convention, LoopConfig(), paused=paused)
    effect = next(resumed)
    assert isinstance(effect, RunCalls)
    assert [c.id for c in effect.calls] == ["s"]  # the call that ran is not run again
    request = ask(resumed.send(await dispatch(effect.calls, effect.round)))
    assert [(m.tool_call_id, m.content) for m in request.messages if m.role == "tool"] == [
        ("a", "3"),
        ("s", "HEY"),
    ]
    finish(resumed, ModelResponse(content="3 and HEY"))
    assert state.answer == "3 and HEY"
    assert state.status == "completed"  # type: ignore[comparison-overlap]
    assert state.rounds == 2
    assert state.paused is None
    assert [c.id for c in state.calls] == ["a", "s"]
