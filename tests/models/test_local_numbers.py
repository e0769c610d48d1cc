"""Numbers in an answer that nothing in the run gives: found, and watched for as decoded."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from tooluse.models._local_numbers import NUMBER, NumberWatch, settled, unsupported
from tooluse.models._local_steps import whole_sentences
from tooluse.models._local_stream import Prose

from ._watch import fed

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
        {"city": "Toronto", "population": 2794000},
        {"city": "Montreal", "population": 1762000},
        {"city": "Vancouver", "population": 662000},
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
        ("Toronto has 2,794,000 people.", [CITIES]),
        ("The cities of Canada have 5218000 people together.", [CITIES]),
        ("The meeting is at 17:30 on 2026-03-02, from 9-5.", ["London"]),
        ("It takes 3 steps and 2 calls.", ["nothing"]),
        ("15 + 60 + 60 + 30 = 165 minutes in all.", [EVENTS]),
        ("The total is 54.35 + 37.97 = 92.32 USD.", ["54.35", "37.97"]),
        ("It is -14 degrees.", ['{"temp_c": -14}']),
        ("18.0 * 9/5 + 32 = 64.4, so it is 64.4 °F.", ['{"temperature_c": 18.0}']),
        ("No number at all.", []),
    ],
)
def test_numbers_the_task_a_result_or_sound_arithmetic_gives_are_supported(
    answer: str, seen: list[str]
) -> None:
    assert unsupported(answer, seen) == []


@pytest.mark.parametrize(
    ("answer", "seen", "numbers"),
    [
        # A sum in plain sight, wrong: 15 + 60 + 60 + 30 is 165.
        ("Total = 15 + 60 + 60 + 30 = 185 minutes.", [EVENTS], ["185"]),
        # A rate the model made up instead of calling for it.
        (
            "At a rate of 0.75, 2 monitors cost 343.50 GBP.",
            ["Price 2 monitors (SKU C100) in GBP", '{"price_usd": 229.0}'],
            ["0.75", "343.50"],
        ),
        # A total no tool computed.
        ("The combined population is 5820000.", [CITIES], ["5820000"]),
        ("Tokyo has 139.6 million people.", ['{"population": 13960000}'], ["139.6"]),
        ("Rates 1.20, 1.30, 1.20.", ["EUR GBP USD"], ["1.20", "1.30"]),
        # A made-up rate as an operand: the result is what is judged.
        ("100 USD * 0.85 = 85 EUR.", ["Convert 100 USD to EUR"], ["85"]),
    ],
)
def test_a_number_nothing_gives_is_named_once(
    answer: str, seen: list[str], numbers: list[str]
) -> None:
    assert unsupported(answer, seen) == numbers


def test_a_scripts_printed_list_is_read_for_its_totals_and_length() -> None:
    printed = (
        "[{'city': 'Toronto', 'population': 2794000}, {'city': 'Montreal', 'population': 1762000}]"
    )
    assert unsupported("2 cities, 4,556,000 people together.", [printed]) == []
    assert unsupported("12 cities in all.", ["[" + ", ".join(["1"] * 12) + "]"]) == []


def test_a_fan_outs_total_over_every_result_is_supported() -> None:
    names = [a + b for a in "ABC" for b in "ABCDEFGHIJ"]
    results = [json.dumps({"sku": name, "stock": 1000 + 7 * i}) for i, name in enumerate(names)]
    total = sum(1000 + 7 * i for i in range(30))
    assert unsupported(f"They have {total} units in stock in total.", results) == []
    assert unsupported(f"They have {total + 7} units.", results) == [str(total + 7)]


@pytest.mark.parametrize(
    ("text", "judged"),
    [
        ("is 45.", False),  # may become 45.3
        ("is 45.3 ", False),  # one character after it
        ("is 5.2 mil", False),  # the word after it, a scale perhaps, has not ended
        ("is 12:", False),  # a time perhaps
        ("at 12:30, ", True),
        ("is 45.3 ft²", True),
        ("is 5.2 million ", True),
        ("is 5820000. The", True),
    ],
)
def test_a_number_is_judged_once_what_follows_shows_how_to_read_it(text: str, judged: bool) -> None:
    match = list(NUMBER.finditer(text))[-1]
    assert settled(text, match) is judged


def _watch(pieces: Sequence[str], seen: list[str]) -> tuple[NumberWatch, int | None]:
    """A number watch over `seen` fed `pieces` as tokens; where it stopped, or None."""
    return fed(lambda detokenize: NumberWatch(detokenize, seen), pieces)


def test_the_watch_stops_before_the_token_that_settles_a_number_nothing_gives() -> None:
    pieces = ["The", " combined", " population", " is", " 582", "0000", ".", " It", " is"]
    watch, stopped = _watch(pieces, [CITIES])
    assert stopped == 7  # " It": "." alone might have been a decimal point
    assert watch.cut == "The combined population is " and watch.number == "5820000"


def test_the_watch_passes_supported_numbers_and_stops_at_the_first_that_is_not() -> None:
    pieces = ["Standup", " 15", ",", " review", " 60", ".\n", "Total", " =", " 15", " +", " 60"]
    pieces += [" +", " 60", " +", " 30", " =", " 185", " minutes", "."]
    watch, stopped = _watch(pieces, [EVENTS])
    assert stopped == len(pieces) - 1  # "." shows that the word after 185 has ended
    assert watch.number == "185"
    assert watch.cut == "Standup 15, review 60.\nTotal = 15 + 60 + 60 + 30 = "
    assert whole_sentences(watch.cut) == "Standup 15, review 60."


def test_the_watch_leaves_sound_answers_and_calls_alone() -> None:
    watch, stopped = _watch(["It", " totals", " 5218000", " people", "."], [CITIES])
    assert stopped is None and watch.cut is None
    for opener in ("<tool_call>", "```", "{", "["):
        watch, stopped = _watch([opener, '"amount": 5820000', "}"], [CITIES])
        assert stopped is None and watch.cut is None
    watch, stopped = _watch(["I'll check.", "\n```json\n", '{"a": 5820000}', "\n```"], [CITIES])
    assert stopped is None and watch.cut is None


def test_prose_holding_numbers_passes_on_whole_sentences_only() -> None:
    sent: list[str] = []
    prose = Prose(sent.append, hold="sentences")
    for piece in ["The rate is 0.92", ". So 100", " USD is", " 92 EUR", ".", " Done", "."]:
        prose.feed(piece)
    assert sent == ["The rate is 0.92.", " So 100 USD is 92 EUR."]
    prose.finish("The rate is 0.92. So 100 USD is 92 EUR. Done.")
    assert "".join(sent) == "The rate is 0.92. So 100 USD is 92 EUR. Done."

    plain: list[str] = []
    prose = Prose(plain.append)
    for piece in ["The rate is 0.92", "."]:
        prose.feed(piece)
    assert plain == ["The rate is 0.92", "."]


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("The total is ", None),
        ("To sum them:\n\nTotal = 15 + ", "To sum them:"),
        ("Done. The total is ", "Done."),
        ("It is 3.5", None),
    ],
)
def test_whole_sentences_are_those_a_blank_has_followed(text: str, sentences: str | None) -> None:
    assert whole_sentences(text) == sentences
