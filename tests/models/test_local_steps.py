"""An answer whose first sentence announces a step: found, and stopped at the right token."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from tooluse._messages import Message, ToolCall
from tooluse.models._local_steps import (
    ANNOUNCED_STEP,
    StepWatch,
    announced_step,
    first_sentence,
    makes_new_calls,
)

from ._watch import fed

#: First sentences the 1.5B wrote after a result, in place of the call they name.
ANNOUNCED = [
    "To calculate the total price in British pounds for 2 monitors (SKU C100), we need to "
    "convert the price from USD to GBP using the current exchange rate.",
    "To convert the amount from euros to dollars, we need to use the current exchange rate "
    "for USD/EUR.",
    "To convert the temperature from Celsius to Fahrenheit, we use the formula:",
    "To find a free 30-minute slot on March 2, 2026, in London time, I'll need to check my "
    "calendar for events.",
    "To convert the time from London to Tokyo when it is 09:00 in London, we need to adjust "
    "for the time difference between the two cities.",
    "To convert the room dimensions from meters to feet, we use the conversion factor that 1 "
    "meter is approximately equal to 3.28084 feet.",
    "To determine how much each friend pays, we need to follow these steps:",
    "To find the email address of Bruno.Nakamura's manager, we need to use the "
    "`get_employee` function with the appropriate arguments.",
]

#: First sentences of answers that give what they found.
ANSWERS = [
    "The conversion of 100 USD to EUR is approximately 92.00 euros.",
    "To convert 200 British pounds to Japanese yen, you would get approximately 37974.68 yen.",
    "The time in Mumbai is 5:30 PM on the same day.",
    "It is warmer in Paris than in London right now.",
    "The largest city in Japan is Tokyo, and we use its figure from the list.",
]


@pytest.mark.parametrize("sentence", ANNOUNCED)
def test_a_sentence_that_says_what_must_be_done_is_a_step(sentence: str) -> None:
    assert announced_step(f"{sentence} The rate is about 0.75.") == sentence
    assert announced_step(f"{sentence}\n1. Look it up.") == sentence


@pytest.mark.parametrize("sentence", ANSWERS)
def test_an_answer_is_not_a_step(sentence: str) -> None:
    assert announced_step(f"{sentence} That is all.") is None


def test_a_sentence_not_yet_ended_announces_nothing() -> None:
    # A full stop inside a number, or a colon inside a time, ends nothing.
    assert first_sentence("We need to convert 3.28") is None
    assert first_sentence("At 09:00 we need to") is None
    assert announced_step("To convert it, we need to use the rate") is None
    assert first_sentence("  Done.\n") == "Done."


def _watch(pieces: Sequence[str], pattern: str | None = None) -> tuple[StepWatch, int | None]:
    """A step watch fed `pieces` as tokens; where it stopped, or None."""
    compiled = re.compile(pattern) if pattern else ANNOUNCED_STEP
    return fed(lambda detokenize: StepWatch(detokenize, compiled), pieces)


def test_the_watch_stops_before_the_token_that_shows_the_sentence_ended() -> None:
    pieces = ["To pay", ", we need to", " convert", " it", ".", " The", " rate", " is", " 0", ".79"]
    watch, stopped = _watch(pieces)
    assert stopped == 5  # " The": only it shows that "." ended the sentence
    assert watch.step == "To pay, we need to convert it."


def test_the_watch_stops_at_the_end_of_the_text() -> None:
    watch, stopped = _watch(["We", " need", " to", " look", " it", " up", "."])
    assert stopped == 7 and watch.step == "We need to look it up."


def test_the_watch_decides_once_and_never_stops_a_call_or_an_answer() -> None:
    # The first sentence answers; a later sentence that announces a step is left alone.
    watch, stopped = _watch(
        ["It", " is", " 18", " °C", ".", " We", " need", " to", " go", ".", " "]
    )
    assert stopped is None and watch.step is None
    for opener in ("<tool_call>", "```", "{", "["):
        watch, stopped = _watch([opener, "we need to do it.", " More"])
        assert stopped is None and watch.step is None


def test_a_pattern_of_ones_own_replaces_the_built_in_one() -> None:
    watch, stopped = _watch(["Il", " faut", " convertir", ".", " Ensuite"], r"(?i).*\bil faut\b")
    assert stopped == 4 and watch.step == "Il faut convertir."


def test_a_step_makes_new_calls_only_with_a_call_the_run_has_not_made() -> None:
    weather = ToolCall("call_1", "get_weather", '{"city": "Paris", "unit": "c"}')
    run = [
        Message("user", "Weather in Paris?"),
        Message("assistant", "We need to look it up.", tool_calls=(weather,)),
        Message("tool", "18 °C", tool_call_id="call_1"),
    ]
    # The same call, its arguments in another order and under another id, is not new.
    again = ToolCall("call_2", "get_weather", '{"unit": "c", "city": "Paris"}')
    london = ToolCall("call_3", "get_weather", '{"city": "London", "unit": "c"}')
    assert not makes_new_calls([again], run)
    assert makes_new_calls([again, london], run)
    assert makes_new_calls([again], run[:1])
    # Arguments that are not an object are compared as written.
    assert not makes_new_calls(
        [ToolCall("c", "f", "[1")],
        [Message("assistant", None, tool_calls=(ToolCall("c", "f", "[1"),))],
    )
    assert makes_new_calls(
        [ToolCall("c", "f", "[1]")],
        [Message("assistant", None, tool_calls=(ToolCall("c", "f", "[1"),))],
    )


def after(call: ToolCall, result: str) -> list[Message]:
    return [
        Message("user", "Question?"),
        Message("assistant", None, tool_calls=(call,)),
        Message("tool", result, tool_call_id=call.id),
    ]


def test_a_call_made_again_on_its_own_result_is_not_new() -> None:
    converted = ToolCall(
        "call_1", "convert_time", '{"time": "09:00", "from_city": "London", "to_city": "Tokyo"}'
    )
    run = after(converted, '{"time": "18:00", "day_offset": 0}')
    # The result's field of the argument's name, converted again.
    again = ToolCall(
        "call_2", "convert_time", '{"time": "18:00", "from_city": "London", "to_city": "Tokyo"}'
    )
    assert not makes_new_calls([again], run)
    # Another time, or the result with another argument changed too, is new.
    other = ToolCall(
        "call_3", "convert_time", '{"time": "10:00", "from_city": "London", "to_city": "Tokyo"}'
    )
    back = ToolCall(
        "call_4", "convert_time", '{"time": "18:00", "from_city": "Tokyo", "to_city": "London"}'
    )
    assert makes_new_calls([other], run) and makes_new_calls([back], run)

    # A bare result, a number, given back as the amount it came from.
    money = ToolCall("call_1", "convert", '{"amount": 80, "from": "EUR", "to": "USD"}')
    assert not makes_new_calls(
        [ToolCall("call_2", "convert", '{"amount": 86.96, "from": "EUR", "to": "USD"}')],
        after(money, "86.96"),
    )


def test_a_lookup_that_follows_a_field_of_another_name_is_new() -> None:
    lookup = ToolCall("call_1", "get_employee", '{"email": "a@corp.example"}')
    record = '{"email": "a@corp.example", "manager_email": "b@corp.example"}'
    up = ToolCall("call_2", "get_employee", '{"email": "b@corp.example"}')
    assert makes_new_calls([up], after(lookup, record))
