"""The grammars accept what they promise and nothing else, on the embedded model's tokens."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tooluse.decoding import (
    Grammar,
    GrammarCompiler,
    GrammarError,
    GrammarTool,
    call_grammar,
    calls_grammar,
    code_grammar,
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
    return f'<tool_call>{{"name":"{name}","arguments":{arguments}}}</tool_call>'


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        (call("get_weather", '{"city":"Paris"}'), True),
        (call("get_weather", '{"city":"Paris","unit":"celsius"}'), True),
        (
            call("get_weather", '{"city":"Paris"}')
            + "\n"
            + call("get_rate", '{"base":"USD","days":3}'),
            True,
        ),
        ("It is sunny in Paris.", True),
        (call("get_weather", '{"city":"Paris","country":"FR"}'), False),  # invented argument
        (call("get_weather", '{"unit":"celsius"}'), False),  # required argument missing
        (call("get_weather", '{"city":"Paris","unit":"kelvin"}'), False),  # outside the enum
        (call("get_rate", '{"base":"usd","days":3}'), False),  # pattern
        (call("get_rate", '{"base":"USD","days":31}'), False),  # maximum
        (call("get_time", '{"city":"Paris"}'), False),  # unknown tool
        (call("get_weather", '{ "city": "Paris" }'), False),  # compact JSON only
        ("<tool_call>{}</tool_call>", False),
        (call("get_weather", '{"city":"Paris"}') + " and more", False),
        ('<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}', False),  # never closed
    ],
)
def test_calls_or_answer(compiler: GrammarCompiler, text: str, ok: bool) -> None:
    assert accepts(compiler, calls_grammar([WEATHER, RATE]), text) is ok


def test_required_calls_refuse_a_plain_answer(compiler: GrammarCompiler) -> None:
    grammar = calls_grammar([WEATHER, RATE], allow_answer=False)
    assert not accepts(compiler, grammar, "It is sunny.")
    assert accepts(compiler, grammar, call("get_weather", '{"city":"Oslo"}'))


def test_a_forced_tool_leaves_only_its_arguments_to_the_model(compiler: GrammarCompiler) -> None:
    grammar = call_grammar(RATE)
    assert accepts(compiler, grammar, call("get_rate", '{"base":"EUR","days":7}'))
    assert not accepts(compiler, grammar, call("get_weather", '{"city":"Oslo"}'))
    assert not accepts(compiler, grammar, call("get_rate", '{"base":"EUR","days":7}') * 2)
    # Everything up to the arguments is forced: the model never samples the tool name.
    matcher = compiler.matcher(grammar)
    forced = compiler.tokenizer.decode_str(matcher.compute_ff_tokens())
    assert forced.startswith('<tool_call>{"name":"get_rate","arguments":{"')


def test_unbounded_strings_are_bounded(compiler: GrammarCompiler) -> None:
    grammar = calls_grammar([WEATHER], max_string_length=10)
    assert accepts(compiler, grammar, call("get_weather", '{"city":"Reykjavik"}'))
    assert not accepts(compiler, grammar, call("get_weather", '{"city":"Llanfairpwllgwyngyll"}'))


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
