"""The text convention: calls written as text, read back strictly, errors with positions."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from examples.seed_tools import toolbox as seed_tools
from tooluse import Agent, Tool, Toolbox, ToolCall, UsageError, tool
from tooluse._messages import openai_messages
from tooluse._tokens import count_tokens
from tooluse.conventions import (
    Answer,
    Calls,
    Retry,
    TextConvention,
    get_convention,
)
from tooluse.conventions._text import describe_tools
from tooluse.models import ModelResponse, ScriptedModel

# --- the prompt ------------------------------------------------------------------------


def test_prompt_snapshot_and_size(snapshot: SnapshotAssertion) -> None:
    prepared = TextConvention().prepare(seed_tools, "Be brief.")
    assert prepared.tools == () and prepared.tool_choice == "none"
    prompt = prepared.system_prompt or ""
    assert prompt.startswith("Be brief.\n\n")
    assert prompt == snapshot
    # leaner than the stub module of the code convention and the JSON tool schemas
    assert count_tokens(prompt) < 360


def test_react_prompt_snapshot(snapshot: SnapshotAssertion) -> None:
    assert TextConvention("react").prepare(seed_tools, None).system_prompt == snapshot


def _bfcl_style_tools() -> Toolbox:
    def run(**kwargs: Any) -> Any:
        return kwargs

    return Toolbox(
        [
            Tool.from_schema(
                "math.factorial",
                "Factorial of a number.",
                {"type": "object", "properties": {"number": {"type": "integer"}}},
                run,
            ),
            Tool.from_schema(
                "book-flight",
                "Book a flight.",
                {
                    "type": "object",
                    "properties": {
                        "from": {"type": "string", "description": "IATA code"},
                        "seats": {"type": "integer", "minimum": 1, "default": 1},
                        "to": {"type": "string"},
                        "passenger": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "description": "Full name"},
                                "age": {"type": "integer"},
                            },
                            "required": ["name"],
                        },
                        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
                        "meta": {"type": "object", "additionalProperties": {"type": "number"}},
                        "when": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    },
                    "required": ["from", "to"],
                },
                run,
            ),
        ]
    )


def test_every_listed_signature_is_valid_python() -> None:
    listing = describe_tools(_bfcl_style_tools()) + describe_tools(seed_tools)
    signatures = [line for line in listing.splitlines() if line and not line.startswith(" ")]
    assert len(signatures) == 7
    for signature in signatures:
        name, params = signature.split("(", 1)
        ast.parse(f"def _({params}: ...")
        # the name as written in a call must parse as one too
        ast.parse(f"{name}()", mode="eval")


def test_listing_of_awkward_names_and_nested_objects() -> None:
    listing = describe_tools(_bfcl_style_tools())
    assert "math.factorial(number: int = None)" in listing
    assert (
        "book_flight(from_: str, seats: int = 1, *, to: str, "
        "passenger: {'name': str, 'age': NotRequired[int]} = None, "
        "tags: list[Literal['a', 'b']] = None, meta: dict[str, float] = None, "
        "when: str | None = None)"
    ) in listing
    assert "    from_: IATA code\n" in listing
    assert "    seats: >= 1\n" in listing
    assert "      'name': Full name\n" in listing


def test_listing_snapshot_of_awkward_schemas(snapshot: SnapshotAssertion) -> None:
    def run(**kwargs: Any) -> Any:
        return kwargs

    loose = Tool.from_schema(
        "store",
        "Store anything.\nSecond line of the description.",
        {
            "type": "object",
            "properties": {
                "items": {"type": "array", "description": "Anything  at all", "maxItems": 3},
                "blob": {"type": "object"},
                "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]},
                "kind": {"const": "x"},
                "either": {"type": ["string", "integer"], "pattern": "^[a-z]+$"},
                "tree": {"$ref": "#/$defs/Node"},
            },
            "required": ["items"],
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                    },
                }
            },
        },
        run,
    )
    assert describe_tools([*_bfcl_style_tools(), loose]) == snapshot


# --- interpreting replies --------------------------------------------------------------


def reply(content: str | None, tool_calls: list[ToolCall] | None = None) -> ModelResponse:
    return ModelResponse(content=content, tool_calls=tool_calls or [])


def prepared(format: str = "python", tools: Toolbox = seed_tools) -> TextConvention:
    convention = TextConvention(format)  # type: ignore[arg-type]
    convention.prepare(tools, None)
    return convention


def arguments(action: object) -> list[tuple[str, Any]]:
    assert isinstance(action, Calls), action
    return [(c.name, json.loads(c.arguments)) for c in action.calls]


def test_calls_after_prose_and_ids_unique_across_replies() -> None:
    convention = prepared()
    first = convention.interpret(
        reply(
            "I need the rate first.\n"
            '[get_exchange_rate(base="USD", target="EUR"), lookup_capital("France")]'
        )
    )
    second = convention.interpret(reply('[calculator(expression="2 + 2")]'))
    assert arguments(first) == [
        ("get_exchange_rate", {"base": "USD", "target": "EUR"}),
        ("lookup_capital", {"country": "France"}),
    ]
    assert isinstance(first, Calls) and isinstance(second, Calls)
    ids = [c.id for c in [*first.calls, *second.calls]]
    assert len(set(ids)) == 3


def test_a_lone_call_of_a_known_tool_and_lists_on_several_lines() -> None:
    convention = prepared()
    assert arguments(convention.interpret(reply("lookup_capital(country='Japan')"))) == [
        ("lookup_capital", {"country": "Japan"})
    ]
    text = (
        "Two calls:\n```python\n[\n  lookup_capital(country='Japan'),\n]\n```\n[calculator('1+1')]"
    )
    assert arguments(convention.interpret(reply(text))) == [
        ("lookup_capital", {"country": "Japan"}),
        ("calculator", {"expression": "1+1"}),
    ]


def test_unknown_tools_are_passed_on_for_the_dispatcher_to_refuse() -> None:
    action = prepared().interpret(reply("[get_weather(location='Paris')]"))
    assert arguments(action) == [("get_weather", {"location": "Paris"})]


def test_call_names_map_back_to_tool_names_and_keys() -> None:
    action = prepared(tools=_bfcl_style_tools()).interpret(
        reply("[book_flight('CDG', to='NRT'), math.factorial(5)]")
    )
    assert arguments(action) == [
        ("book-flight", {"from": "CDG", "to": "NRT"}),
        ("math.factorial", {"number": 5}),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "The capital of Japan is Tokyo.",
        "Use arr[len(x)] to index.",
        "Result: calculator(expression) is not needed.",
        "[]",
        "None of the tools can do that.\n[]",
        "[see the docs](https://example.com)",
    ],
)
def test_text_without_calls_is_the_answer(text: str) -> None:
    assert prepared().interpret(reply(text)) == Answer(text)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("[échō(s='x')]", "échō"),
        ("Let me try.\n[échō(s='x'), lookup_capital(country='Peru')]", "échō"),
        ("échō(s='x')", "échō"),
        ("Let me try.\nLookup_Capitál(country='Peru')", "Lookup_Capitál"),
        ("get_weather(city='Paris')", "get_weather"),
        ("```python\nget_weather(city='Paris')\n```", "get_weather"),
        ("`get_weather(city='Paris')`", "get_weather"),
    ],
)
def test_text_that_is_clearly_a_call_to_an_unknown_tool_is_a_call(text: str, name: str) -> None:
    action = prepared().interpret(reply(text))
    assert isinstance(action, Calls), action
    assert action.calls[0].name == name


def test_a_react_action_of_an_unknown_tool_is_a_call() -> None:
    action = prepared("react").interpret(reply('Thought: go.\nAction: échō[{"s": "x"}]'))
    assert arguments(action) == [("échō", {"s": "x"})]


@pytest.mark.parametrize(
    "text",
    [
        "sqrt(2)",
        "f(x) = 2x + 1",
        "Résumé(s) attached.",
        "Answer: max(a=1, b=2) is 2.",
        "Café(s='x') is a call I would not make.",
    ],
)
def test_prose_that_only_looks_like_a_call_stays_the_answer(text: str) -> None:
    assert prepared().interpret(reply(text)) == Answer(text)


def test_a_misspelt_tool_goes_back_with_did_you_mean() -> None:
    @tool
    def echo(s: str) -> str:
        """Return s."""
        return s

    model = ScriptedModel(["[échō(s='x')]", "[echo(s='x')]", "x"])
    result = Agent(model, [echo], convention="text").run("say x")

    assert (result.status, result.answer) == ("completed", "x")
    [refused] = result.rejected
    assert refused.name == "échō" and "did you mean 'echo'?" in refused.error
    assert [(c.name, c.result) for c in result.calls] == [("echo", "x")]
    assert "did you mean 'echo'?" in str(model.requests[1].messages[-1].content)


def test_empty_reply_is_sent_back() -> None:
    action = prepared().interpret(reply("  \n"))
    assert isinstance(action, Retry) and "empty" in action.feedback


def test_a_broken_call_is_sent_back_with_its_position_and_the_syntax() -> None:
    action = prepared().interpret(reply("Let me see.\n[lookup_capital(country=France)]"))
    assert isinstance(action, Retry)
    assert action.feedback == (
        "I could not read your tool call at line 2, column 25: `France` is not a literal "
        'value: put text in quotes, "France".\n'
        "    [lookup_capital(country=France)]\n"
        f"{' ' * 28}^\n"
        "Nothing was run. Write calls as [tool_name(param=value, ...), other_tool(param=value)] "
        'with Python literal values ("text", 42, 3.5, True, None, [lists], {"key": dicts}).'
    )


def test_an_unclosed_list_is_sent_back() -> None:
    action = prepared().interpret(reply("[lookup_capital(country='France'),\nthen I answer"))
    assert isinstance(action, Retry) and "line 2, column" in action.feedback


def test_native_calls_are_used_if_a_server_sends_them() -> None:
    call = ToolCall("c1", "lookup_capital", '{"country": "Kenya"}')
    action = prepared().interpret(reply(None, [call]))
    assert action == Calls([call], notes=[])


# --- ReAct -----------------------------------------------------------------------------


def test_react_action_with_json() -> None:
    action = prepared("react").interpret(
        reply('Thought: I need the capital.\nAction: lookup_capital[{"country": "Kenya"}]')
    )
    assert arguments(action) == [("lookup_capital", {"country": "Kenya"})]
    assert isinstance(action, Calls) and not action.notes


@pytest.mark.parametrize(
    "text",
    [
        "Action: get_exchange_rate(base='USD', target='EUR')",
        "Action: get_exchange_rate('USD', 'EUR')",
        'Action: get_exchange_rate\nAction Input: {"base": "USD", "target": "EUR"}',
        '**Action:** get_exchange_rate[{"base": "USD",\n  "target": "EUR"}]',
        "Action: [get_exchange_rate(base='USD', target='EUR')]",
    ],
)
def test_react_action_forms(text: str) -> None:
    action = prepared("react").interpret(reply(f"Thought: rate.\n{text}"))
    assert arguments(action) == [("get_exchange_rate", {"base": "USD", "target": "EUR"})]


def test_react_several_actions_and_invented_observations() -> None:
    text = (
        "Thought: both at once.\n"
        'Action: lookup_capital[{"country": "Kenya"}]\n'
        'Action: lookup_capital[{"country": "Japan"}]\n'
        "Observation: Nairobi\n"
        'Action: calculator[{"expression": "1"}]\n'
        "Final Answer: Nairobi and Tokyo"
    )
    action = prepared("react").interpret(reply(text))
    assert arguments(action) == [
        ("lookup_capital", {"country": "Kenya"}),
        ("lookup_capital", {"country": "Japan"}),
    ]
    assert isinstance(action, Calls)
    assert action.notes == [
        "Everything from your 'Observation:' line on was ignored: observations come from the tools."
    ]


def test_react_action_without_arguments() -> None:
    action = prepared("react").interpret(reply("Action: list_items[]\nAction: lookup_capital"))
    assert arguments(action) == [("list_items", {}), ("lookup_capital", {})]


def test_react_final_answer() -> None:
    text = "Thought: I know it.\nFinal Answer: Nairobi,\nin Kenya.\n"
    assert prepared("react").interpret(reply(text)) == Answer("Nairobi,\nin Kenya.")


def test_react_final_answer_written_with_an_action_waits() -> None:
    text = 'Action: lookup_capital[{"country": "Kenya"}]\nFinal Answer: Nairobi'
    action = prepared("react").interpret(reply(text))
    assert isinstance(action, Calls) and "Final Answer" in action.notes[0]


def test_react_plain_text_is_an_answer_and_a_lone_thought_is_not() -> None:
    assert prepared("react").interpret(reply("Nairobi.")) == Answer("Nairobi.")
    action = prepared("react").interpret(reply("Thought: I should look it up."))
    assert isinstance(action, Retry) and "Final Answer" in action.feedback


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ('Action: lookup_capital[{"country": Kenya}]', "line 2, column 36", "not valid JSON"),
        ('Action: lookup_capital[{"country": "Kenya"}', "line 2, column 23", "not closed"),
        ('Action: lookup_capital["Kenya"]', "line 2, column 24", "one JSON object"),
        ("Action: lookup capital", "line 2, column 16", "unexpected text after"),
        ("Action: (x)", "line 2, column 9", "expected a tool name"),
    ],
)
def test_react_errors_say_where(text: str, where: str, what: str) -> None:
    action = prepared("react").interpret(reply(f"Thought: go.\n{text}"))
    assert isinstance(action, Retry)
    assert f"at {where}: " in action.feedback and what in action.feedback
    assert action.feedback.endswith(
        'Action: tool_name[{"param": value}] (one JSON object of arguments).'
    )


def test_registry_and_format_check() -> None:
    assert isinstance(get_convention("text"), TextConvention)
    with pytest.raises(UsageError, match="format must be"):
        TextConvention("xml")  # type: ignore[arg-type]


# --- end to end ------------------------------------------------------------------------


def test_agent_runs_text_calls_and_shows_results_as_text() -> None:
    model = ScriptedModel(
        [
            "I'll get the rate.\n[get_exchange_rate(base='USD', traget='EUR')]",
            "[get_exchange_rate(base='USD', target='EUR'),\n"
            " calculator(expression='100 * 0.92 - 85')]",
            "[calculator(expression=100 * 0.92)]",
            "Yes: 92 EUR, 7 EUR to spare.",
        ]
    )
    result = Agent(model, seed_tools, convention="text").run("100 USD in EUR; enough for 85?")

    assert result.status == "completed" and result.answer == "Yes: 92 EUR, 7 EUR to spare."
    assert [(c.name, c.arguments, c.result) for c in result.calls] == [
        ("get_exchange_rate", {"base": "USD", "target": "EUR"}, 0.92),
        ("calculator", {"expression": "100 * 0.92 - 85"}, 7.0),
    ]
    [refused] = result.rejected
    assert "did you mean 'target'" in refused.error
    # what the model was shown before its last reply, on the wire
    sent = openai_messages(model.requests[3].messages)
    assert "tools" not in [m["role"] for m in sent]
    assert all("tool_calls" not in m for m in sent)
    assert (
        sent[0]["role"] == "system"
        and "get_exchange_rate(base: str, target: str)" in (sent[0]["content"])
    )
    assert [m["role"] for m in sent] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
        "user",
    ]
    assert "did you mean 'target'" in sent[3]["content"]
    assert sent[5]["content"] == "Output of get_exchange_rate:\n0.92"
    assert sent[6]["content"] == "Output of calculator:\n7.0"
    assert re.search(r"line 1, column 24: `100 \* 0.92` is an expression", sent[8]["content"])
    assert model.requests[0].tools == ()


def test_agent_runs_react() -> None:
    model = ScriptedModel(
        [
            'Thought: capital first.\nAction: lookup_capital[{"country": "Kenya"}]\n'
            "Observation: Paris",
            "Thought: now the weather.\nAction: get_current_weather(location='Nairobi, Kenya')",
            "Thought: done.\nFinal Answer: Nairobi, 24 C and sunny.",
        ]
    )
    agent = Agent(model, seed_tools, convention=TextConvention("react"))
    result = agent.run("Weather in the capital of Kenya?")

    assert result.status == "completed" and result.answer == "Nairobi, 24 C and sunny."
    assert [c.name for c in result.calls] == ["lookup_capital", "get_current_weather"]
    assert result.calls[0].result == "Nairobi"
    assert result.calls[1].result["conditions"] == "sunny"
    sent = openai_messages(model.requests[1].messages)
    assert sent[-2] == {"role": "user", "content": "Output of lookup_capital:\nNairobi"}
    assert "observations come from the tools" in sent[-1]["content"]
