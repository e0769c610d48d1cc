"""Checking a final answer against itself and the run's results: clear contradictions only.

`contradiction` finds a comparison verdict whose arithmetic is wrong: the answer
says one number is (not) enough for, more, less, greater, cheaper than another,
both numbers written in the sentence, and the verdict is the opposite of what
the numbers give (``92 EUR is not enough for the 85 EUR room``). One of the two
numbers must be one the run saw (in the task or a result), so the sentence is
about the run and not about something the model made up on the side.

Precision comes before recall: a sentence is passed over as soon as it could mean
something the arithmetic does not decide. Passed over are questions and
conditionals; a negation anywhere before the verdict (``it is not true that``);
``not only``, ``no more than`` and hedges (``would``, ``might``); numbers next to
``-``, ``/`` or ``:`` (dates, times, ranges), with a scale (``1.2 million``), a
rate (``per night``) or arithmetic around them (``3 times``, ``plus``); another
number before the first in its clause (``3 nights at 30 EUR``), unless the verdict
is said of the first by ``which`` (``100 USD is 92 EUR, which is …``); a bare
first number with a plural verb (``2 are cheaper than 85 EUR``: a count); a second side
that goes on after its number (``for the 85 EUR room for 2 nights``); and two
sides of different units or nouns (``5 km`` and ``3 miles``, ``12 slices`` and
``10 people``).

Not checked at all: a number the answer gives for a result that differs from the
one a tool returned. Rounding, unit conversions and sums of several results are
legitimate, and telling them from a slip is not clear enough.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "NOTE_START",
    "Contradiction",
    "Echo",
    "contradiction",
    "echo",
]

#: How the note for a contradiction begins (a run's conversation shows whether it had one).
NOTE_START = "Check your answer:"

Relation = Literal[">=", "<", ">", "<="]


@dataclass(frozen=True, slots=True)
class Contradiction:
    """What the answer says (`claim`, as written) and why the numbers say otherwise."""

    claim: str
    left: float
    right: float
    #: The relation the answer states between `left` and `right`.
    stated: Relation

    @property
    def note(self) -> str:
        """The note for the model: what looks contradictory, precisely."""
        left, right = _show(self.left), _show(self.right)
        truth = {">=": "<", "<": "≥", ">": "≤", "<=": ">"}[self.stated]
        return (
            f'{NOTE_START} it says "{self.claim}", but {left} {truth} {right}. '
            "Compare the numbers again and give your corrected final answer."
        )


# A number: optional sign, digits with thousands commas, decimals.
_NUMBER_RE = re.compile(r"(?<![\w.,])[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w)")
_SYMBOLS = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy"}
#: Units two sides may share; names of the same unit read as one.
_UNITS = {
    "eur": "eur", "euro": "eur", "euros": "eur",
    "usd": "usd", "dollar": "usd", "dollars": "usd",
    "gbp": "gbp", "pound": "gbp", "pounds": "gbp",
    "jpy": "jpy", "yen": "jpy", "chf": "chf", "cad": "cad", "aud": "aud",
    "%": "%", "percent": "%",
    "km": "km", "kilometers": "km", "kilometres": "km", "m": "m", "meters": "m",
    "metres": "m", "mi": "mi", "miles": "mi", "kg": "kg", "g": "g", "lb": "lb",
    "lbs": "lb", "l": "l", "liters": "l", "litres": "l", "ml": "ml",
    "°c": "°c", "°f": "°f", "c": "°c", "f": "°f", "degrees": "deg",
    "s": "s", "sec": "s", "seconds": "s", "min": "min", "minutes": "min",
    "h": "h", "hours": "h", "days": "d", "weeks": "w", "months": "mo", "years": "y",
    "gb": "gb", "mb": "mb", "tb": "tb",
}  # fmt: skip
#: Words after a number that scale it or make it a rate or part of a sum: not compared.
_SCALES = {
    "thousand", "million", "millions", "billion", "billions", "trillion", "k", "bn", "dozen",
    "hundred", "times", "x", "×", "per", "each", "every", "a", "an", "plus", "minus", "and",
    "or", "+", "*", "/", "of", "to", "nights", "night", "apiece",
}  # fmt: skip
#: Words just before the first number that make it a factor or a term, not the whole side.
_BEFORE = {
    "at", "times", "x", "×", "*", "/", "+", "-", "plus", "minus", "per", "by", "each", "and",
    "or", "with", "of", "twice", "half", "than", "between", "from", "to", "version", "v",
    "release", "python", "build", "rank", "number", "no", "order", "page", "step", "level",
}  # fmt: skip
#: The words before a number that state it as what a value is (``equivalent to 92 EUR``).
_STATED_AS = [["equivalent", "to"], ["equal", "to"], ["converts", "to"], ["comes", "to"],
              ["amounts", "to"], ["translates", "to"]]  # fmt: skip
#: Words that carry the second side on past its number (``for 2 nights``, ``in Paris``).
_LINKS = {
    "for", "in", "at", "with", "on", "from", "to", "by", "of", "per", "plus", "and", "or",
    "including", "each", "times", "after", "before", "over", "under", "than", "into", "a",
    "an", "the", "is", "are", "was", "were", "if", "when", "combined", "together", "total",
}  # fmt: skip
#: What a second side is for, after ``for``: an article and one or two plain words,
#: then the clause's end (``for a hotel room.``), never a number or a link.
_PURPOSE = re.compile(
    r"(?:\s+(?:a|an|the|your|my))?(?:\s+(?!(?:for|in|at|with|on|and|or|plus|per|each|"
    r"including|of|by|to)\b)[A-Za-z]+){1,2}(?=\s*(?:[.,;:!)]|$|\s(?:so|but|which|because)\b))",
    re.IGNORECASE,
)
#: Words that end a clause (the second side may end with one).
_ENDS = {"so", "but", "which", "because", "therefore", "thus", "hence", "while", "whereas"}
#: Words between the comparison and the second number that do not change it.
_FILLERS = {
    "the", "a", "an", "your", "my", "our", "their", "its", "this", "that", "required",
    "needed", "requested", "asking", "listed", "stated", "given", "price", "cost", "budget",
    "total", "amount", "room", "ticket", "fare", "limit", "threshold", "target", "minimum",
    "maximum", "value", "of", "it", "costing", "priced", "at",
}  # fmt: skip
_ADVERBS = (
    r"(?:still|clearly|definitely|certainly|well|just|slightly|much|far|easily|indeed|also|"
    r"quite|actually|comfortably|already)"
)
#: Each comparison: its pattern (after ``is``/``are`` and an optional ``not``) and the
#: relation it states between the first and the second number.
_COMPARISONS: tuple[tuple[str, Relation], ...] = (
    (r"more than enough (?:for|to cover|to pay for|to buy)", ">="),
    (r"(?:enough|sufficient|adequate) (?:for|to cover|to pay for|to pay|to buy)", ">="),
    (r"(?:insufficient|too little) (?:for|to cover|to pay for|to buy)", "<"),
    (r"(?:more|greater|higher|larger|bigger|more expensive|costlier) than", ">"),
    (r"(?:less|lower|smaller|fewer|cheaper|less expensive) than", "<"),
    (r"(?:above|over)", ">"),
    (r"(?:below|under)", "<"),
    (r"(?:within|inside)", "<="),
)
_BE = r"is|are|was|were|'s|’s"
_NOT = r"(?P<neg>\s+not|n't|n’t)?"
_VERDICT = re.compile(
    rf"^,?(?:\s*(?P<which>which))?\s+(?P<be>{_BE})(?:\s+{_ADVERBS})?{_NOT}(?:\s+{_ADVERBS})?\s+(?P<cmp>"
    + "|".join(f"(?P<c{i}>{p})" for i, (p, _) in enumerate(_COMPARISONS))
    + r")\s+(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_VERBS = re.compile(
    r"^,?(?:\s*(?P<which>which))?\s+"
    r"(?:(?P<neg>does not|doesn't|doesn’t|do not|don't|don’t|did not|didn't)"
    r"\s+(?P<v1>exceed|cover)"
    r"|(?P<v2>exceeds|exceeded|covers|covered|falls short of|fell short of))"
    r"\s+(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_VERB_RELATIONS: dict[str, Relation] = {
    "exceed": ">", "exceeds": ">", "exceeded": ">", "cover": ">=", "covers": ">=",
    "covered": ">=", "falls short of": "<", "fell short of": "<",
}  # fmt: skip
#: A sentence with one of these is not a plain claim.
_UNSURE = re.compile(
    r"\b(?:if|unless|whether|suppose|assuming|would|could|might|may|should|will|probably|"
    r"maybe|perhaps|approximately|about|around|roughly|nearly|almost|only|no more|no less|"
    r"not just|at least|at most|up to|or so)\b|\?",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:not|never|no|none|false|wrong|incorrect|untrue|neither|nor)\b|n't|n’t", re.IGNORECASE
)
_ANSWER_WORD = re.compile(r"^\s*(?:yes|no|correct|indeed)\b[\s,.:;!—-]*", re.IGNORECASE)
_MARKS = re.compile(r"(?<!\d)\*\*|\*\*(?!\d)|__|`")
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")


def contradiction(answer: str, seen: Iterable[str]) -> Contradiction | None:
    """The first clear comparison in `answer` whose verdict its own numbers refute, else None.

    `seen` is what the run saw (the task, the tools' results): one of the two numbers
    compared must appear in it.
    """
    known = _numbers_in(seen)
    for sentence in _SENTENCES.split(answer):
        found = _in_sentence(sentence.strip(), known)
        if found is not None:
            return found
    return None


def _numbers_in(texts: Iterable[str]) -> set[float]:
    known: set[float] = set()
    for text in texts:
        for match in _NUMBER_RE.finditer(text):
            value = _value(match.group())
            if value is not None:
                known.add(value)
    return known


def _value(text: str) -> float | None:
    try:
        return float(text.replace(",", "").replace("−", "-"))
    except ValueError:
        return None


def _in_sentence(sentence: str, known: set[float]) -> Contradiction | None:
    if not sentence or sentence.rstrip().endswith("?"):
        return None
    # Bold and code marks around words, not ``2**10``.
    body = _ANSWER_WORD.sub("", _MARKS.sub("", sentence))
    for match in _NUMBER_RE.finditer(body):
        found = _verdict_at(body, match, known)
        if found is not None:
            return found
    return None


def _verdict_at(body: str, match: re.Match[str], known: set[float]) -> Contradiction | None:
    """The contradiction whose first side is the number `match`, if there is one."""
    start, end = match.span()
    if _touches(body, start, end):
        return None
    before = body[:start]
    clause = re.split(r"[,;:(]|\b(?:so|and|but|then|thus|therefore)\b", before)[-1]
    if _NEGATION.search(before):
        return None
    symbol = before.rstrip()[-1:] if before.rstrip()[-1:] in _SYMBOLS else ""
    words_before = re.findall(r"[\w×*/+-]+", clause[: len(clause) - len(symbol)].lower())
    if words_before and words_before[-1] in _BEFORE and words_before[-2:] not in _STATED_AS:
        return None
    left_unit, after = _unit_after(body, end, symbol)
    if left_unit == "?":
        return None
    verdict = _relation(after)
    if verdict is None:
        return None
    # Another number in the first side's clause makes it part of a bigger side (``3
    # nights at 30 EUR is …``), unless the verdict is said of it by ``which``
    # (``100 USD is 92 EUR, which is …``).
    if not verdict.which and _NUMBER_RE.search(clause):
        return None
    stated, rest_at = verdict.stated, verdict.rest_at
    right = _second_side(after[rest_at:], known)
    if right is None:
        return None
    right_value, right_unit, claim_end = right
    left_value = _value(match.group())
    if left_value is None or not _same_kind(left_unit, right_unit):
        return None
    if left_unit is None and right_unit is not None and verdict.plural:
        return None  # ``2 are more expensive than 85 EUR``: two things, not 2 EUR
    if left_value not in known and right_value not in known:
        return None
    if _holds(left_value, right_value, stated):
        return None
    claim_end_at = len(body) - len(after) + rest_at + claim_end
    if _UNSURE.search(body[:claim_end_at]):
        return None
    claim = body[start - len(symbol) : claim_end_at]
    return Contradiction(" ".join(claim.split()), left_value, right_value, stated)


def _touches(text: str, start: int, end: int) -> bool:
    """Whether the number is part of a date, a time, a range or a ratio (``-``, ``/``, ``:``)."""
    left = text[max(start - 2, 0) : start]
    right = text[end : end + 2]
    return bool(re.search(r"\d[-–/:.]$|[-–/:]$", left) or re.match(r"^[-–/:]\d|^,\d|^\.\d", right))


def _unit_after(text: str, end: int, symbol: str) -> tuple[str | None, str]:
    """The number's unit (None: none; ``?``: a noun or scale that rules it out) and the
    text after it."""
    after = text[end:]
    word = re.match(r"^\s?(%|°[CFcf]|[A-Za-z]+)", after)
    unit = _SYMBOLS.get(symbol)
    if word is None:
        return unit, after
    token = word.group(1).lower()
    if token in _UNITS:
        if unit is not None and _UNITS[token] != unit:
            return "?", after
        unit = _UNITS[token]
        after = after[word.end() :]
        following = re.match(r"^\s*([A-Za-z+*/×]+)", after)
        if following and following.group(1).lower() in _SCALES:
            return "?", after
        return unit, after
    if token in _SCALES:
        return "?", after
    if unit is not None:  # ``€85 room``: the symbol says the unit
        return unit, after
    if token in ("is", "are", "was", "were", "which", "does", "do", "did") or token in _VERB_START:
        return unit, after
    # A noun of its own (``12 slices``): compared only with the same noun.
    return f"noun:{token.rstrip('s')}", after[word.end() :]


_VERB_START = {"exceeds", "exceeded", "covers", "covered", "falls", "fell"}


@dataclass(frozen=True, slots=True)
class _Verdict:
    stated: Relation
    #: Where the second side starts, in the text after the first.
    rest_at: int
    #: Whether it is said of the first side by ``which`` (``…, 92 EUR, which is …``).
    which: bool
    #: Whether its verb is plural (``2 are cheaper``: a count of things).
    plural: bool


def _relation(after: str) -> _Verdict | None:
    """The verdict stated right after the first side, if there is one."""
    verdict = _VERDICT.match(after)
    if verdict is not None:
        index = next(i for i in range(len(_COMPARISONS)) if verdict.group(f"c{i}"))
        stated = _COMPARISONS[index][1]
        return _Verdict(
            _negate(stated) if verdict.group("neg") else stated,
            verdict.start("rest"),
            verdict.group("which") is not None,
            verdict.group("be").lower() in ("are", "were"),
        )
    verb = _VERBS.match(after)
    if verb is not None:
        name = (verb.group("v1") or verb.group("v2")).lower()
        stated = _VERB_RELATIONS[" ".join(name.split())]
        negated = verb.group("neg")
        return _Verdict(
            _negate(stated) if negated else stated,
            verb.start("rest"),
            verb.group("which") is not None,
            negated is not None and negated.lower().startswith(("do ", "don")),
        )
    return None


def _negate(relation: Relation) -> Relation:
    negated: dict[Relation, Relation] = {">=": "<", "<": ">=", ">": "<=", "<=": ">"}
    return negated[relation]


def _second_side(rest: str, known: set[float]) -> tuple[float, str | None, int] | None:
    """The second number, its unit and where the claim ends; None unless the side is
    a plain number (a few fillers before it, a unit and a noun or two after, then the
    clause's end)."""
    first = _NUMBER_RE.search(rest)
    if first is None:
        return None
    lead = rest[: first.start()]
    symbol = lead.rstrip()[-1:] if lead.rstrip()[-1:] in _SYMBOLS else ""
    fillers = re.findall(r"\S+", lead[: len(lead.rstrip()) - len(symbol)])
    if len(fillers) > 4 or any(w.lower() not in _FILLERS for w in fillers):
        return None
    if _touches(rest, *first.span()):
        return None
    value = _value(first.group())
    unit, after = _unit_after(rest, first.end(), symbol)
    if value is None or unit == "?":
        return None
    ends_at = _clause_end(after)
    if ends_at is None:
        return None
    claim_end = len(rest) - len(after) + ends_at
    return value, unit, claim_end


def _clause_end(after: str) -> int | None:
    """Where the second side ends: after at most two nouns (``room``), at the clause's
    end; None if it goes on (a link such as ``for``, a scale, another number)."""
    at, nouns = 0, 0
    while True:
        if re.match(r"\s*(?:[.,;:!)]|$)", after[at:]):
            return at
        word = re.match(r"\s+([A-Za-z]+)", after[at:])
        if word is None:
            return None
        token = word.group(1).lower()
        if token in _ENDS:
            return at
        if token == "for":
            # ``85 EUR for a hotel room``: what the second side is for, no number in it.
            purpose = _PURPOSE.match(after[at + word.end() :])
            if purpose is None:
                return None
            return at + word.end() + purpose.end()
        if nouns == 2 or token in _LINKS or token in _SCALES or token in _UNITS:
            return None
        nouns += 1
        at += word.end()


def _same_kind(left: str | None, right: str | None) -> bool:
    """Whether two sides are of one kind: the same unit or noun, or one bare number and
    the other a unit (never a bare number against a noun: ``4 is not enough for 3 people``)."""
    if left == right:
        return True
    if left is None:
        return right is not None and not right.startswith("noun:")
    if right is None:
        return not left.startswith("noun:")
    return False


def _holds(left: float, right: float, relation: Relation) -> bool:
    if relation == ">=":
        return left >= right
    if relation == "<":
        return left < right
    if relation == ">":
        return left > right
    return left <= right


def _show(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e15 else str(value)


#: How close an answer must be to the task, as difflib's ratio over their words, to be
#: the task again: the question reworded at its start ("Is there anything scheduled on
#: 2026-03-05?" for "Do I have anything scheduled on 2026-03-05?", 0.71) is; a question
#: of the model's own that takes up the task's words ("Do you want to know if it is
#: warmer in Paris or in London tomorrow?", 0.56) is not.
_ECHO_RATIO = 0.7
_WORDS = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class Echo:
    """An answer that is the task's question again, asked back instead of answered."""

    answer: str

    @property
    def note(self) -> str:
        """The note for the model: answer the question rather than repeat it."""
        return (
            f"{NOTE_START} it repeats the question instead of answering it. Answer it "
            "from the tool results, and make any call you still need first."
        )


def echo(answer: str, task: str) -> Echo | None:
    """`answer` if it is a question that repeats the task (or one of its sentences), else None.

    Only a question counts: an answer ending in ``?`` whose words are the task's own,
    in the same order, all but a few (``Is the HDMI cable (SKU A200) in stock?`` for
    the task ``Is the HDMI cable (SKU A200) in stock?``, or ``Is there anything
    scheduled on 2026-03-05?`` for ``Do I have anything scheduled on 2026-03-05?``).
    A question of the model's own (``Which city do you mean?``) is not an echo.
    """
    if not answer.rstrip().endswith("?"):
        return None
    said = _WORDS.findall(answer.lower())
    if len(said) < 3:
        return None
    parts = [task, *_SENTENCES.split(task)]
    for part in parts:
        asked = _WORDS.findall(part.lower())
        if asked and difflib.SequenceMatcher(None, said, asked).ratio() >= _ECHO_RATIO:
            return Echo(answer)
    return None
