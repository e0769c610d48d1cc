"""The grammars accept what they promise and nothing else, on the embedded model's tokens."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tooluse.decoding import (
    CALL_CLOSE,
    CALL_OPEN,
    Grammar,
    GrammarCompiler,
    GrammarError,
    GrammarTool,
    answer_grammar,
    call_grammar,
    calls_grammar,
    code_grammar,
    python_calls_grammar,
    to_gbnf,
)

WEATHER = GrammarTool(
    "get_weather",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
)
RATE = GrammarTool(
    "get_rate",
    {
        "type": "object",
        "properties": {
            "base": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "days": {"type": "integer", "minimum": 1, "maximum": 30},
        },
        "required": ["base", "days"],
    },
)


def accepts(compiler: GrammarCompiler, grammar: Grammar, text: str) -> bool:
    """Whether `text`, tokenized as the model would emit it, is a complete sentence of `grammar`."""
    matcher = compiler.matcher(grammar)
    tokens = compiler.tokenizer.tokenize_str(text)
    return matcher.consume_tokens(tokens) and matcher.is_accepting()


def call(name: str, arguments: str) -> str:
    return f'<tool_call>{{"name": "{name}", "arguments": {arguments}}}</tool_call>'


def fenced(*bodies: str) -> str:
    return "```json\n" + "\n".join(bodies) + "\n```"


def body(name: str, arguments: str) -> str:
    return f'{{"name": "{name}", "arguments": {arguments}}}'


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        (call("get_weather", '{"city": "Paris"}'), True),
        (call("get_weather", '{"city": "Paris", "unit": "celsius"}'), True),
        (
            call("get_weather", '{"city": "Paris"}')
            + "\n"
            + call("get_rate", '{"base": "USD", "days": 3}'),
            True,
        ),
        ("It is sunny in Paris.", True),
        (call("get_weather", '{"city": "Paris", "country": "FR"}'), False),  # invented argument
        (call("get_weather", '{"unit": "celsius"}'), False),  # required argument missing
        (call("get_weather", '{"city": "Paris", "unit": "kelvin"}'), False),  # outside the enum
        (call("get_rate", '{"base": "usd", "days": 3}'), False),  # pattern
        (call("get_rate", '{"base": "USD", "days": 31}'), False),  # maximum
        (call("get_time", '{"city": "Paris"}'), False),  # unknown tool
        ("<tool_call>{}</tool_call>", False),
        (call("get_weather", '{"city": "Paris"}') + " and more", False),
        ('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}', False),  # unclosed
        # The layout is the model's, compact or spaced, on one line, in any frame.
        (call("get_weather", '{"city":"Paris"}'), True),
        ('<tool_call>\n{"name":"get_weather","arguments":{"city":"Paris"}}\n</tool_call>', True),
        (fenced(body("get_weather", '{"city": "Paris"}')), True),
        (fenced('{\n  "name": "get_weather",\n  "arguments": {"city": "Oslo"}\n}'), False),
        (
            fenced(
                body("get_weather", '{"city": "Oslo"}'),
                body("get_rate", '{"base": "EUR", "days": 2}'),
            ),
            True,
        ),
        (body("get_weather", '{"city": "Paris"}'), True),
        (
            body("get_weather", '{"city": "Paris"}')
            + "\n"
            + body("get_weather", '{"city": "Rome"}'),
            True,
        ),
        ('[get_weather(city="Paris", unit="celsius"), get_rate(base="USD", days=3)]', True),
        ('[get_rate(days=3, base="USD")]', True),  # keyword arguments in any order
        # Each frame holds only valid calls, and nothing follows it.
        (fenced(body("get_weather", '{"city": "Paris", "country": "FR"}')), False),
        (fenced(body("get_weather", '{"city": "Paris"}')) + "\nDone.", False),
        (fenced('{"name": "calculator", "arguments": {"expression": "1"}}'), False),
        (body("get_time", '{"city": "Paris"}'), False),
        ('[get_weather(city="Paris", unit="kelvin")]', False),
        ('[get_weather(town="Paris")]', False),
        ("[get_rate(base='USD', days=3)]", False),  # strings in double quotes, as JSON's
        ('[get_rate(base="USD", days=true)]', False),  # Python literals, not JSON's
        ('[get_time(city="Paris")]', False),
        # Blanks between tokens are bounded: a model cannot pad forever.
        ('{"name":  "get_weather", "arguments": {"city": "Paris"}}', False),
    ],
)
def test_calls_in_every_frame_or_an_answer(compiler: GrammarCompiler, text: str, ok: bool) -> None:
    assert accepts(compiler, calls_grammar([WEATHER, RATE]), text) is ok


def test_python_calls_of_booleans_and_lists_are_python_literals(compiler: GrammarCompiler) -> None:
    tool = GrammarTool(
        "search",
        {
            "type": "object",
            "properties": {
                "terms": {"type": "array", "items": {"type": "string"}},
                "exact": {"type": "boolean"},
                "limit": {"type": ["integer", "null"]},
            },
        },
    )
    grammar = calls_grammar([tool])
    assert accepts(compiler, grammar, '[search(terms=["a", "b"], exact=True, limit=None)]')
    assert accepts(compiler, grammar, "[search()]")
    assert not accepts(compiler, grammar, '[search(terms=["a"], exact=true)]')
    assert not accepts(compiler, grammar, "[search(terms=[1])]")


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("It is sunny in Paris.", True),
        ('[get_weather(city="Paris")]', True),
        ('[get_weather(city="Paris", unit="celsius"), get_rate(base="USD", days=3)]', True),
        # only the text convention's own syntax: no JSON frames, no tags
        ('{"name": "get_weather", "arguments": {"city": "Paris"}}', False),
        (call("get_weather", '{"city": "Paris"}'), False),
        ('[get_weather(city="Paris", unit="kelvin")]', False),
        ('[get_time(city="Paris")]', False),
        ('[get_weather(city="Paris")] and then some prose', False),
    ],
)
def test_the_text_conventions_calls_or_an_answer(
    compiler: GrammarCompiler, text: str, ok: bool
) -> None:
    grammar = python_calls_grammar([WEATHER, RATE])
    assert grammar is not None
    assert accepts(compiler, grammar, text) is ok


def test_text_calls_are_left_free_when_a_name_is_not_python() -> None:
    # The text convention writes such a tool under another name; a grammar of
    # the tools' own names would forbid the very call the prompt shows.
    dashed = GrammarTool("get-weather", WEATHER.parameters)
    assert python_calls_grammar([WEATHER, dashed]) is None
    assert python_calls_grammar([WEATHER, GrammarTool("math.factorial", {})]) is not None


def test_one_call_only_when_parallel_calls_are_off(compiler: GrammarCompiler) -> None:
    grammar = calls_grammar([WEATHER, RATE], parallel=False)
    one, two = body("get_weather", '{"city": "Oslo"}'), body("get_weather", '{"city": "Rome"}')
    assert accepts(compiler, grammar, fenced(one))
    assert not accepts(compiler, grammar, fenced(one, two))
    assert not accepts(compiler, grammar, one + "\n" + two)
    assert not accepts(compiler, grammar, '[get_weather(city="Oslo"), get_weather(city="Rome")]')


def test_a_prose_answer_cannot_hide_a_call_frame(compiler: GrammarCompiler) -> None:
    # A reply that opens like a call is held to being one: a small model that
    # "answers" with a JSON description of a tool is kept to a valid call.
    grammar = calls_grammar([WEATHER, RATE])
    for opening in ("{", "```", "[", "<"):
        assert not accepts(compiler, grammar, opening + "the tool takes a city"), opening


def test_required_calls_refuse_a_plain_answer(compiler: GrammarCompiler) -> None:
    grammar = calls_grammar([WEATHER, RATE], allow_answer=False)
    assert not accepts(compiler, grammar, "It is sunny.")
    assert accepts(compiler, grammar, call("get_weather", '{"city": "Oslo"}'))


def test_an_answer_grammar_takes_prose_and_refuses_every_call_frame(
    compiler: GrammarCompiler,
) -> None:
    grammar = answer_grammar()
    assert accepts(
        compiler, grammar, "1. Chen Dubois manages Bruno.\n2. Bruno Haddad manages Chen."
    )
    assert not accepts(compiler, grammar, call("get_weather", '{"city": "Oslo"}'))
    for opening in ("{", "```", "[", " "):
        assert not accepts(compiler, grammar, opening + "the tool takes a city"), opening


def test_a_forced_tool_leaves_only_its_arguments_to_the_model(compiler: GrammarCompiler) -> None:
    grammar = call_grammar(RATE)
    assert accepts(compiler, grammar, call("get_rate", '{"base": "EUR", "days": 7}'))
    assert not accepts(compiler, grammar, call("get_weather", '{"city": "Oslo"}'))
    assert not accepts(compiler, grammar, call("get_rate", '{"base": "EUR", "days": 7}') * 2)
    # Everything up to the arguments is forced: the model never samples the tool name.
    matcher = compiler.matcher(grammar)
    forced = compiler.tokenizer.decode_str(matcher.compute_ff_tokens())
    assert forced.startswith('<tool_call>{"name": "get_rate", "arguments": {"')


# -- call tags that are one special token each (Qwen2.5's vocabulary) -------------------


def test_the_tags_special_tokens_are_found_in_the_vocabulary(
    compiler: GrammarCompiler, tagged_compiler: GrammarCompiler
) -> None:
    assert tagged_compiler.special_token(CALL_OPEN) == 256
    assert tagged_compiler.special_token(CALL_CLOSE) == 257
    assert tagged_compiler.special_token("<tool") is None
    # SmolLM2 spells the tags with ordinary tokens.
    assert compiler.special_token(CALL_OPEN) is None


def test_a_grammar_naming_the_tag_tokens_accepts_the_call_the_model_emits(
    tagged_compiler: GrammarCompiler,
) -> None:
    emitted = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert tagged_compiler.tokenizer.tokenize_str(emitted)[0] == 256
    tags = (256, 257)
    assert accepts(tagged_compiler, calls_grammar([WEATHER, RATE], tag_tokens=tags), emitted)
    assert accepts(
        tagged_compiler,
        call_grammar(WEATHER, tag_tokens=tags),
        call("get_weather", '{"city": "Oslo"}'),
    )
    # Spelled as text, the tag refuses the one token the model has for it.
    assert not accepts(tagged_compiler, calls_grammar([WEATHER, RATE]), emitted)
    # The forced frame of a named tool is the token, then the text.
    matcher = tagged_compiler.matcher(call_grammar(RATE, tag_tokens=tags))
    assert matcher.compute_ff_tokens()[0] == 256


def test_unbounded_strings_are_bounded(compiler: GrammarCompiler) -> None:
    grammar = calls_grammar([WEATHER], max_string_length=10)
    assert accepts(compiler, grammar, call("get_weather", '{"city": "Reykjavik"}'))
    assert not accepts(compiler, grammar, call("get_weather", '{"city": "Llanfairpwllgwyngyll"}'))
    assert not accepts(compiler, grammar, '[get_weather(city="Llanfairpwllgwyngyll")]')


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("```python\nprint(1)\n```", True),
        ("Let me compute it.\n```python\nfor i in range(3):\n    print(i)\n```", True),
        ("The answer is 4.", True),
        ("Use `print` to show it.", True),
        ("```python\nprint(1)\n```\nDone.", False),  # nothing after the block
        ("```python\nprint(1)\n```\n```python\nprint(2)\n```", False),  # one block
        ("```python\nprint(1)", False),  # unclosed
        ("```\nprint(1)\n```", False),  # the language is named
    ],
)
def test_code_replies(compiler: GrammarCompiler, text: str, ok: bool) -> None:
    assert accepts(compiler, code_grammar(), text) is ok


def test_a_grammar_compiles_once_and_is_copied_after(compiler: GrammarCompiler) -> None:
    tool = GrammarTool("once", {"type": "object", "properties": {"n": {"type": "integer"}}})
    before = len(compiler.compile_times)
    first = compiler.matcher(calls_grammar([tool]))
    second = compiler.matcher(
        calls_grammar(
            [
                GrammarTool(
                    "once",
                    {
                        "properties": {"n": {"type": "integer", "description": "other"}},
                        "type": "object",
                    },
                )
            ]
        )
    )
    assert len(compiler.compile_times) == before + 1
    # The copies are independent: advancing one leaves the other at the start.
    assert first.consume_tokens(compiler.tokenizer.tokenize_str("<tool_call>"))
    assert second.consume_tokens(compiler.tokenizer.tokenize_str("Plain answer"))


def test_unenforced_keywords_are_reported_when_compiled(
    compiler: GrammarCompiler, caplog: pytest.LogCaptureFixture
) -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"ids": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}},
    }
    grammar = calls_grammar([GrammarTool("dedupe", schema)])
    assert grammar.unenforced == ("dedupe: $.properties.ids: uniqueItems",)
    with caplog.at_level(logging.WARNING, logger="tooluse.decoding"):
        compiler.matcher(grammar)
    assert "dedupe: $.properties.ids: uniqueItems" in caplog.text


def test_a_grammar_llguidance_refuses_raises_with_its_reason(compiler: GrammarCompiler) -> None:
    with pytest.raises(GrammarError, match="unknown name"):
        compiler.matcher(Grammar("start: undefined_rule\n"))


def test_every_grammar_has_a_gbnf_form_llama_cpp_parses() -> None:
    from llama_cpp.llama_grammar import LlamaGrammar

    for grammar in (calls_grammar([WEATHER, RATE]), call_grammar(RATE), code_grammar()):
        assert LlamaGrammar.from_string(to_gbnf(grammar), verbose=False) is not None
    assert "root ::= calls | answer" in to_gbnf(calls_grammar([WEATHER]))
    assert "calls ::= call\n" in to_gbnf(call_grammar(RATE)) + "\n"
    with pytest.raises(ValueError, match="no GBNF form"):
        to_gbnf(Grammar("start: ANSWER\n"))


SHARE = GrammarTool(
    "share_file",
    {
        "$defs": {"SharingPermission": {"enum": ["r", "rw"], "type": "string"}},
        "type": "object",
        "properties": {
            "file_id": {"type": "string"},
            "permission": {"$ref": "#/$defs/SharingPermission"},
        },
        "required": ["file_id", "permission"],
    },
)


def test_tools_with_their_own_definitions_join_into_one_grammar(
    compiler: GrammarCompiler,
) -> None:
    # Each tool's schema refers to its own $defs; joined under one root, a reference
    # left as it was would point nowhere and llguidance would refuse the grammar.
    grammar = calls_grammar([WEATHER, SHARE])
    compiler.matcher(grammar)  # raises GrammarError if llguidance refuses it
    assert accepts(compiler, grammar, call("share_file", '{"file_id": "3", "permission": "rw"}'))
    assert not accepts(
        compiler, grammar, call("share_file", '{"file_id": "3", "permission": "all"}')
    )
    python = python_calls_grammar([WEATHER, SHARE])
    assert accepts(compiler, python, '[share_file(file_id="3", permission="r")]')
    assert not accepts(compiler, python, '[share_file(file_id="3", permission="x")]')
