"""The answer check on an answer that asks the task's question back instead of answering it."""

from __future__ import annotations

import json

import pytest

from examples.seed_tools import toolbox as seed_tools
from tooluse import Agent, events
from tooluse.models import ScriptedModel
from tooluse.run._answercheck import echo

TASK = "Is it warmer in Paris or in London right now?"


@pytest.mark.parametrize(
    ("answer", "task"),
    [
        (TASK, TASK),
        ("is it warmer in Paris or in London right now?", TASK),
        ("Is it warmer in Paris or London right now?", TASK),
        ("Is the HDMI cable (SKU A200) in stock?", "Is the HDMI cable (SKU A200) in stock?"),
        # One sentence of a longer task, asked back.
        ("Is it enough for the room?", "I have 100 USD. Is it enough for the room?"),
        # Reworded at its start.
        (
            "Is there anything scheduled on 2026-03-05?",
            "Do I have anything scheduled on 2026-03-05?",
        ),
    ],
)
def test_the_question_asked_back_is_an_echo(answer: str, task: str) -> None:
    assert echo(answer, task) is not None


@pytest.mark.parametrize(
    "answer",
    [
        "Paris is warmer: 18 °C against 14 °C in London.",
        "Which London do you mean, the one in England or in Ontario?",
        # The task's words taken up in a question of its own.
        "Do you want to know if it is warmer in Paris or in London tomorrow?",
        # The question's words, answered rather than asked.
        "It is warmer in Paris than in London right now.",
        "Paris?",
    ],
)
def test_an_answer_or_a_question_of_its_own_is_not_an_echo(answer: str) -> None:
    assert echo(answer, TASK) is None


def weather(call_id: str, city: str) -> dict[str, object]:
    arguments = json.dumps({"location": city})
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_current_weather", "arguments": arguments},
    }
    return {"tool_calls": [call]}


def test_a_run_that_echoes_the_question_gets_one_note_and_answers_after_it() -> None:
    seen: list[events.Event] = []
    answer = "Paris is warmer."
    model = ScriptedModel(
        [weather("c1", "Paris"), {"content": TASK}, weather("c2", "London"), {"content": answer}]
    )
    agent = Agent(
        model,
        seed_tools,
        check_answers=True,
        on_event=lambda d: seen.append(events.event_from_dict(d)),
    )
    result = agent.run(TASK)
    assert result.status == "completed" and result.answer == answer
    assert [c.arguments["location"] for c in result.calls] == ["Paris", "London"]
    notes = [m.content for m in result.messages if m.role == "user"][1:]
    assert notes == [
        "Check your answer: it repeats the question instead of answering it. Answer it "
        "from the tool results, and make any call you still need first."
    ]
    outcomes = [e.outcome for e in seen if isinstance(e, events.AnswerChecked)]
    assert outcomes == ["noted", "corrected"]


def test_without_the_check_the_echo_is_the_answer() -> None:
    model = ScriptedModel([weather("c1", "Paris"), {"content": TASK}])
    assert Agent(model, seed_tools).run(TASK).answer == TASK
