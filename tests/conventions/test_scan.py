"""The one walker over source text that skips quoted stretches."""

from __future__ import annotations

import pytest

from tooluse.conventions._scan import (
    JAVA_JS,
    PYTHON,
    Quoting,
    closing_bracket,
    split_top_level,
    unquoted,
)


@pytest.mark.parametrize(
    ("text", "close"),
    [
        ("[f(a=1)] tail", 7),
        ("[f(a='])')]", 10),
        ('[f(a="it\\"s ]")]', 15),
        ("[f(a='''x\n]\n''')] tail", 16),
        ('[f(a="""a "quoted" ]""")]', 24),
        ("[f(a={'k': [1, (2, 3)]})]", 24),
    ],
)
def test_python_brackets_inside_strings_do_not_count(text: str, close: int) -> None:
    assert closing_bracket(text, 0, PYTHON) == close
    assert text[close] == "]"


@pytest.mark.parametrize(
    "text",
    [
        "[f(a=1]",  # another kind of bracket closes first
        "[f(a=1)",  # never closed
        "[f(a='open)]",  # the string never ends
        "[f(a='one\nline')]",  # a short Python string cannot span lines
    ],
)
def test_python_unbalanced_text_has_no_closing_bracket(text: str) -> None:
    assert closing_bracket(text, 0, PYTHON) is None


def test_java_js_quotes_include_backticks_that_span_lines() -> None:
    text = "{a: `x\n}`, b: 'y}'} tail"
    assert closing_bracket(text, 0, JAVA_JS) == 18
    # in Python a backtick is no quote, and the first "}" closes
    assert closing_bracket(text, 0, PYTHON) == 7


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ('1, "a, b", [2, 3], f(4, 5)', ["1", '"a, b"', "[2, 3]", "f(4, 5)"]),
        ("'it\\'s, ok', `x, y`", ["'it\\'s, ok'", "`x, y`"]),
        ("", []),
        ("  ", []),
        ("1,", ["1", ""]),
        ('"open, quote', ['"open, quote']),
    ],
)
def test_split_on_top_level_commas(text: str, parts: list[str]) -> None:
    assert split_top_level(text, JAVA_JS) == parts


def test_unquoted_yields_only_what_lies_outside_quotes() -> None:
    text = "a'b'c\"d\"e"
    assert "".join(text[i] for i in unquoted(text, 0, JAVA_JS)) == "ace"
    # a quote that never closes ends the walk
    assert list(unquoted("x'y", 0, Quoting("'"))) == [0]
