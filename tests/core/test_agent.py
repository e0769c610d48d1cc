"""The agent loop end to end with a scripted model and real tools."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from examples.seed_tools import toolbox as seed_tools
from tooluse import (
    Agent,
    CallRecord,
    Limits,
    Message,
    ModelServerError,
    RejectedCall,
    RunResult,
    ToolCall,
    UsageError,
    read_trace,
    tool,
)
from tooluse.models import Model, ModelRequest, ModelResponse, ScriptedModel
from tooluse.run._loop import UNMADE_CALL_NOTE, UNMADE_RETRY_NOTE

HOTEL = Path(__file__).resolve().parents[2] / "examples" / "hotel.jsonl"


def calls(*items: tuple[str, Any], prefix: str = "c") -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": f"{prefix}{i}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for i, (name, args) in enumerate(items, start=1)
        ]
    }


def assert_invariant(result: RunResult) -> None:
    """Every tool message answers exactly one call the runtime recorded, with its content."""
    records: dict[str, CallRecord | RejectedCall] = {}
    for record in [*result.calls, *result.rejected]:
        assert record.id not in records, f"call id {record.id} recorded twice"
        records[record.id] = record
    tool_messages = [m for m in result.messages if m.role == "tool"]
    answered = [m.tool_call_id for m in tool_messages]
    assert len(answered) == len(set(answered)), "a call was answered twice"
    assert set(answered) == set(records), "tool messages and records differ"
    for message in tool_messages:
        assert message.tool_call_id is not None
        assert message.content == records[message.tool_call_id].content
    requested = [c.id for m in result.messages if m.role == "assistant" for c in m.tool_calls]
    assert sorted(requested) == sorted(answered), "a requested call got no answer"


def test_hotel_trace_validator_catches_the_typo_and_the_model_corrects_itself() -> None:
    model = ScriptedModel.from_file(HOTEL)
    result = Agent(model, seed_tools, max_rounds=8).run("Convert 100 USD to EUR")
    assert result.status == "completed"
    assert result.answer is not None and "7.00 EUR to spare" in result.answer
    (rejected,) = result.rejected
    assert rejected.name == "get_exchange_rate" and rejected.round == 1
    assert "unknown argument 'traget' (did you mean 'target'?)" in rejected.error
    # what the model was shown in round 2 is exactly that error
    shown = model.requests[1].messages[-1]
    assert shown.role == "tool" and shown.content == "Error: " + rejected.error
    assert [(c.name, c.result) for c in result.calls] == [
        ("get_exchange_rate", 0.92),
        ("calculator", 7.0),
    ]
    assert_invariant(result)


def test_parallel_calls_with_failures_keep_every_sibling() -> None:
    @tool(timeout=0.2)
    def slow() -> str:
        """Too slow."""
        import time

        time.sleep(2)
        return "late"

    box = seed_tools.merged()
    box.add(slow)
    model = ScriptedModel(
        [
            calls(
                ("lookup_capital", {"country": "Japan"}),
                ("lookup_capital", {"country": "Atlantis"}),
                ("slow", {}),
                ("calculator", {"expression": 5}),
                ("nope", {}),
                ("get_current_weather", {"location": "Paris"}),
            ),
            {"content": "done"},
        ]
    )
    result = Agent(model, box).run("several things at once")
    assert result.status == "completed"
    assert [c.name for c in result.calls] == [
        "lookup_capital",
        "lookup_capital",
        "slow",
        "get_current_weather",
    ]
    assert result.calls[0].result == "Tokyo"
    assert "unknown country 'Atlantis'" in (result.calls[1].error or "")
    assert "timed out" in (result.calls[2].error or "")
    assert result.calls[3].result["conditions"] == "partly cloudy"
    assert {r.name for r in result.rejected} == {"calculator", "nope"}
    assert_invariant(result)


def test_max_rounds_is_a_hard_stop_that_keeps_the_state() -> None:
    model = ScriptedModel(
        lambda messages: calls(("calculator", {"expression": f"{len(messages)}"}))
    )
    result = Agent(model, seed_tools, max_rounds=3, limits=Limits(cycle_limit=None)).run(
        "loop forever"
    )
    assert result.status == "max_rounds" and result.rounds == 3
    assert len(result.calls) == 3 and result.answer is None
    assert "3 rounds" in (result.error or "")
    assert len(result.usage.rounds) == 3
    assert_invariant(result)


def test_cycles_get_a_note_then_end_the_run() -> None:
    model = ScriptedModel(lambda messages: calls(("lookup_capital", {"country": "France"})))
    result = Agent(model, seed_tools, max_rounds=20, limits=Limits(cycle_limit=5)).run("capital?")
    assert result.status == "cycle"
    assert len(result.calls) == 5
    notes = [
        m.content
        for m in result.messages
        if m.role == "user" and "same result" in (m.content or "")
    ]
    assert len(notes) == 2  # after the 3rd and 4th identical results
    assert "lookup_capital was called 5 times" in (result.error or "")
    assert_invariant(result)


def test_model_sees_tools_and_conversation() -> None:
    model = ScriptedModel([{"content": "hi"}])
    Agent(model, seed_tools, system_prompt="Be brief.").run("hello")
    (request,) = model.requests
    assert [m.role for m in request.messages] == ["system", "user"]
    assert [t.name for t in request.tools] == seed_tools.names
    assert [m.id for m in request.messages] == ["m1", "m2"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ({"content": None}, "Your last reply was empty"),
        ({"content": "   "}, "Your last reply was empty"),
        ({"tool_calls": "get_weather"}, "tool_calls must be a list"),
        ({"tool_calls": [{"id": "x"}]}, "has no 'function' object"),
        ({"tool_calls": [42]}, "is not an object"),
    ],
)
def test_malformed_reply_shapes_become_feedback(reply: dict[str, Any], expected: str) -> None:
    model = ScriptedModel([reply, {"content": "recovered"}])
    result = Agent(model, seed_tools).run("task")
    assert result.status == "completed" and result.answer == "recovered"
    feedback = model.requests[1].messages[-1]
    assert feedback.role == "user" and expected in (feedback.content or "")


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("lookup_capital", '{"country": "France"', "not valid JSON"),
        ("lookup_capital", '["France"]', "must be a JSON object"),
        ("", '{"country": "France"}', "has no tool name"),
        ("lookup_capital", '{"country": "' + "x" * 10_000_000 + '"}', "the limit is 1,000,000"),
    ],
)
def test_malformed_calls_are_rejected_with_a_precise_error(
    name: str, arguments: str, expected: str
) -> None:
    model = ScriptedModel([calls((name, arguments)), {"content": "ok"}])
    result = Agent(model, seed_tools).run("task")
    assert result.status == "completed"
    (rejected,) = result.rejected
    assert expected in rejected.error
    assert len(rejected.arguments) < 400  # the raw text is kept, cut, not copied whole
    assert_invariant(result)


def test_thousands_of_calls_in_one_turn_are_bounded() -> None:
    many = calls(*[("lookup_capital", {"country": "France"})] * 3000)
    model = ScriptedModel([many, {"content": "ok"}])
    result = Agent(model, seed_tools, limits=Limits(max_calls_per_turn=100, cycle_limit=None)).run(
        "task"
    )
    assert result.status == "completed"
    assert len(result.calls) == 100 and len(result.rejected) == 2900
    assert "at most 100 run per turn" in result.rejected[0].error
    assert_invariant(result)


def test_model_failure_ends_the_run_with_error_and_keeps_what_was_recorded() -> None:
    class Flaky(Model):
        name = "flaky"

        def __init__(self) -> None:
            self.n = 0

        async def respond(self, request: ModelRequest) -> ModelResponse:
            self.n += 1
            if self.n == 1:
                return ModelResponse(
                    tool_calls=[ToolCall("k1", "lookup_capital", '{"country": "Kenya"}')]
                )
            raise ModelServerError("503 from the server after 4 attempts")

    result = Agent(Flaky(), seed_tools).run("task")
    assert result.status == "error"
    assert result.error == "ModelServerError: 503 from the server after 4 attempts"
    assert [c.result for c in result.calls] == ["Nairobi"]


def test_a_backend_bug_does_not_crash_the_host() -> None:
    def broken(messages: Sequence[Message]) -> dict[str, Any]:
        raise KeyError("internal")

    result = Agent(ScriptedModel(broken), seed_tools).run("task")
    assert result.status == "error" and "KeyError" in (result.error or "")


def test_running_out_of_script_is_a_clear_error() -> None:
    result = Agent(
        ScriptedModel([calls(("lookup_capital", {"country": "Japan"}))]), seed_tools
    ).run("t")
    assert result.status == "error"
    assert "no reply left" in (result.error or "")
    assert len(result.calls) == 1


def test_usage_per_round_prefers_the_provider() -> None:
    model = ScriptedModel(
        [
            {
                **calls(("lookup_capital", {"country": "Japan"})),
                "usage": {"input_tokens": 100, "output_tokens": 7},
            },
            {"content": "Tokyo", "usage": {"input_tokens": 130, "output_tokens": 3}},
        ]
    )
    result = Agent(model, seed_tools).run("capital of Japan?")
    assert [(u.input_tokens, u.output_tokens) for u in result.usage.rounds] == [(100, 7), (130, 3)]
    assert result.usage.input_tokens == 230 and result.usage.source == "provider"


def test_offline_token_counts_grow_with_the_conversation() -> None:
    result = Agent(ScriptedModel.from_file(HOTEL), seed_tools).run("Convert 100 USD to EUR")
    inputs = [u.input_tokens for u in result.usage.rounds]
    assert result.usage.source == "o200k"
    assert inputs == sorted(inputs) and inputs[0] > 300  # the tool schemas are counted


def test_run_inside_an_event_loop_points_to_arun() -> None:
    async def inner() -> None:
        Agent(ScriptedModel([{"content": "x"}]), seed_tools).run("t")

    import asyncio

    with pytest.raises(UsageError, match="arun"):
        asyncio.run(inner())


async def test_arun() -> None:
    result = await Agent(ScriptedModel([{"content": "x"}]), seed_tools).arun("t")
    assert result.answer == "x"


def test_trace_records_every_event_and_replays(tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"
    first = Agent(ScriptedModel.from_file(HOTEL), seed_tools, trace=trace).run("Convert")
    events = list(read_trace(trace))
    kinds = [e["event"] for e in events]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert kinds.count("model_request") == kinds.count("model_response") == 4
    assert kinds.count("call") == 2 and kinds.count("rejected") == 1
    call_event = next(e for e in events if e["event"] == "call")
    assert {"arguments", "result", "error", "duration_s"} <= set(call_event)
    assert events[-1]["status"] == "completed"
    replayed = Agent(ScriptedModel.from_file(trace), seed_tools).run("Convert")
    assert replayed.answer == first.answer
    assert [c.to_dict()["arguments"] for c in replayed.calls] == [
        c.to_dict()["arguments"] for c in first.calls
    ]


def test_repeated_call_ids_are_made_unique() -> None:
    same_id = {
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "lookup_capital", "arguments": '{"country": "Japan"}'},
            },
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "lookup_capital", "arguments": '{"country": "France"}'},
            },
        ]
    }
    result = Agent(ScriptedModel([same_id, same_id, {"content": "ok"}]), seed_tools).run("t")
    assert [c.id for c in result.calls] == ["call_0", "call_0~2", "call_0~3", "call_0~4"]
    assert [c.result for c in result.calls] == ["Tokyo", "Paris", "Tokyo", "Paris"]
    assert_invariant(result)


def test_history_continues_a_conversation() -> None:
    model = ScriptedModel(
        [
            calls(("lookup_capital", {"country": "Japan"})),
            {"content": "Tokyo."},
            calls(("get_current_weather", {"location": "Tokyo"})),
            {"content": "Clear, 22 °C."},
        ]
    )
    agent = Agent(model, seed_tools, system_prompt="Be brief.")
    first = agent.run("Capital of Japan?")
    second = agent.run("And its weather?", history=first.messages)
    assert second.status == "completed" and second.answer == "Clear, 22 °C."
    shown = model.requests[2].messages
    assert [m.role for m in shown] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert [m.content for m in shown if m.role == "system"] == ["Be brief."]
    assert [c.name for c in second.calls] == ["get_current_weather"]  # only this turn's calls
    new_tool_messages = [m for m in second.messages[len(first.messages) :] if m.role == "tool"]
    assert [m.tool_call_id for m in new_tool_messages] == [c.id for c in second.calls]


def test_tool_choice_holds_until_a_call_has_run_then_the_model_chooses() -> None:
    @tool
    def ping(n: int) -> int:
        """Echo n."""
        return n

    model = ScriptedModel(
        [
            {"tool_calls": [{"id": "c1", "function": {"name": "nope", "arguments": "{}"}}]},
            {"tool_calls": [{"id": "c2", "function": {"name": "ping", "arguments": '{"n": 1}'}}]},
            "done",
        ]
    )
    result = Agent(model, [ping], tool_choice="ping").run("go")
    assert result.status == "completed" and [c.result for c in result.calls] == [1]
    # A refused call is not a call that ran: the choice still holds after it.
    assert [r.tool_choice for r in model.requests] == ["ping", "ping", "auto"]
    assert {r.parallel_tool_calls for r in model.requests} == {None}
    single = ScriptedModel(["done"])
    Agent(single, [ping], parallel_tool_calls=False).run("go")
    assert single.requests[0].parallel_tool_calls is False


def test_tool_choice_is_checked_when_the_agent_is_made() -> None:
    @tool
    def ping(n: int) -> int:
        """Echo n."""
        return n

    with pytest.raises(UsageError, match="names no tool"):
        Agent(ScriptedModel([]), [ping], tool_choice="pong")
    with pytest.raises(UsageError, match="passes tools natively"):
        Agent(ScriptedModel([]), [ping], convention="code", tool_choice="required")


def test_a_refused_oversized_argument_is_not_sent_again_every_round() -> None:
    @tool
    def save(text: str) -> str:
        """Save a text.

        Args:
            text: what to save
        """
        return "saved"

    huge = json.dumps({"text": "x" * 3_000_000})
    model = ScriptedModel(
        [calls(("save", huge)), calls(("save", {"text": "summary"}), prefix="d"), "Saved."]
    )
    result = Agent(model, [save]).run("Save the report.")

    assert result.status == "completed" and [c.arguments for c in result.calls] == [
        {"text": "summary"}
    ]
    (refused,) = result.rejected
    assert "arguments are 3,000,012 bytes; the limit is 1,000,000" in refused.error
    for request in model.requests[1:]:
        (echoed,) = request.messages[1].tool_calls
        assert echoed.id == "c1" and len(echoed.arguments) < 1_100
        assert echoed.arguments.startswith('{"text": "xxx')
        assert echoed.arguments.endswith(
            "... [2,999,012 characters cut: the arguments were over the size limit]"
        )
        # the model is told why the call was refused
        assert request.messages[2].content == f"Error: {refused.error}"
    assert result.messages[1].tool_calls[0].arguments == echoed.arguments
    assert_invariant(result)


def test_a_first_answer_that_describes_a_call_is_told_once_and_the_next_round_asks_for_one() -> (
    None
):
    model = ScriptedModel(
        [
            "You can use the `get_exchange_rate` function; the rate is about 0.85.",
            calls(("get_exchange_rate", {"base": "USD", "target": "EUR"})),
            "100 USD is 92 EUR.",
        ]
    )
    result = Agent(model, seed_tools).run("Convert 100 USD to EUR")
    assert result.status == "completed" and result.answer == "100 USD is 92 EUR."
    assert [c.result for c in result.calls] == [0.92]
    # The described call stays in the conversation, followed by the note.
    described, note = result.messages[1], result.messages[2]
    assert described.role == "assistant" and "0.85" in (described.content or "")
    assert note.role == "user" and note.content == UNMADE_CALL_NOTE.format(name="get_exchange_rate")
    assert [r.tool_choice for r in model.requests] == ["auto", "required", "auto"]


@pytest.mark.parametrize(
    "answer",
    [
        "Use a calculator: 2 + 2 is 4.",  # the word, not the tool written as code
        "Tokyo is the capital of Japan.",
    ],
)
def test_an_answer_that_does_not_name_a_tool_as_code_is_final(answer: str) -> None:
    model = ScriptedModel([answer])
    result = Agent(model, seed_tools).run("question")
    assert result.status == "completed" and result.answer == answer
    assert len(model.requests) == 1


def test_the_unmade_call_note_comes_once_and_never_in_the_last_round() -> None:
    described = "I would call calculator(expression='2+2') and get 4."
    twice = ScriptedModel([described, described])
    result = Agent(twice, seed_tools).run("2+2?")
    assert result.status == "completed" and result.answer == described
    assert len(twice.requests) == 2
    # With one round there is no round left for the call: the answer stands.
    last = ScriptedModel([described])
    result = Agent(last, seed_tools, max_rounds=1).run("2+2?")
    assert result.status == "completed" and result.answer == described
    # After a tool has run, a reply naming one is an answer about the results.
    after = ScriptedModel(
        [calls(("calculator", {"expression": "2+2"})), "calculator(...) returned 4.0"]
    )
    result = Agent(after, seed_tools).run("2+2?")
    assert result.answer == "calculator(...) returned 4.0" and len(after.requests) == 2


def test_a_corrected_call_written_into_an_answer_after_an_error_gets_a_note_once() -> None:
    # As the local 1.5B does: the call fails, and the reply explains the fix in prose
    # with the corrected call in a block instead of making it.
    explained = (
        "The expression needs Python syntax. Here is the corrected call:\n```json\n"
        '{"name": "calculator", "arguments": {"expression": "2 ** 10"}}\n```'
    )
    model = ScriptedModel(
        [
            calls(("calculator", {"expression": "2 ^^ 10"})),
            explained,
            calls(("calculator", {"expression": "2 ** 10"}), prefix="d"),
            "2 to the 10th is 1024.",
        ]
    )
    result = Agent(model, seed_tools).run("What is 2 to the 10th?")
    assert result.status == "completed" and result.answer == "2 to the 10th is 1024."
    assert [c.error is None for c in result.calls] == [False, True]
    note = result.messages[4]
    assert note.role == "user" and note.content == UNMADE_RETRY_NOTE.format(name="calculator")
    assert_invariant(result)

    # Once a run: the same explanation again is the answer.
    twice = ScriptedModel([calls(("calculator", {"expression": "2 ^^ 10"})), explained, explained])
    result = Agent(twice, seed_tools).run("What is 2 to the 10th?")
    assert result.answer == explained and len(twice.requests) == 3


@pytest.mark.parametrize(
    ("first", "answer"),
    [
        # After a call that worked, naming the tool is an answer about its result.
        ({"expression": "2 ** 10"}, "calculator(2 ** 10) returned 1024."),
        # After one that failed, an answer that writes no call is final.
        ({"expression": "2 ^^ 10"}, "The calculator could not read that expression."),
    ],
)
def test_other_answers_after_a_call_are_final(first: dict[str, str], answer: str) -> None:
    model = ScriptedModel([calls(("calculator", first)), answer])
    result = Agent(model, seed_tools).run("What is 2 to the 10th?")
    assert result.answer == answer and len(model.requests) == 2


async def test_the_blocking_entry_points_refuse_a_running_event_loop() -> None:
    agent = Agent(ScriptedModel([{"content": "hi"}, {"content": "again"}]), seed_tools)
    done = await agent.arun("t")
    for call, instead in [
        (lambda: agent.run("t"), "await Agent.arun()"),
        (lambda: agent.stream_sync("t"), "use Agent.stream()"),
        (lambda: agent.resume(done, {}), "await Agent.aresume()"),
        (lambda: agent.resume_stream_sync(done, {}), "use Agent.resume_stream()"),
    ]:
        with pytest.raises(UsageError, match="inside a running event loop") as caught:
            call()
        assert instead in str(caught.value)
    # Nothing ran: the model's second reply is still there for an awaited run.
    assert (await agent.arun("t")).answer == "again"
