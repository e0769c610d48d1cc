"""The answer check's second half: numbers in an answer that nothing in the run gives."""

from __future__ import annotations

import json

import pytest

from examples.seed_tools import toolbox as seed_tools
from tooluse import Agent, events
from tooluse.models import ScriptedModel
from tooluse.run._numbercheck import unsupported

EVENTS = json.dumps(
    [
        {"title": "Standup", "minutes": 15},
        {"title": "Design review", "minutes": 60},
        {"title": "Lunch", "minutes": 60},
        {"title": "1:1", "minutes": 30},
    ]
)
CITIES = json.dumps(
    [
        {"city": "Toronto", "population": 2794356},
        {"city": "Montreal", "population": 1762949},
        {"city": "Vancouver", "population": 662248},
    ]
)


@pytest.mark.parametrize(
    ("answer", "seen"),
    [
        ("A marathon is 26.22 miles.", ["26.218757"]),
        ("100 USD is 92 EUR.", ["Convert 100 USD to EUR", "92.0"]),
        ("17% of 2,340 is 397.8.", ["What is 17% of 2,340?", "397.8"]),
        ("The rate is 17%.", ["0.17"]),
        ("Toronto has about 2.79 million people.", [CITIES]),
        ("Toronto has 2,794,356 people.", [CITIES]),
        ("The meeting is at 17:30 on 2026-03-02, from 9-5.", ["London"]),
        ("It takes 3 steps and 2 calls.", ["nothing"]),
        ("15 + 60 + 60 + 30 = 165 minutes in all.", [EVENTS]),
        ("The total is 54.35 + 37.97 = 92.32 USD.", ["54.35", "37.97"]),
        ("It is -14 degrees.", ['{"temp_c": -14}']),
        ("No number at all.", []),
    ],
)
def test_numbers_the_task_a_result_or_sound_arithmetic_gives_are_supported(
    answer: str, seen: list[str]
) -> None:
    assert unsupported(answer, seen) is None


@pytest.mark.parametrize(
    ("answer", "seen", "numbers"),
    [
        # A sum in the head, wrong: 15 + 60 + 60 + 30 is 165.
        ("Total = 15 + 60 + 60 + 30 = 185 minutes.", [EVENTS], ("185",)),
        # A rate the model made up instead of calling for it.
        (
            "At a rate of 0.75, 2 monitors cost 343.50 GBP.",
            ["Price 2 monitors (SKU C100) in GBP", '{"price_usd": 229.0}'],
            ("0.75", "343.50"),
        ),
        # A total no tool computed.
        ("The combined population is 5820000.", [CITIES], ("5820000",)),
        ("Tokyo has 139.6 million people.", ['{"population": 13960000}'], ("139.6",)),
    ],
)
def test_a_number_nothing_gives_is_named(
    answer: str, seen: list[str], numbers: tuple[str, ...]
) -> None:
    found = unsupported(answer, seen)
    assert found is not None and found.numbers == numbers


def test_the_note_names_at_most_three_numbers_once_each() -> None:
    found = unsupported("Rates 1.20, 1.30, 1.20, 1.45 and 1.50.", ["EUR GBP USD"])
    assert found is not None and found.numbers == ("1.20", "1.30", "1.45", "1.50")
    assert found.note.startswith("Check your answer: it states these numbers: 1.20, 1.30, 1.45,")
    assert "1.50" not in found.note
    assert "no tool result and nothing in the task gives" in found.note


TASK = "What is 100 USD in EUR?"
RATE = {
    "tool_calls": [
        {
            "id": "c1",
            "type": "function",
            "function": {
                "name": "get_exchange_rate",
                "arguments": json.dumps({"base": "USD", "target": "EUR"}),
            },
        }
    ]
}
CONVERT = {
    "tool_calls": [
        {
            "id": "c2",
            "type": "function",
            "function": {"name": "calculator", "arguments": json.dumps({"expression": "100*0.92"})},
        }
    ]
}


def test_a_run_whose_answer_states_an_unsupported_number_gets_one_note_then_calls() -> None:
    seen: list[events.Event] = []
    guessed = "100 USD is about 87.43 EUR."
    model = ScriptedModel([{"content": guessed}, RATE, CONVERT, {"content": "100 USD is 92 EUR."}])
    agent = Agent(
        model,
        seed_tools,
        check_answers=True,
        on_event=lambda d: seen.append(events.event_from_dict(d)),
    )
    result = agent.run(TASK)
    assert result.answer == "100 USD is 92 EUR." and result.status == "completed"
    assert [c.name for c in result.calls] == ["get_exchange_rate", "calculator"]
    note = [m.content for m in result.messages if m.role == "user"][1]
    assert note is not None and note.startswith("Check your answer: it states 87.43, which")
    outcomes = [e.outcome for e in seen if isinstance(e, events.AnswerChecked)]
    assert outcomes == ["noted", "corrected"]


def test_without_the_check_the_guess_is_the_answer() -> None:
    model = ScriptedModel([{"content": "100 USD is about 87.43 EUR."}])
    result = Agent(model, seed_tools).run(TASK)
    assert result.answer == "100 USD is about 87.43 EUR." and result.calls == []


def test_the_count_of_calls_made_is_supported() -> None:
    sent = ['"sent"'] * 30
    answer = "I sent 30 invitations."
    assert unsupported(answer, ["Invite the team.", *sent], counts=[30]) is None
    found = unsupported(answer, ["Invite the team.", *sent])
    assert found is not None and found.numbers == ("30",)


def test_a_fan_outs_total_over_every_result_is_supported() -> None:
    names = [a + b for a in "ABC" for b in "ABCDEFGHIJ"]
    results = [json.dumps({"sku": name, "stock": 1000 + 7 * i}) for i, name in enumerate(names)]
    total = sum(1000 + 7 * i for i in range(30))
    assert unsupported(f"They have {total} units in stock in total.", results) is None
    wrong = unsupported(f"They have {total + 7} units in stock in total.", results)
    assert wrong is not None and wrong.numbers == (str(total + 7),)


def test_a_scripts_printed_list_is_read_for_its_totals_and_length() -> None:
    printed = (
        "[{'city': 'Toronto', 'population': 2794000}, {'city': 'Montreal', 'population': 1762000}]"
    )
    assert unsupported("2 cities, 4,556,000 people together.", [printed]) is None
    assert unsupported("12 cities in all.", ["[" + ", ".join(["1"] * 12) + "]"]) is None
