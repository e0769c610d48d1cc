"""Reading calls written in Python syntax: BFCL's forms, literals only, errors with positions."""

from __future__ import annotations

import pytest

from tooluse.conventions import CallSyntaxError, parse_python_calls


def test_nested_values_negative_numbers_and_several_calls() -> None:
    text = (
        '[plan(stops=["Paris", "Lyon"], budget={"eur": -12.5, "nights": [1, 2]}, '
        "strict=True, note=None), other(n=-3, t=(1, 2))]"
    )
    assert parse_python_calls(text) == [
        (
            "plan",
            {
                "stops": ["Paris", "Lyon"],
                "budget": {"eur": -12.5, "nights": [1, 2]},
                "strict": True,
                "note": None,
            },
        ),
        ("other", {"n": -3, "t": (1, 2)}),
    ]


def test_dotted_names_keep_their_dots() -> None:
    assert parse_python_calls("[math.factorial(number=5), a.b.c(x='y')]") == [
        ("math.factorial", {"number": 5}),
        ("a.b.c", {"x": "y"}),
    ]


def test_positional_arguments_bind_to_the_parameter_order() -> None:
    calls = parse_python_calls(
        "[get_exchange_rate('USD', target='EUR')]",
        parameters={"get_exchange_rate": ["base", "target"]},
    )
    assert calls == [("get_exchange_rate", {"base": "USD", "target": "EUR"})]


@pytest.mark.parametrize(
    "text",
    [
        "[f(a=1)]",
        "f(a=1)",
        "  [f(a=1)]\n",
        "`[f(a=1)]`",
        "```python\n[f(a=1)]\n```",
        "```\n[f(a=1)]\n```",
        "[\n    f(\n        a=1,\n    ),\n]",
    ],
)
def test_what_bfcl_accepts_around_the_list(text: str) -> None:
    assert parse_python_calls(text) == [("f", {"a": 1})]


@pytest.mark.parametrize("text", ["[]", "", "  ", "``"])
def test_empty_list_or_text_is_no_call(text: str) -> None:
    assert parse_python_calls(text) == []


def test_strings_keep_brackets_quotes_and_unicode() -> None:
    text = """[say(text="a ] b ) c", other='it\\'s', more=\"\"\"x\ny\"\"\", city="Zürich")]"""
    assert parse_python_calls(text) == [
        ("say", {"text": "a ] b ) c", "other": "it's", "more": "x\ny", "city": "Zürich"})
    ]


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ("[f(a=x)]", 1, 6, '`x` is not a literal value: put text in quotes, "x"'),
        ("[f(a=true)]", 1, 6, "`true` is not Python: write True"),
        ("[f(a=null)]", 1, 6, "`null` is not Python: write None"),
        ("[f(a=1, b=2 * 3)]", 1, 11, "`2 * 3` is an expression: write its value"),
        ("[f(a=g(1))]", 1, 6, "`g(1)` is a call, not a value"),
        ("[f(a=1j)]", 1, 6, "`1j` is not a JSON-compatible literal"),
        ("[f(a={1, 2})]", 1, 6, "`{1, 2}` is not a literal value"),
        ("[f(a={(1, 2): 3})]", 1, 7, "dict keys must be strings or numbers"),
        ("[f(**kw)]", 1, 4, "`**` unpacking is not allowed"),
        ("[f(a=1, a=2)]", 1, 9, "f got two values for 'a'"),
        ('["x", f()]', 1, 2, "`'x'` is not a call"),
        ("[f()[0]()]", 1, 2, "`f()[0]` is not a tool name"),
        ("[f(1)]", 1, 4, "f: give arguments by name (param=value)"),
        ("[f(a=1]", 1, 7, "closing parenthesis ']' does not match opening parenthesis '('"),
        ("[f(a=1", 1, 3, "'(' was never closed"),
        ("[f(a=1) g()]", 1, 2, "(are the calls separated by commas?)"),
        ('[f(a="é", b=)]', 1, 13, "invalid syntax"),
        ("42", 1, 1, "expected a list of calls, found `42`"),
        ("[f(a=1),\n g(b=[1, 2,\n   oops])]", 3, 4, "`oops` is not a literal value"),
    ],
)
def test_errors_say_where(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(CallSyntaxError) as caught:
        parse_python_calls(text)
    error = caught.value
    assert message in error.message
    assert (error.line, error.column) == (line, column)
    assert str(error).startswith(f"line {line}, column {column}: ")
    assert error.source_line.rstrip("\n") == text.split("\n")[line - 1]


def test_too_many_positional_arguments() -> None:
    with pytest.raises(CallSyntaxError, match=r"takes at most 2 \(base, target\) by position"):
        parse_python_calls("[rate('USD', 'EUR', 3)]", parameters={"rate": ["base", "target"]})
    with pytest.raises(CallSyntaxError, match="takes none by position"):
        parse_python_calls("[now(1)]", parameters={"now": []})


def test_the_pointer_marks_the_column() -> None:
    with pytest.raises(CallSyntaxError) as caught:
        parse_python_calls('[f(city="Zürich", n=x)]')
    # column 21 counts characters: "ü" is two bytes in the AST's offsets
    assert caught.value.column == 21
    assert caught.value.pointer() == '    [f(city="Zürich", n=x)]\n' + " " * 24 + "^"
