"""`tooluse.events`: one typed vocabulary; the trace is exactly the events' dict forms."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tooluse import Agent, events, tool
from tooluse._messages import Usage
from tooluse._records import CallRecord, RejectedCall
from tooluse.models import ScriptedModel
from tooluse.policy._approval import ApprovalRequest
from tooluse.run._trace import read_events, read_trace

OLD_TRACE = Path(__file__).parent.parent / "data" / "trace_before_events.jsonl"

#: One of every event class, with fields that are not their defaults.
SAMPLES: list[events.Event] = [
    events.RunStart("task", "scripted", "auto", ("a", "b"), "profile", ("b",), t=1.0),
    events.RunEnd("completed", "yes", None, 2, 1, 1, {"input_tokens": 3}, 0.5, ({"s": 1},), t=2),
    events.InternalError("Traceback ...", t=3.0),
    events.ScopeFixed(("send",), "model", {"input_tokens": 1}, "a problem", t=4.0),
    events.ModelRequest(1, 3, t=5.0),
    events.ModelDelta("Hel", 1, t=6.0),
    events.ModelReply(1, {"role": "assistant", "content": "hi"}, {"input_tokens": 2}, "stop", t=7),
    events.RoundEnd(1, Usage(input_tokens=2, output_tokens=1), t=8.0),
    events.Feedback(2, "use a tool", t=9.0),
    events.AnswerChecked(2, "kept", "92 is less than 85", "Check your answer: ...", t=9.5),
    events.CallStart("c1", "echo", 1, 0, t=10.0),
    events.CallEnd(CallRecord("c1", "echo", {"x": 1}, "1", None, 1, 9.5, 0.25), t=11.0),
    events.CallRejected(RejectedCall("c2", "echo", '{"y": 1}', "bad", 1, kind="denied"), t=12),
    events.ScriptStart("script_1", "print(1)", 1, t=13.0),
    events.ScriptOutput("script_1", "1", t=14.0),
    events.ScriptEnd("script_1", "print(1)", "ok", "1\n", None, 1, 2, False, 0.1, ("r",), ("c",)),
    events.PlanEnd("plan_1", 1, "a = f()", True, (events.PlanStep("a", 1, "ok"),), "done", t=16),
    events.ContextOffload("harness", ("m1", "m2"), 3, t=17.0),
    events.ContextCompress("agent", ("m3",), 4, t=18.0),
    events.HandleStored("@r3", "c2", "list of 2,000 dicts with keys sku, name", 50_033, 2, t=18.5),
    events.HandleUsed(("@r3",), "c4", "total_price", 3, t=18.6),
    events.ApprovalNeeded((ApprovalRequest("c3", "send", {"to": "x"}, "model", "why", 2),), t=19),
    events.Paused(2, t=20.0),
    events.ApprovalDecided(("c3",), t=21.0),
    events.Resumed(2, t=22.0),
]


def test_every_event_class_has_a_sample() -> None:
    classes = [getattr(events, name) for name in events.__all__]
    event_classes = {c for c in classes if isinstance(c, type) and issubclass(c, events.Event)}
    assert event_classes - {events.Event, events.UnknownEvent} == {type(e) for e in SAMPLES}


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: type(e).__name__)
def test_each_event_round_trips_through_its_versioned_dict(event: events.Event) -> None:
    data = json.loads(json.dumps(event.to_dict()))
    assert data["event"] == event.tag and data["v"] == events.SCHEMA_VERSION
    assert data["t"] == event.t
    assert events.event_from_dict(data) == event
    assert type(event).from_dict(data) == event


def test_events_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        events.Feedback(1, "x").text = "y"  # type: ignore[misc]


def test_a_class_refuses_another_events_dict() -> None:
    with pytest.raises(ValueError, match="not a Feedback"):
        events.Feedback.from_dict(events.Resumed(1).to_dict())


def test_unknown_or_damaged_lines_read_as_unknown_events() -> None:
    later = events.event_from_dict({"event": "from_the_future", "v": 9, "x": 1, "t": 1.0})
    assert isinstance(later, events.UnknownEvent) and later.tag == "from_the_future"
    damaged = events.event_from_dict({"event": "model_request", "t": "noon"})
    assert isinstance(damaged, events.UnknownEvent) and damaged.to_dict()["t"] == "noon"


def test_a_trace_of_the_release_before_reads_as_typed_events() -> None:
    read = list(read_events(OLD_TRACE))
    assert read and not [e for e in read if isinstance(e, events.UnknownEvent)]
    kinds = {type(e) for e in read}
    assert {events.RunStart, events.CallEnd, events.CallRejected, events.ScriptEnd} <= kinds
    assert {events.PlanEnd, events.ContextOffload, events.ApprovalNeeded} <= kinds
    # Its resume wrote two names; they read as the decision, then the resumed turn.
    assert events.ApprovalDecided in kinds and events.Resumed in kinds
    # Every line's keys read back unchanged (only the version is added).
    for data, event in zip(read_trace(OLD_TRACE), read, strict=True):
        again = event.to_dict()
        again.pop("v")
        if isinstance(event, events.ApprovalDecided):
            assert data["event"] == "run_resumed" and again["decisions"] == data["decisions"]
        elif isinstance(event, events.ContextOffload):
            assert again == {**data, "round": 0}
        else:
            assert again == data


@tool
def echo(text: str) -> str:
    """Echo the text.

    Args:
        text: what to echo
    """
    return text


def test_the_trace_file_is_exactly_the_events_dicts(tmp_path: Path) -> None:
    replies: list[dict[str, Any]] = [
        {
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
            ]
        },
        {
            "tool_calls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "echo", "arguments": '{"text": "hi"}'},
                }
            ]
        },
        {"content": "hi"},
    ]
    seen: list[dict[str, Any]] = []
    trace = tmp_path / "run.jsonl"
    Agent(ScriptedModel(replies), [echo], trace=trace, on_event=seen.append).run("Echo hi.")
    written = list(read_trace(trace))
    assert written == json.loads(json.dumps(seen))
    typed = list(read_events(trace))
    assert [type(e) for e in typed] == [
        events.RunStart,
        events.ModelRequest,
        events.ModelReply,
        events.CallRejected,
        events.ModelRequest,
        events.ModelReply,
        events.CallEnd,
        events.ModelRequest,
        events.ModelReply,
        events.RunEnd,
    ]
    assert [e.to_dict() for e in typed] == written
