"""`Agent(check_answers=True)`: one note for an answer its own numbers refute, then the answer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from examples.seed_tools import toolbox as seed_tools
from tooluse import Agent, Approval, ApprovalPolicy, RunResult, events
from tooluse.models import ScriptedModel
from tooluse.run._stream import DoneEvent
from tooluse.run._trace import read_events

TASK = "I have 100 USD. Is that enough for the 85 EUR room?"
WRONG = "No, 92 EUR is not enough for the 85 EUR room."
STILL_WRONG = "I checked again: 92 EUR is less than 85 EUR, so no."
RIGHT = "Yes, 92 EUR is enough for the 85 EUR room."
NOTE = (
    'Check your answer: it says "92 EUR is not enough for the 85 EUR room", but 92 ≥ 85. '
    "Compare the numbers again and give your corrected final answer."
)


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


RATE = call("c1", "get_exchange_rate", {"base": "USD", "target": "EUR"})
CONVERT = call("c2", "calculator", {"expression": "100 * 0.92"})


class Seen(list[events.Event]):
    """An ``on_event`` sink keeping the events, typed again from their dict forms."""

    def __call__(self, data: dict[str, Any]) -> None:
        self.append(events.event_from_dict(json.loads(json.dumps(data))))


def checks(seen: Sequence[object]) -> list[tuple[int, str]]:
    return [(e.round, e.outcome) for e in seen if isinstance(e, events.AnswerChecked)]


def notes(result: RunResult) -> list[str]:
    return [m.content or "" for m in result.messages if m.role == "user"][1:]


def test_a_contradicting_answer_gets_one_note_and_the_next_answer_is_final(
    tmp_path: Path,
) -> None:
    seen = Seen()
    trace = tmp_path / "run.jsonl"
    model = ScriptedModel([RATE, CONVERT, WRONG, RIGHT])
    agent = Agent(model, seed_tools, check_answers=True, trace=trace, on_event=seen)
    result = agent.run(TASK)
    assert result.status == "completed" and result.answer == RIGHT
    assert notes(result) == [NOTE]
    # The note's round is one of the run's.
    assert result.rounds == 4 and len(model.requests) == 4
    assert model.requests[3].messages[-1].content == NOTE
    assert checks(seen) == [(3, "noted"), (4, "corrected")]
    noted = next(e for e in seen if isinstance(e, events.AnswerChecked))
    assert (noted.answer, noted.note) == (WRONG, NOTE)
    # The trace file holds the same events, and the written result the note.
    assert checks(list(read_events(trace))) == [(3, "noted"), (4, "corrected")]
    written = RunResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert notes(written) == [NOTE]


def test_an_answer_that_still_contradicts_after_the_note_ends_the_run() -> None:
    seen = Seen()
    model = ScriptedModel([RATE, CONVERT, WRONG, STILL_WRONG, RIGHT])
    agent = Agent(model, seed_tools, check_answers=True, on_event=seen)
    result = agent.run(TASK)
    assert result.answer == STILL_WRONG and result.status == "completed"
    assert notes(result) == [NOTE] and len(model.requests) == 4
    kept = [e for e in seen if isinstance(e, events.AnswerChecked)][-1]
    assert (kept.outcome, kept.answer) == ("kept", STILL_WRONG)
    assert '"92 EUR is less than 85 EUR"' in kept.note


def test_a_correct_answer_gets_no_note_and_no_event() -> None:
    seen = Seen()
    model = ScriptedModel([RATE, CONVERT, RIGHT])
    result = Agent(model, seed_tools, check_answers=True, on_event=seen).run(TASK)
    assert result.answer == RIGHT and notes(result) == [] and len(model.requests) == 3
    assert checks(seen) == []


def test_without_the_option_a_contradicting_answer_is_final() -> None:
    seen = Seen()
    model = ScriptedModel([RATE, CONVERT, WRONG, RIGHT])
    result = Agent(model, seed_tools, on_event=seen).run(TASK)
    assert result.answer == WRONG and notes(result) == [] and checks(seen) == []


def test_no_note_in_the_last_round_where_it_would_cost_the_answer() -> None:
    model = ScriptedModel([RATE, CONVERT, WRONG, RIGHT])
    result = Agent(model, seed_tools, check_answers=True, max_rounds=3).run(TASK)
    assert result.status == "completed" and result.answer == WRONG and notes(result) == []


def test_the_note_comes_once_a_run_across_a_pause_for_approval() -> None:
    seen = Seen()
    model = ScriptedModel([RATE, WRONG, CONVERT, STILL_WRONG, RIGHT])
    defer_calculator = ApprovalPolicy(
        lambda r: Approval.defer() if r.tool == "calculator" else True, asks="all"
    )
    agent = Agent(model, seed_tools, check_answers=True, approval=defer_calculator, on_event=seen)
    paused = agent.run(TASK)
    assert paused.status == "needs_approval" and notes(paused) == [NOTE]
    result = agent.resume(paused, {"c2": True})
    assert result.status == "completed" and result.answer == STILL_WRONG
    assert notes(result) == [NOTE]
    assert checks(seen) == [(2, "noted"), (4, "kept")]


def test_a_stream_gives_the_check_and_ends_with_the_answer_after_the_note() -> None:
    model = ScriptedModel([RATE, CONVERT, WRONG, RIGHT])
    agent = Agent(model, seed_tools, check_answers=True)
    with agent.stream_sync(TASK) as stream:
        streamed = list(stream)
    assert checks(streamed) == [(3, "noted"), (4, "corrected")]
    done = streamed[-1]
    assert isinstance(done, DoneEvent) and done.result.answer == RIGHT


def test_a_scripts_printed_results_are_what_the_code_conventions_answer_is_checked_against() -> (
    None
):
    script = (
        "```python\nimport tools\nrate = tools.get_exchange_rate('USD', 'EUR')\n"
        "print(tools.calculator(expression=f'100 * {rate}'))\n```"
    )
    seen = Seen()
    model = ScriptedModel([{"content": script}, {"content": WRONG}, {"content": RIGHT}])
    with Agent(model, seed_tools, convention="code", check_answers=True, on_event=seen) as agent:
        result = agent.run(TASK)
    assert [c.name for c in result.calls] == ["get_exchange_rate", "calculator"]
    assert result.answer == RIGHT and notes(result)[-1] == NOTE
    assert checks(seen) == [(2, "noted"), (3, "corrected")]
