"""Reading the script out of a model's reply: forgiving where intent is clear, strict otherwise."""

from __future__ import annotations

import ast

import pytest
from syrupy.assertion import SnapshotAssertion

from examples.seed_tools import toolbox as seed_tools
from tooluse._tokens import count_tokens
from tooluse.conventions import Answer, CodeConvention, Retry, Script, extract_script
from tooluse.conventions._code import ExtractedScript
from tooluse.models import ModelResponse

NAMES = {"lookup_capital", "calculator"}


def extracted(text: str) -> ExtractedScript:
    found = extract_script(text, NAMES)
    assert isinstance(found, ExtractedScript), found
    ast.parse(found.code)
    return found


def test_a_fenced_block_with_prose_around_it() -> None:
    found = extracted("Let me look.\n```python\nprint(lookup_capital('France'))\n```\nDone.")
    assert found.code == "print(lookup_capital('France'))\n" and found.repairs == ()


def test_several_blocks_are_joined_in_order() -> None:
    found = extracted("```python\nx = 1\n```\nthen\n```py\nprint(x)\n```")
    assert found.code == "x = 1\nprint(x)\n"
    assert found.repairs == ("joined 2 python blocks into one script",)


def test_missing_fence_around_code_that_calls_a_tool() -> None:
    found = extracted("c = lookup_capital('Japan')\nprint(c)")
    assert "read an unfenced reply that calls tools as a script" in found.repairs


def test_prose_that_happens_to_parse_is_an_answer_not_a_script() -> None:
    assert extract_script("Paris", NAMES) is None
    assert extract_script("The capital is Paris.", NAMES) is None


@pytest.mark.parametrize(
    "reply",
    [
        # the whole reply on one line, fences included
        "```python\\nfor c in ['France', 'Japan']:\\n    print(lookup_capital(c))\\n```",
        # real fence lines, escaped body
        "```python\nfor c in ['France', 'Japan']:\\n    print(lookup_capital(c))\n```",
        # no fence at all
        "for c in ['France', 'Japan']:\\n    print(lookup_capital(c))",
    ],
)
def test_literal_newline_escapes_are_repaired_when_the_result_parses(reply: str) -> None:
    found = extracted(reply)
    assert "replaced literal \\n escapes with newlines" in found.repairs
    assert found.code.strip() == "for c in ['France', 'Japan']:\n    print(lookup_capital(c))"


def test_escapes_inside_string_literals_of_a_valid_script_are_left_alone() -> None:
    found = extracted("```python\nprint('a\\nb')\n```")
    assert found.code == "print('a\\nb')\n" and found.repairs == ()


def test_unclosed_fence_reads_to_the_end() -> None:
    found = extracted("```python\nprint(calculator('1+1'))\n")
    assert found.repairs == ("read an unclosed code fence to the end of the reply",)


def test_a_real_syntax_error_goes_back_with_line_and_column() -> None:
    convention = CodeConvention()
    convention.prepare(seed_tools, None)
    action = convention.interpret(ModelResponse(content="```python\nx = 1\nprint(x +)\n```"))
    assert isinstance(action, Retry)
    assert "line 2, column" in action.feedback and "print(x +)" in action.feedback
    assert "Nothing was run" in action.feedback


@pytest.mark.parametrize(
    ("code", "line", "call"),
    [
        ("lookup_capital Japan", 1, "lookup_capital(country=...)"),
        ("lookup_capital -c 'Japan'", 1, "lookup_capital(country=...)"),  # parses, then fails
        ("import tools\ncalculator /e 2+2\nprint(1)", 2, "calculator(expression=...)"),
        ("for c in ['Japan']:\n    lookup_capital ./countries", 2, "lookup_capital(country=...)"),
    ],
)
def test_a_tool_run_as_a_shell_command_is_sent_back_unrun(code: str, line: int, call: str) -> None:
    convention = CodeConvention()
    convention.prepare(seed_tools, None)
    action = convention.interpret(ModelResponse(content=f"```python\n{code}\n```"))
    assert isinstance(action, Retry)
    shown = code.splitlines()[line - 1].strip()
    assert f"Line {line} of your script, `{shown}`, is written as a shell command" in (
        action.feedback
    )
    assert f"`{call}`" in action.feedback and "Nothing was run" in action.feedback


@pytest.mark.parametrize(
    "code",
    [
        "x = lookup_capital('Japan')\nprint(x)",
        "print(calculator)",
        'note = """\nlookup_capital Japan\n"""\nprint(note)',  # inside a string
        "found = [c for c in 'ab' if lookup_capital in (c,)]\nprint(found)",
        "lookup = 3\nprint(lookup -1)",  # not a tool
    ],
)
def test_python_that_names_a_tool_is_not_taken_for_a_shell_command(code: str) -> None:
    convention = CodeConvention()
    convention.prepare(seed_tools, None)
    reply = ModelResponse(content=f"```python\n{code}\n```")
    assert isinstance(convention.interpret(reply), Script)


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        ("Tokyo is the capital.", Answer),
        ("```python\nprint(lookup_capital('Japan'))\n```", Script),
        ("", Retry),
    ],
)
def test_interpretation(content: str, kind: type) -> None:
    convention = CodeConvention()
    convention.prepare(seed_tools, None)
    assert isinstance(convention.interpret(ModelResponse(content=content)), kind)


def test_native_calls_are_redirected_to_code() -> None:
    from tooluse import ToolCall

    convention = CodeConvention()
    convention.prepare(seed_tools, None)
    action = convention.interpret(ModelResponse(tool_calls=[ToolCall("a", "lookup_capital", "{}")]))
    assert isinstance(action, Retry) and "```python" in action.feedback


def test_prompt_snapshot_and_size(snapshot: SnapshotAssertion) -> None:
    prepared = CodeConvention().prepare(seed_tools, None)
    assert prepared.tools == ()
    prompt = prepared.system_prompt or ""
    assert prompt == snapshot
    # the whole fixed block P of the cost model, for the five seed tools
    assert count_tokens(prompt) <= 600
    stubs = prompt.split("```python\n", 1)[1].rsplit("```", 1)[0]
    ast.parse(stubs)
