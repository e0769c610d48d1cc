"""Tool-use examples: checked when a tool is built, and shown in each convention's own form."""

from __future__ import annotations

import ast
import doctest
import json
import types
from typing import Any

import pytest

from tooluse import Toolbox, ToolDefinitionError, ToolExample, tool
from tooluse._messages import Message
from tooluse.conventions import (
    Calls,
    CodeConvention,
    JsonConvention,
    PlanConvention,
    TextConvention,
)
from tooluse.mcp import MCPClient, ToolServer
from tooluse.models._base import ModelRequest, ModelResponse
from tooluse.models._chat_template import plain_messages, tool_specs, tools_block
from tooluse.run._searching import render_for
from tooluse.tools import Tool

RATES = {"USD": 1.0, "EUR": 0.92, "CAD": 1.36}


@tool(
    examples=[
        {"arguments": {"amount": 250, "base": "CAD", "target": "EUR"}, "result": 169.12},
        ToolExample({"amount": 10, "base": "USD"}),
    ]
)
def convert(amount: float, base: str, target: str = "EUR") -> float:
    """Convert money between currencies.

    Args:
        amount: How much, in base
        base: ISO 4217 code of the currency the amount is in
        target: ISO 4217 code of the currency to convert to
    """
    return round(amount / RATES[base] * RATES[target], 2)


@tool(examples=[{"arguments": {"city": "Madrid"}, "result": {"city": "Madrid", "sky": "sunny"}}])
def get_weather(city: str) -> dict[str, str]:
    """Return the weather in a city.

    Args:
        city: City name
    """
    return {"city": city, "sky": "sunny"}


BOX = Toolbox([convert, get_weather])


# --- checked when the tool is built --------------------------------------------------------


def test_dicts_and_tool_examples_are_both_taken() -> None:
    assert convert.examples == (
        ToolExample({"amount": 250, "base": "CAD", "target": "EUR"}, 169.12),
        ToolExample({"amount": 10, "base": "USD"}),
    )
    assert convert.examples[0].has_result and not convert.examples[1].has_result
    assert ToolExample({}, None).has_result  # None is a result like any other


def test_an_example_that_does_not_fit_names_the_tool_its_index_and_the_problem() -> None:
    with pytest.raises(ToolDefinitionError) as caught:

        @tool(examples=[{"arguments": {"city": "Oslo"}}, {"arguments": {"town": "Oslo"}}])
        def weather(city: str) -> str:
            return "snow"

    message = str(caught.value)
    assert message.startswith("tool 'weather': example 1 does not fit the parameters: ")
    assert "missing required argument 'city'" in message
    assert "'town'" in message


def test_a_wrong_type_is_the_validator_s_own_words() -> None:
    with pytest.raises(ToolDefinitionError, match=r"example 0 .*'amount' must be number"):
        Tool.from_schema(
            "pay",
            "Pay an amount.",
            {"type": "object", "properties": {"amount": {"type": "number"}}},
            lambda amount: None,
            examples=[{"arguments": {"amount": "ten"}}],
        )


@pytest.mark.parametrize(
    ("examples", "said"),
    [
        ({"arguments": {"city": "Oslo"}}, "examples must be a list"),
        ([{"city": "Oslo"}], "example 0: a dict example is {'arguments'"),
        ([{"arguments": {"city": "Oslo"}, "output": "snow"}], "unknown keys ['output']"),
        (["Oslo"], "example 0: expected a ToolExample or a dict"),
        ([{"arguments": ["Oslo"]}], "example 0: arguments must be a dict"),
        ([{"arguments": {"city": float("nan")}}], "example 0: arguments must be JSON values"),
    ],
)
def test_a_malformed_example_is_a_definition_error(examples: Any, said: str) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        tool(examples=examples)(_city_weather)
    assert said in str(caught.value)
    assert "tool '_city_weather'" in str(caught.value)


def _city_weather(city: str) -> str:
    return "snow"


def test_with_examples_copies_a_tool_and_checks_them() -> None:
    plain = tool(_city_weather)
    shown = plain.with_examples([{"arguments": {"city": "Oslo"}, "result": "snow"}])
    assert plain.examples == ()
    assert shown.examples == (ToolExample({"city": "Oslo"}, "snow"),)
    assert shown("Bergen") == "snow"
    with pytest.raises(ToolDefinitionError, match="example 0 does not fit"):
        plain.with_examples([{"arguments": {}}])


# --- JSON Schema and the providers ---------------------------------------------------------


def test_openai_gets_the_arguments_as_json_schema_examples() -> None:
    [rendered, _] = BOX.to_openai()
    parameters = rendered["function"]["parameters"]
    assert parameters["examples"] == [
        {"amount": 250, "base": "CAD", "target": "EUR"},
        {"amount": 10, "base": "USD"},
    ]
    assert rendered["function"]["description"] == "Convert money between currencies."


def test_openai_strict_mode_keeps_examples_out_of_the_schema_and_in_the_description() -> None:
    [rendered, _] = BOX.to_openai(strict=True)
    function = rendered["function"]
    assert "examples" not in json.dumps(function["parameters"])
    assert function["description"] == (
        "Convert money between currencies.\n\n"
        'Example: {"amount": 250, "base": "CAD", "target": "EUR"} -> 169.12\n'
        'Example: {"amount": 10, "base": "USD"}'
    )


def test_anthropic_gets_input_examples() -> None:
    [rendered, weather] = BOX.to_anthropic()
    assert rendered["input_examples"] == [
        {"amount": 250, "base": "CAD", "target": "EUR"},
        {"amount": 10, "base": "USD"},
    ]
    assert "examples" not in rendered["input_schema"]
    assert weather["input_examples"] == [{"city": "Madrid"}]


def test_a_tool_without_examples_renders_as_before() -> None:
    plain = tool(_city_weather)
    assert "examples" not in Toolbox([plain]).to_openai()[0]["function"]["parameters"]
    assert "input_examples" not in Toolbox([plain]).to_anthropic()[0]
    assert "Examples:" not in Toolbox([plain]).stub_module()


# --- the stub module: doctest lines ------------------------------------------------------------


def test_the_stub_shows_examples_as_doctests_that_pass_against_the_tools() -> None:
    source = BOX.stub_module(module="tools")
    module = ast.parse(source)
    docstrings = {
        node.name: ast.get_docstring(node)
        for node in module.body
        if isinstance(node, ast.FunctionDef)
    }
    assert docstrings["convert"] is not None
    assert docstrings["convert"].endswith(
        "Examples:\n"
        "    >>> tools.convert(amount=250, base='CAD', target='EUR')\n"
        "    169.12\n"
        "    >>> tools.convert(amount=10, base='USD')"
    )
    # The standard library's doctest reads the lines, and they hold for the real tools.
    tools = types.SimpleNamespace(convert=convert, get_weather=get_weather)
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(verbose=False)
    for name, doc in docstrings.items():
        assert doc is not None
        test = parser.get_doctest(doc, {"tools": tools}, name, None, 0)
        assert test.examples, name
        runner.run(test, out=lambda _: None)
    # The example without a result prints one when run: doctest fails that one only.
    assert runner.summarize(verbose=False) == doctest.TestResults(failed=1, attempted=3)


def test_without_a_module_the_doctests_call_bare_functions() -> None:
    assert ">>> convert(amount=250, base='CAD', target='EUR')" in BOX.stub_module()


def test_python_names_stand_in_for_names_python_cannot_take() -> None:
    shipped = Tool.from_schema(
        "ship",
        "Ship a parcel.",
        {
            "type": "object",
            "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
            "required": ["from", "to"],
        },
        lambda **kwargs: "ok",
        examples=[{"arguments": {"to": "Lyon", "from": "Paris"}, "result": "ok"}],
    )
    source = Toolbox([shipped]).stub_module(module="tools")
    ast.parse(source)
    assert ">>> tools.ship(from_='Paris', to='Lyon')" in source


# --- the conventions' prompts --------------------------------------------------------------


def test_the_code_convention_prompt_calls_through_its_module() -> None:
    prompt = CodeConvention().prompt(BOX)
    assert ">>> tools.convert(amount=250, base='CAD', target='EUR')\n        169.12" in prompt
    assert ">>> tools.get_weather(city='Madrid')\n        {'city': 'Madrid', 'sky': 'sunny'}" in (
        prompt
    )


def test_the_plan_convention_prompt_calls_bare_functions_as_plan_steps_do() -> None:
    prompt = PlanConvention().prompt(BOX)
    assert ">>> convert(amount=250, base='CAD', target='EUR')\n        169.12" in prompt


def _reply(text: str) -> ModelResponse:
    return ModelResponse(content=text, tool_calls=[])


def test_the_text_convention_writes_examples_as_calls_it_reads_back() -> None:
    convention = TextConvention("python")
    prompt = convention.prepare(BOX, None).system_prompt or ""
    line = "    Example: [convert(amount=250, base='CAD', target='EUR')] -> 169.12"
    assert line in prompt.splitlines()
    assert "    Example: [convert(amount=10, base='USD')]" in prompt.splitlines()
    # The example, sent back as a reply, is a call of the same arguments.
    call = line.removeprefix("    Example: ").removesuffix(" -> 169.12")
    read = convention.interpret(_reply(call))
    assert isinstance(read, Calls)
    [made] = read.calls
    assert made.name == "convert"
    assert json.loads(made.arguments) == dict(convert.examples[0].arguments)


def test_the_react_format_writes_examples_as_actions_it_reads_back() -> None:
    convention = TextConvention("react")
    prompt = convention.prepare(BOX, None).system_prompt or ""
    line = (
        '    Example: Action: get_weather[{"city": "Madrid"}] -> {"city": "Madrid", "sky": "sunny"}'
    )
    assert line in prompt.splitlines()
    action = line.removeprefix("    Example: ").split(" -> ")[0]
    read = convention.interpret(_reply(f"Thought: look it up\n{action}"))
    assert isinstance(read, Calls)
    assert json.loads(read.calls[0].arguments) == {"city": "Madrid"}


# --- the local model's prompt -------------------------------------------------------------------


def test_a_local_model_sees_examples_below_each_description() -> None:
    [spec, _] = tool_specs(list(BOX))
    assert spec["function"]["description"].endswith(
        '\n\nExample: {"amount": 250, "base": "CAD", "target": "EUR"} -> 169.12\n'
        'Example: {"amount": 10, "base": "USD"}'
    )
    block = tools_block(list(BOX))
    assert (
        '"description": "Return the weather in a city.\\n\\nExample: {\\"city\\": \\"Madrid\\"} '
        '-> {\\"city\\": \\"Madrid\\", \\"sky\\": \\"sunny\\"}"' in block
    )
    request = ModelRequest(messages=[Message("user", "Weather in Oslo?")], tools=list(BOX))
    [system, _] = plain_messages(request)
    assert system["role"] == "system" and block in system["content"]


# --- MCP: served in the inputSchema, read back by the client -------------------------------------


async def test_examples_survive_a_trip_through_mcp() -> None:
    server = ToolServer(BOX, name="rates")
    try:
        async with server.serving_http() as url, MCPClient.http(url) as client:
            box = client.toolbox()
    finally:
        server.close()
    assert [e.arguments for e in box.get("convert").examples] == [  # type: ignore[union-attr]
        {"amount": 250, "base": "CAD", "target": "EUR"},
        {"amount": 10, "base": "USD"},
    ]
    assert box.get("get_weather").examples == (ToolExample({"city": "Madrid"}),)  # type: ignore[union-attr]


# --- tool search: found tools are written with their examples -------------------------------


def test_tools_found_by_search_are_written_with_their_examples() -> None:
    found = [get_weather]
    assert ">>> tools.get_weather(city='Madrid')" in render_for(CodeConvention())(found)
    assert "Example: [get_weather(city='Madrid')]" in render_for(TextConvention())(found)
    assert 'Example: Action: get_weather[{"city": "Madrid"}]' in render_for(
        TextConvention("react")
    )(found)
    [definition] = render_for(JsonConvention())(found).splitlines()
    assert json.loads(definition)["examples"] == [{"city": "Madrid"}]
