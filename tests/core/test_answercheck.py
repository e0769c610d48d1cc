"""`contradiction`: comparison verdicts the answer's own numbers refute, and nothing else."""

from __future__ import annotations

import pytest

from tooluse.run._answercheck import contradiction

#: What the run saw: the task and the tools' results.
SEEN = [
    "Is my balance enough for the 85 EUR room? I have 100 USD.",
    '{"amount": 92.0, "currency": "EUR"}',
    "0.92",
    "12 slices, 10 people, 3 nights, 30 EUR, 5 km, 3 miles, 4, 3, 2024, 5 %, 20 EUR, 60 EUR",
]

CONTRADICTIONS = [
    ("92 EUR is not enough for the 85 EUR room.", "92 ≥ 85"),
    ("No, 92 EUR is not enough for the 85 EUR room.", "92 ≥ 85"),
    ("You have 92 EUR, which is not enough for the 85 EUR room.", "92 ≥ 85"),
    ("Sadly 92 EUR isn't enough to cover the 85 EUR room.", "92 ≥ 85"),
    ("92 EUR is insufficient for the 85 EUR room, so book another.", "92 ≥ 85"),
    ("Yes, 80 EUR is enough for the 85 EUR room.", "80 < 85"),
    ("€92 is not enough for the €85 room.", "92 ≥ 85"),
    ("92.0 EUR is less than 85 EUR.", "92 ≥ 85"),
    ("The converted amount, 92 EUR, is cheaper than 85 EUR.", "92 ≥ 85"),
    ("85 EUR is more than 92 EUR.", "85 ≤ 92"),
    ("85 is greater than 92.", "85 ≤ 92"),
    ("92 EUR does not cover the 85 EUR room.", "92 ≥ 85"),
    ("92 EUR exceeds the 100 EUR budget.", "92 ≤ 100"),
    ("92 EUR falls short of the 85 EUR price.", "92 ≥ 85"),
    ("You get 92 EUR. 92 EUR is still not enough for the 85 EUR room.", "92 ≥ 85"),
    ("1,200 EUR is below 85 EUR.", "1200 ≥ 85"),
    ("92 EUR is not more than 85 EUR.", "92 > 85"),
    ("100 USD is 92 EUR, which is not enough for the 85 EUR room.", "92 ≥ 85"),
    ("**No**, **92 EUR** is not enough for the **85 EUR** room.", "92 ≥ 85"),
    ("`92` is smaller than `85`.", "92 ≥ 85"),
    ("-5 °C is above 3 °C.", "-5 ≤ 3"),
    (
        "Since 100 USD is equivalent to 92 EUR, which is less than the required amount of "
        "85 EUR for a hotel room, it is not enough.",
        "92 ≥ 85",
    ),
    ("100 USD comes to 92 EUR, which is not enough for the 85 EUR room.", "92 ≥ 85"),
    ("92 EUR is less than 85 EUR for a hotel room.", "92 ≥ 85"),
    (
        "With 92 EUR in hand: 92 EUR is not enough for the 85 EUR room, so you will need more.",
        "92 ≥ 85",
    ),
]

FINE = [
    # correct verdicts
    "92 EUR is enough for the 85 EUR room.",
    "No, 80 EUR is not enough for the 85 EUR room.",
    "92 EUR is more than 85 EUR.",
    "92 EUR is more than enough for the 85 EUR room.",
    "85 EUR is less than 92 EUR.",
    "92 EUR covers the 85 EUR room.",
    "92 EUR does not exceed the 100 EUR budget.",
    "92 EUR is within the 100 EUR budget.",
    # rounding and conversions stated as such
    "100 USD is about 92 EUR, which is enough for the 85 EUR room.",
    "100 USD converts to 92.0 EUR (rate 0.92).",
    # not only, negations elsewhere
    "92 EUR is not only enough for the 85 EUR room but leaves 7 EUR.",
    "It is not true that 92 EUR is less than 85 EUR.",
    "I would not say 92 EUR is less than 85 EUR.",
    "92 EUR, not 80 EUR, is enough for the 85 EUR room.",
    # ranges, dates, times, percentages, rates
    "Between 80 and 90 EUR is enough for the 85 EUR room.",
    "80-90 EUR is not enough for the 85 EUR room.",
    "On 2024-05-03 the rate is 0.92, more than 0.9.",
    "At 10:30 it is 12 degrees, more than 11:00's 10 degrees.",
    "5% is not more than 3 EUR.",
    "5% is more than 3%.",
    "20 EUR per person is enough for the 60 EUR bill.",
    "3 nights at 30 EUR is enough for the 85 EUR total.",
    "30 EUR times 3 is more than 85 EUR.",
    "10 EUR is not more than 3 times 5 EUR.",
    "92 EUR is not enough for the 85 EUR room plus the 10 EUR breakfast.",
    "92 EUR is not enough for the 85 EUR room for 2 nights.",
    "92 EUR is not enough for 85 EUR per night.",
    "92 EUR is not enough for 85 EUR for 2 nights.",
    "92 EUR is not enough for 85 EUR for the room and the 10 EUR breakfast.",
    "92 EUR is less than 85 EUR for each of us.",
    "100 USD is equivalent to 92 EUR, which is enough for the 85 EUR room.",
    "Compared to 92 EUR, 85 EUR is less.",
    "1.2 million is less than 900,000.",
    "2**10 is more than 1000.",
    "3 x 30 EUR, which is less than 85 EUR.",
    "20 EUR + 72 EUR, which is more than 100 EUR.",
    "3 nights × 30 EUR each, which is less than 85 EUR.",
    "92 EUR is 7 EUR more than 85 EUR.",
    "92 EUR is more than 85 EUR by 7 EUR.",
    "92 EUR is within 10 EUR of the 85 EUR price.",
    "92 is above 85 in the ranking.",
    "92 EUR is enough for the room, which costs 85 EUR.",
    "92 EUR is not enough for the 85 EUR room and breakfast.",
    "92 EUR is more than 85 EUR? Yes.",
    "1 200 EUR is less than 85 EUR.",
    "92k is more than 85k.",
    "Version 3.9 is lower than 3.12.",
    "Of the 4 hotels, 3 are more expensive than 85 EUR.",
    "92 EUR is enough for the 85 EUR room, but not for the 120 EUR suite.",
    "You asked whether 92 EUR is enough for the 85 EUR room; it is.",
    "The 85 EUR room is cheaper than 92 EUR.",
    "The chance of rain is 30%, which is below 50%.",
    "It is 64.4 °F in Paris, which is more than 18 °C.",
    "10 levels above quinn.eriksen97@corp.example is omar.nakamura10@corp.example.",
    # different kinds or units
    "12 slices are not enough for 10 people.",
    "4 is not enough for 3 people.",
    "5 km is less than 3 miles.",
    "100 USD is not enough for the 95 EUR room.",
    # questions, conditionals, hedges
    "Is 92 EUR enough for the 85 EUR room?",
    "If 80 EUR is enough for the 85 EUR room, book it.",
    "92 EUR might not be enough for the 85 EUR room.",
    "92 EUR should be enough for the 85 EUR room.",
    # numbers the run never saw
    "7 is more than 9.",
    # no comparison at all
    "The rate is 0.92, so 100 USD is 92 EUR.",
    "You have 92 EUR left after paying 85 EUR? No: you have 7 EUR left.",
    "",
    "The weather in Paris is 21 °C and sunny.",
    "The meeting is at 15:00 on 2024-05-03.",
    "92 EUR is enough.",
    "92 EUR is over budget.",
]


@pytest.mark.parametrize(("answer", "truth"), CONTRADICTIONS)
def test_a_verdict_the_numbers_refute_is_found(answer: str, truth: str) -> None:
    found = contradiction(answer, SEEN)
    assert found is not None, answer
    assert truth in found.note
    # The claim is quoted as written, without bold and code marks.
    assert found.claim in " ".join(answer.replace("**", "").replace("`", "").split())


@pytest.mark.parametrize("answer", FINE)
def test_what_is_not_a_clear_contradiction_passes(answer: str) -> None:
    assert contradiction(answer, SEEN) is None


def test_the_note_quotes_the_claim_and_says_the_arithmetic() -> None:
    found = contradiction("No, 92 EUR is not enough for the 85 EUR room.", SEEN)
    assert found is not None
    assert found.claim == "92 EUR is not enough for the 85 EUR room"
    assert (found.left, found.right, found.stated) == (92.0, 85.0, "<")
    assert found.note.startswith(
        'Check your answer: it says "92 EUR is not enough for the 85 EUR room", but 92 ≥ 85.'
    )


def test_one_side_must_be_a_number_the_run_saw() -> None:
    answer = "92 EUR is not enough for the 85 EUR room."
    assert contradiction(answer, ["nothing numeric here"]) is None
    assert contradiction(answer, ["the room costs 85 EUR"]) is not None
