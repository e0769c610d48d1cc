"""`Agent.stream` and `Agent.stream_sync`: the events of a run as it happens, and its result."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tooluse import (
    Agent,
    Approval,
    ApprovalEvent,
    ApprovalPolicy,
    CallEndEvent,
    CallStartEvent,
    ContextEvent,
    DoneEvent,
    Limits,
    RoundEndEvent,
    RunResult,
    ScriptOutputEvent,
    StreamEvent,
    TextEvent,
    read_trace,
    tool,
)
from tooluse.context import ContextPolicy
from tooluse.conventions import TextConvention
from tooluse.models import ScriptedModel
from tooluse.sandbox import Sandbox

KINDS = {
    "text",
    "call_start",
    "call_end",
    "script_start",
    "script_output",
    "script_end",
    "context",
    "approval",
    "round_end",
    "done",
}


@tool
def get_exchange_rate(base: str, target: str) -> float:
    """Return the exchange rate from base to target currency.

    Args:
        base: ISO 4217 code of the currency to convert from
        target: ISO 4217 code of the currency to convert to
    """
    return {"EUR": 0.92, "GBP": 0.79}[target]


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


# The same run written for each convention: a bad argument name, its repair, an answer.
REPLIES: dict[str, list[Any]] = {
    "json": [
        {"tool_calls": [_call("c1", "get_exchange_rate", {"base": "USD", "traget": "EUR"})]},
        {
            "tool_calls": [
                _call("c2", "get_exchange_rate", {"base": "USD", "target": "EUR"}),
                _call("c3", "get_exchange_rate", {"base": "USD", "target": "GBP"}),
            ]
        },
        {"content": "100 USD is 92 EUR or 79 GBP."},
    ],
    "text": [
        "[get_exchange_rate(base='USD', traget='EUR')]",
        "[get_exchange_rate(base='USD', target='EUR'), "
        "get_exchange_rate(base='USD', target='GBP')]",
        "100 USD is 92 EUR or 79 GBP.",
    ],
    "react": [
        'Thought: I need the rate.\nAction: get_exchange_rate\nAction Input: {"base": "USD"}',
        'Thought: fix it.\nAction: get_exchange_rate\nAction Input: {"base": "USD", '
        '"target": "EUR"}',
        "Thought: done.\nFinal Answer: 100 USD is 92 EUR.",
    ],
    "code": [
        "Let me look.\n```python\nfrom tools import get_exchange_rate\n"
        "print('looking')\nprint(get_exchange_rate('USD', 'EUR'))\n"
        "print(get_exchange_rate('USD', 'GBP'))\n```",
        "100 USD is 92 EUR or 79 GBP.",
    ],
    "plan": [
        "```plan\neur = get_exchange_rate(base='USD', target='EUR')\n"
        "gbp = get_exchange_rate(base='USD', target='GBP')\n```",
        "100 USD is 92 EUR or 79 GBP.",
    ],
}


def _stable(value: Any) -> Any:
    """A result's dict without the wall-clock fields, which differ between any two runs."""
    if isinstance(value, dict):
        return {
            k: _stable(v) for k, v in value.items() if k not in ("duration_s", "started_at", "t")
        }
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


@pytest.fixture(scope="module")
def sandbox() -> Any:
    with Sandbox() as sb:
        yield sb


def _agent(convention: str, sandbox: Sandbox, *, chunk: int | None = 5, **options: Any) -> Agent:
    model = ScriptedModel(REPLIES[convention], chunk=chunk)
    chosen: str | TextConvention = (
        TextConvention(format="react") if convention == "react" else convention
    )
    return Agent(model, [get_exchange_rate], convention=chosen, sandbox=sandbox, **options)


@pytest.mark.parametrize("convention", ["json", "text", "code", "react", "plan"])
async def test_the_streamed_result_is_the_result_run_returns(
    convention: str, sandbox: Sandbox, tmp_path: Path
) -> None:
    ran = await _agent(convention, sandbox, trace=tmp_path / "ran.jsonl").arun("Convert 100 USD")
    streamed = [
        e
        async for e in _agent(convention, sandbox, trace=tmp_path / "st.jsonl").stream(
            "Convert 100 USD"
        )
    ]

    done = streamed[-1]
    assert isinstance(done, DoneEvent)
    assert done.result.status == "completed"
    assert _stable(done.result.to_dict()) == _stable(ran.to_dict())
    assert {e.kind for e in streamed} <= KINDS
    assert [e.kind for e in streamed].count("done") == 1
    # the trace of a streamed run is the trace of a run
    assert _stable(list(read_trace(tmp_path / "st.jsonl"))) == _stable(
        list(read_trace(tmp_path / "ran.jsonl"))
    )
    # the text pieces of each round are the assistant's message
    replies = [m.content or "" for m in ran.messages if m.role == "assistant"]
    for number, reply in enumerate(replies, start=1):
        pieces = [e.text for e in streamed if isinstance(e, TextEvent) and e.round == number]
        assert "".join(pieces) == reply
    # every executed or refused call starts, then ends, and each round ends once, in order
    ended = [e.record for e in streamed if isinstance(e, CallEndEvent)]
    assert sorted(r.id for r in ended) == sorted(r.id for r in [*ran.calls, *ran.rejected])
    assert [e.round for e in streamed if isinstance(e, RoundEndEvent)] == list(
        range(1, ran.rounds + 1)
    )
    usages = [e.usage for e in streamed if isinstance(e, RoundEndEvent)]
    assert usages == list(ran.usage.rounds)


async def test_json_calls_start_with_their_name_before_their_arguments_have_arrived(
    sandbox: Sandbox,
) -> None:
    events = [e async for e in _agent("json", sandbox, chunk=3).stream("Convert 100 USD")]
    kinds = [e.kind for e in events]
    assert kinds == [
        "call_start",
        "call_end",
        "round_end",
        "call_start",
        "call_start",
        "call_end",
        "call_end",
        "round_end",
        *["text"] * len(events[8:-2]),
        "round_end",
        "done",
    ]
    starts = [e for e in events if isinstance(e, CallStartEvent)]
    assert [(s.id, s.name, s.round, s.index) for s in starts] == [
        ("c1", "get_exchange_rate", 1, 0),
        ("c2", "get_exchange_rate", 2, 0),
        ("c3", "get_exchange_rate", 2, 1),
    ]
    first_end = events[1]
    assert isinstance(first_end, CallEndEvent)
    assert first_end.record.id == "c1" and "traget" in (first_end.record.to_dict()["error"] or "")


def test_stream_sync_gives_the_events_stream_gives(sandbox: Sandbox) -> None:
    events = list(_agent("json", sandbox).stream_sync("Convert 100 USD"))
    again = asyncio.run(_collect(_agent("json", sandbox)))
    assert [e.kind for e in events] == [e.kind for e in again]
    last = events[-1]
    assert isinstance(last, DoneEvent) and last.result.answer == "100 USD is 92 EUR or 79 GBP."


async def _collect(agent: Agent) -> list[StreamEvent]:
    return [e async for e in agent.stream("Convert 100 USD")]


async def test_stream_sync_refuses_a_running_event_loop(sandbox: Sandbox) -> None:
    from tooluse import UsageError

    with pytest.raises(UsageError, match="stream_sync"):
        _agent("json", sandbox).stream_sync("Convert")


# --- stopping early ------------------------------------------------------------------------


def _blocking_agent(gate: threading.Event, started: threading.Event | None = None) -> Agent:
    @tool
    def wait_for_operator() -> str:
        """Wait until an operator answers."""
        if started is not None:
            started.set()
        gate.wait(30)
        return "answered"

    model = ScriptedModel(
        [
            {"tool_calls": [_call("c1", "get_exchange_rate", {"base": "USD", "target": "EUR"})]},
            {"tool_calls": [_call("c2", "wait_for_operator", {})]},
            {"content": "never reached"},
        ],
        chunk=4,
    )
    return Agent(model, [get_exchange_rate, wait_for_operator], limits=Limits(tool_timeout=30))


def _assert_partial(result: RunResult, *, replied: bool | None = False) -> None:
    """The first call is kept; the second reply too if it had fully arrived (None: either)."""
    assert result.status == "cancelled" and result.error == "the run was cancelled"
    assert [c.id for c in result.calls] == ["c1"]
    roles = [m.role for m in result.messages]
    if replied is None:
        replied = len(roles) == 4
    assert roles == ["user", "assistant", "tool"] + (["assistant"] if replied else [])
    assert len(result.usage.rounds) == (2 if replied else 1)


async def test_leaving_the_loop_early_cancels_the_run_and_keeps_its_records() -> None:
    gate = threading.Event()
    stream = _blocking_agent(gate).stream("Ask the operator.")
    seen = []
    try:
        async for event in stream:
            seen.append(event)
            if isinstance(event, CallStartEvent) and event.name == "wait_for_operator":
                break
        result = await stream.aclose()
    finally:
        gate.set()
    _assert_partial(result)
    assert stream.result is result
    assert [e.kind for e in seen] == ["call_start", "call_end", "round_end", "call_start"]


async def test_a_stream_left_in_an_async_with_block_is_closed_on_the_way_out() -> None:
    gate = threading.Event()
    try:
        async with _blocking_agent(gate).stream("Ask the operator.") as stream:
            async for event in stream:
                if isinstance(event, CallStartEvent) and event.name == "wait_for_operator":
                    break
    finally:
        gate.set()
    assert stream.result is not None
    _assert_partial(stream.result)


@pytest.mark.filterwarnings("ignore:wait_for_operator is still running")
async def test_cancelling_the_consuming_task_carries_the_partial_result() -> None:
    gate = threading.Event()
    started = threading.Event()

    async def consume() -> None:
        async for _ in _blocking_agent(gate, started).stream("Ask the operator."):
            pass

    task = asyncio.create_task(consume())
    try:
        await asyncio.to_thread(started.wait, 30)  # the tool runs: the reply is recorded
        task.cancel()
        with pytest.raises(asyncio.CancelledError) as raised:
            await task
    finally:
        gate.set()
    _assert_partial(raised.value.result, replied=True)  # type: ignore[attr-defined]


@pytest.mark.filterwarnings("ignore:wait_for_operator is still running")
def test_breaking_out_of_stream_sync_cancels_the_run_and_leaves_no_thread_behind() -> None:
    gate = threading.Event()
    before = set(threading.enumerate())
    agent = _blocking_agent(gate)
    events = agent.stream_sync("Ask the operator.")
    for event in events:
        if isinstance(event, CallStartEvent) and event.name == "wait_for_operator":
            break
    result = events.close()  # what dropping the iterator does, made certain
    gate.set()
    # Between two events asked for, the run may have taken the reply in whole.
    _assert_partial(result, replied=None)
    assert events.result is result
    # the abandoned call's worker ends once its tool returns; nothing else is left
    deadline = time.monotonic() + 10
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert set(threading.enumerate()) - before == set()


# A script that notes twice, then waits for the operator: its notes' ends are streamed
# while it runs, before the stream is left.
NOTE_THEN_WAIT = (
    "```python\nfrom tools import note, wait_for_operator\n"
    "note(text='a')\nnote(text='b')\nwait_for_operator()\n```"
)


def _noting_agent(
    noted: list[str], gate: threading.Event, replies: list[Any], **options: Any
) -> Agent:
    @tool(side_effects=True)
    def note(text: str) -> str:
        """Keep a note.

        Args:
            text: what to note
        """
        noted.append(text)
        return "noted"

    @tool
    def wait_for_operator() -> str:
        """Wait until an operator answers."""
        gate.wait(60)
        return "answered"

    return Agent(
        ScriptedModel(replies),
        [note, wait_for_operator],
        convention="code" if isinstance(replies[0], str) else "json",
        max_rounds=len(replies),
        **options,
    )


def _until_the_wait(events: Any) -> list[str]:
    """Take events up to the operator call's start; the ids of the calls seen ending."""
    ended = []
    for event in events:
        if isinstance(event, CallEndEvent):
            ended.append(event.id)
        if isinstance(event, CallStartEvent) and event.name == "wait_for_operator":
            break
    return ended


@pytest.mark.filterwarnings("ignore:wait_for_operator is still running")
def test_closing_stream_sync_keeps_the_calls_it_reported_ended(tmp_path: Path) -> None:
    noted: list[str] = []
    gate = threading.Event()
    replies: list[Any] = [NOTE_THEN_WAIT, "never reached"]
    with _noting_agent(noted, gate, replies, trace=tmp_path / "run.jsonl") as agent:
        events = agent.stream_sync("Note, then ask the operator.")
        try:
            ended = _until_the_wait(events)
            result = events.close()
        finally:
            gate.set()
    assert noted == ["a", "b"] and len(ended) == 2
    assert result.status == "cancelled"
    assert [c.id for c in result.calls if c.ok] == ended
    traced = [e["id"] for e in read_trace(tmp_path / "run.jsonl") if e["event"] == "call"]
    assert traced == [c.id for c in result.calls]


@pytest.mark.filterwarnings("ignore:wait_for_operator is still running")
async def test_closing_a_stream_keeps_the_calls_it_reported_ended(tmp_path: Path) -> None:
    noted: list[str] = []
    gate = threading.Event()
    replies: list[Any] = [NOTE_THEN_WAIT, "never reached"]
    with _noting_agent(noted, gate, replies, trace=tmp_path / "run.jsonl") as agent:
        stream = agent.stream("Note, then ask the operator.")
        ended = []
        try:
            async for event in stream:
                if isinstance(event, CallEndEvent):
                    ended.append(event.id)
                if isinstance(event, CallStartEvent) and event.name == "wait_for_operator":
                    break
            result = await stream.aclose()
        finally:
            gate.set()
    assert noted == ["a", "b"] and len(ended) == 2
    assert result.status == "cancelled"
    assert [c.id for c in result.calls if c.ok] == ended
    traced = [e["id"] for e in read_trace(tmp_path / "run.jsonl") if e["event"] == "call"]
    assert traced == [c.id for c in result.calls]


async def test_a_held_stream_left_by_break_runs_nothing_more() -> None:
    noted: list[str] = []
    replies: list[Any] = [
        {"tool_calls": [_call(f"c{n}", "note", {"text": str(n)})]} for n in range(10)
    ]
    stream = _noting_agent(noted, threading.Event(), [*replies, {"content": "done"}]).stream(
        "Note ten times."
    )
    async for event in stream:
        if isinstance(event, CallEndEvent):
            break  # the stream is still held: nothing drops it
    # The consumer goes on with other work, the event loop turning meanwhile.
    await asyncio.to_thread(threading.Event().wait, 0)
    result = await stream.aclose()
    assert noted == ["0"]
    assert result.status == "cancelled"
    assert [c.id for c in result.calls] == ["c0"]


def _processes_of(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        count += int(line.split()[1]) == uid
                        break
        except OSError:
            continue
    return count


def _settled(uid: int, expected: int) -> int:
    deadline = time.monotonic() + 10
    count = _processes_of(uid)
    while count != expected and time.monotonic() < deadline:
        time.sleep(0.02)
        count = _processes_of(uid)
    return count


async def test_script_output_arrives_while_the_script_runs_and_leaving_kills_it() -> None:
    script = (
        "```python\nimport time\nfrom tools import get_exchange_rate\n"
        "print(get_exchange_rate('USD', 'EUR'))\nprint('working', flush=True)\n"
        "time.sleep(60)\nprint('never')\n```"
    )
    model = ScriptedModel([script, "never reached"], chunk=7)
    with Sandbox() as sandbox:
        await sandbox.execute("pass")
        uid = sandbox.uid
        # bwrap, its reaper, the server, and one monitor + worker pair forked ahead
        idle = 5
        agent = Agent(model, [get_exchange_rate], convention="code", sandbox=sandbox)
        stream = agent.stream("Convert")
        lines = []
        async for event in stream:
            if isinstance(event, ScriptOutputEvent):
                lines.append(event.line)
                if event.line == "working":
                    break
        result = await stream.aclose()
        assert lines == ["0.92", "working"]
        assert result.status == "cancelled"
        assert [m.role for m in result.messages] == ["system", "user", "assistant"]
        if uid is not None:
            assert _settled(uid, idle) == idle, "the script's processes were left behind"


def test_a_scripts_calls_start_and_end_as_events_while_it_runs() -> None:
    script = (
        "```python\nimport tools\n"
        "print(tools.get_exchange_rate(base='USD', target='EUR'))\n"
        "print(tools.parallel(tools.get_exchange_rate, "
        "[{'base': 'USD', 'target': 'GBP'}, {'base': 'USD', 'target': 'XXX'}]))\n```"
    )
    model = ScriptedModel([{"content": script}, {"content": "done"}])
    with Agent(model, [get_exchange_rate], convention="code") as agent:
        events = list(agent.stream_sync("Convert"))
    result = events[-1].result  # type: ignore[union-attr]
    kinds = [e.kind for e in events]
    begun = kinds.index("script_start")
    ended = kinds.index("script_end")
    starts = [e for e in events if isinstance(e, CallStartEvent)]
    ends = [e for e in events if isinstance(e, CallEndEvent)]
    # Every call the script made, once each, between the script's start and end.
    assert sorted(e.id or "" for e in starts) == sorted(c.id for c in result.calls)
    assert sorted(e.id for e in ends) == sorted(c.id for c in result.calls)
    assert all(begun < events.index(e) < ended for e in [*starts, *ends])
    for start in starts:
        end = next(e for e in ends if e.id == start.id)
        assert events.index(start) < events.index(end)
    assert [e.record.ok for e in ends if isinstance(e.record, type(result.calls[0]))].count(
        False
    ) == 1


# --- context and approvals -----------------------------------------------------------------


@tool
def read_page(n: int) -> str:
    """Read one page of the manual.

    Args:
        n: the page number
    """
    return f"page {n}: " + "lorem ipsum dolor sit amet " * 40


def test_context_moves_by_the_harness_and_by_the_agent_are_events() -> None:
    replies: list[Any] = [
        {"tool_calls": [_call("c1", "read_page", {"n": 1})]},
        {"tool_calls": [_call("c2", "read_page", {"n": 2})]},
        {"tool_calls": [_call("c3", "context_offload", {"span_ids": ["m2", "m3"]})]},
        *[{"tool_calls": [_call(f"c{n}", "read_page", {"n": n})]} for n in range(4, 12)],
        {"content": "done"},
    ]
    policy = ContextPolicy(budget=2_500)
    agent = Agent(ScriptedModel(replies), [read_page], context=policy, max_rounds=20)
    events = list(agent.stream_sync("Read the manual."))
    result = events[-1].result  # type: ignore[union-attr]
    assert result.status == "completed"
    moves = [e for e in events if isinstance(e, ContextEvent)]
    assert (moves[0].action, moves[0].by, moves[0].ids, moves[0].round) == (
        "offload",
        "agent",
        ("m2", "m3"),
        3,
    )
    by_harness = [m for m in moves if m.by == "harness"]
    assert by_harness and all(m.action == "offload" and m.ids for m in by_harness)


def test_a_deferred_call_is_an_approval_event_and_the_run_stops_for_it(sandbox: Sandbox) -> None:
    ask_all = ApprovalPolicy(lambda request: Approval.defer("ask the user"), asks="all")
    agent = _agent("json", sandbox, approval=ask_all)
    events = list(agent.stream_sync("Convert 100 USD"))
    waiting = [e for e in events if isinstance(e, ApprovalEvent)]
    assert len(waiting) == 1
    # c1 was refused for its arguments before any policy saw it
    assert [r.call_id for r in waiting[0].requests] == ["c2", "c3"]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.status == "needs_approval"
    assert [p.call_id for p in result.pending] == ["c2", "c3"]
    assert [e.kind for e in events] == [
        "call_start",
        "call_end",
        "round_end",
        "call_start",
        "call_start",
        "approval",
        "round_end",
        "done",
    ]


# --- one vocabulary: the stream's events are the trace's -----------------------------------

#: The trace tags of the events both a stream and a trace have.
SHARED = {"call", "rejected", "script", "context_offload", "context_compress", "approval_needed"}


def _shared_lines(path: Path) -> list[dict[str, Any]]:
    return [line for line in read_trace(path) if line["event"] in SHARED]


def test_the_streams_ends_moves_and_approvals_are_the_traces_own_events(tmp_path: Path) -> None:
    replies: list[Any] = [
        {"tool_calls": [_call("c1", "read_page", {"n": 1})]},
        {"tool_calls": [_call("c2", "read_page", {"page": 2})]},  # refused: no such argument
        {"tool_calls": [_call("c3", "context_offload", {"span_ids": ["m2", "m3"]})]},
        *[{"tool_calls": [_call(f"c{n}", "read_page", {"n": n})]} for n in range(4, 12)],
        {"content": "done"},
    ]
    agent = Agent(
        ScriptedModel(replies),
        [read_page],
        context=ContextPolicy(budget=2_500),
        max_rounds=20,
        trace=tmp_path / "run.jsonl",
    )
    events = list(agent.stream_sync("Read the manual."))
    shared = [e for e in events if e.to_dict()["event"] in SHARED]
    # The very events, made once: their dict forms, times included, are the trace's lines.
    assert [json.loads(json.dumps(e.to_dict())) for e in shared] == _shared_lines(
        tmp_path / "run.jsonl"
    )
    assert {e.to_dict()["event"] for e in shared} == {
        "call",
        "rejected",
        "context_offload",
    }
    moved = [e.to_dict() for e in shared if e.to_dict()["event"] == "context_offload"]
    assert {"by": "agent", "ids": ["m2", "m3"], "round": 3, "call_id": "c3"}.items() <= moved[
        0
    ].items()


def _compressing_agent(**options: Any) -> Agent:
    replies: list[Any] = [
        {"tool_calls": [_call("c1", "read_page", {"n": 1})]},
        {"tool_calls": [_call("c2", "read_page", {"n": 2})]},
        {
            "tool_calls": [
                _call("c3", "context_compress", {"span_ids": ["m2", "m3"], "summary": "page 1"})
            ]
        },
        {"content": "done"},
    ]
    policy = ContextPolicy(budget=50_000)
    return Agent(ScriptedModel(replies), [read_page], context=policy, **options)


def test_the_agents_compress_is_a_context_compress_event_in_the_trace_and_the_stream(
    tmp_path: Path,
) -> None:
    from tooluse.events import ContextCompress

    ran = _compressing_agent(trace=tmp_path / "ran.jsonl").run("Read two pages.")
    assert ran.status == "completed" and ran.calls[-1].ok
    compressed = {"by": "agent", "ids": ["m2", "m3"], "round": 3, "call_id": "c3"}
    (line,) = [e for e in read_trace(tmp_path / "ran.jsonl") if e["event"] == "context_compress"]
    assert {k: line[k] for k in compressed} == compressed

    events = list(_compressing_agent(trace=tmp_path / "st.jsonl").stream_sync("Read two pages."))
    (event,) = [e for e in events if isinstance(e, ContextCompress)]
    assert (event.by, event.ids, event.round, event.call_id) == ("agent", ("m2", "m3"), 3, "c3")
    assert event.kind == "context" and event.action == "compress"
    (again,) = [e for e in read_trace(tmp_path / "st.jsonl") if e["event"] == "context_compress"]
    assert again == json.loads(json.dumps(event.to_dict()))


def test_a_script_paused_for_approval_ends_paused_in_the_stream_and_the_trace(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    from tooluse.events import ScriptEnd

    script = (
        "```python\nfrom tools import get_exchange_rate\n"
        "print('asking')\nprint(get_exchange_rate('USD', 'EUR'))\n```"
    )
    ask_all = ApprovalPolicy(lambda request: Approval.defer("ask the user"), asks="all")
    agent = Agent(
        ScriptedModel([script, "never reached"]),
        [get_exchange_rate],
        convention="code",
        sandbox=sandbox,
        approval=ask_all,
        trace=tmp_path / "run.jsonl",
    )
    events = list(agent.stream_sync("Convert"))
    result = events[-1].result  # type: ignore[union-attr]
    assert result.status == "needs_approval" and result.scripts == []
    (ended,) = [e for e in events if isinstance(e, ScriptEnd)]
    assert ended.status == "paused" and ended.record is None
    assert [e.kind for e in events][-4:] == ["approval", "script_end", "round_end", "done"]
    tags = [line["event"] for line in read_trace(tmp_path / "run.jsonl")]
    assert tags[-4:] == ["approval_needed", "script", "paused", "run_end"]
    (line,) = [line for line in read_trace(tmp_path / "run.jsonl") if line["event"] == "script"]
    assert line == json.loads(json.dumps(ended.to_dict()))


async def test_a_stream_read_from_task_after_task_is_one_run(sandbox: Sandbox) -> None:
    # Each event asked for by a task of its own: what the convention learnt of the run
    # when it started (its tools) still holds when the reply is read.
    stream = _agent("code", sandbox).stream("Convert 100 USD")
    events = []
    while True:
        try:
            events.append(await asyncio.create_task(_next(stream)))
        except StopAsyncIteration:
            break
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.result.status == "completed"
    assert done.result.answer == "100 USD is 92 EUR or 79 GBP."


async def _next(stream: Any) -> Any:
    return await stream.__anext__()
