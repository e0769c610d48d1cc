"""Tool search through the real loop: json, text and code conventions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooluse import Agent, Toolbox, UsageError, tool
from tooluse.context import ContextPolicy
from tooluse.models import ScriptedModel

from ._tools import CALLS, big_box, get_exchange_rate, lookup_capital


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


def test_json_found_tools_are_appended_to_the_tool_list_and_the_history() -> None:
    model = ScriptedModel(
        [
            call("c1", "tool_search", {"query": "currency exchange rate"}),
            call("c2", "get_exchange_rate", {"base": "USD", "target": "EUR"}),
            {"content": "0.92"},
        ]
    )
    result = Agent(model, big_box(), tool_search="always", always_loaded=["lookup_capital"]).run(
        "Convert 100 USD to EUR"
    )
    assert result.status == "completed"
    assert [c.name for c in result.calls] == ["tool_search", "get_exchange_rate"]
    offered = [[t.name for t in r.tools] for r in model.requests]
    assert offered[0] == ["lookup_capital", "tool_search"]
    # The tools the run began with stay first: a provider's cached prefix survives.
    assert offered[1][:2] == offered[0]
    assert "get_exchange_rate" in offered[1]
    found = result.messages[3]
    assert found.role == "tool"
    assert '{"name":"get_exchange_rate","description":"Return the exchange rate' in found.content
    system = result.messages[0].content
    assert system.startswith("42 more tools exist than are listed. Call tool_search")


def test_a_call_to_an_unloaded_tool_is_refused_with_its_definition_then_runs() -> None:
    CALLS.clear()
    model = ScriptedModel(
        [
            call("c1", "get_exchange_rate", {"base": "USD", "target": "EUR"}),
            call("c2", "get_exchange_rate", {"base": "USD", "target": "EUR"}),
            {"content": "0.92"},
        ]
    )
    result = Agent(model, big_box(), tool_search="always").run("Convert 100 USD to EUR")
    (refused,) = result.rejected
    assert refused.kind == "unloaded"
    assert refused.error.startswith("get_exchange_rate exists but was not loaded, so it was not")
    assert '"ISO 4217 code of the currency to convert from' in refused.error
    assert [c.name for c in result.calls] == ["get_exchange_rate"]
    assert CALLS == ["get_exchange_rate"]  # executed once: after the refusal, not before


def test_unknown_tools_are_still_unknown_with_search_on() -> None:
    model = ScriptedModel([call("c1", "get_exchange_rat", {}), {"content": "no"}])
    result = Agent(model, big_box(), tool_search="always").run("x")
    (refused,) = result.rejected
    assert "there is no tool named 'get_exchange_rat'; did you mean 'get_exchange_rate'" in (
        refused.error
    )


def test_text_convention_searches_through_a_tool_search_call() -> None:
    model = ScriptedModel(
        [
            {"content": '[tool_search(query="capital city of a country")]'},
            {"content": '[lookup_capital(country="Japan")]'},
            {"content": "Tokyo"},
        ]
    )
    result = Agent(model, big_box(), convention="text", tool_search="always").run("Capital?")
    assert [c.name for c in result.calls] == ["tool_search", "lookup_capital"]
    assert result.calls[1].result == "Tokyo"
    assert "lookup_capital(country: str)" in result.messages[3].content
    system = result.messages[0].content
    assert "tool_search(query: str, top_k: int = 5)" in system
    assert "get_exchange_rate" not in system


def test_code_convention_searches_from_the_script_and_calls_any_tool() -> None:
    script = (
        "```python\nimport tools\n"
        'print(tools.search("capital city"))\n'
        'print(tools.get_exchange_rate(base="USD", target="EUR"))\n```'
    )
    model = ScriptedModel([{"content": script}, {"content": "done"}])
    with Agent(model, big_box(), convention="code", tool_search="always") as agent:
        result = agent.run("Capital, and a rate")
    assert result.status == "completed"
    assert [c.name for c in result.calls] == ["search", "get_exchange_rate"]
    out = result.scripts[0].stdout
    assert "def lookup_capital(country: str) -> str:" in out
    assert out.rstrip().endswith("0.92")
    prompt = result.messages[0].content
    assert prompt.startswith("The module `tools` has 43 more functions than the stubs below list.")
    assert "def search(query: str, top_k: int = 5) -> str:" in prompt
    assert "def get_exchange_rate" not in prompt


def test_auto_turns_search_on_past_30_tools_or_a_tenth_of_the_budget() -> None:
    def first_tools(agent_tools: Toolbox, **kwargs: Any) -> list[str]:
        model = ScriptedModel([{"content": "ok"}])
        Agent(model, agent_tools, tool_search="auto", **kwargs).run("hi")
        return [t.name for t in model.requests[0].tools]

    assert "tool_search" in first_tools(big_box(28))  # 31 tools
    assert "tool_search" not in first_tools(big_box(27))  # 30 tools
    small = Toolbox([get_exchange_rate, lookup_capital])
    assert first_tools(small) == ["get_exchange_rate", "lookup_capital"]
    # Two schemas of ~110 tokens are more than 10% of a 1,000-token budget.
    budget = ContextPolicy(budget=1_000, agent_tools=False)
    assert first_tools(small, context=budget) == ["tool_search"]


def test_the_index_follows_a_description_changed_between_runs() -> None:
    @tool
    def mystery(x: str) -> str:
        """Does something.

        Args:
            x: input
        """
        return x

    box = big_box()
    box.add(mystery)
    agent = Agent(
        ScriptedModel([call("c1", "tool_search", {"query": "zeppelin"}), {"content": "-"}] * 2),
        box,
        tool_search="always",
    )
    first = agent.run("zeppelin?")
    assert first.calls[0].result.startswith("No tool matches 'zeppelin'")
    mystery.description = "Book a zeppelin ride."
    second = agent.run("zeppelin?")
    assert "mystery" in second.calls[0].result


def test_bad_settings_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="tool_search must be 'auto', 'always' or 'never'"):
        Agent(ScriptedModel([]), big_box(), tool_search="sometimes")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="always_loaded names tools the toolbox lacks: nope"):
        Agent(ScriptedModel([]), big_box(), tool_search="always", always_loaded=["nope"])


def test_never_shows_every_tool() -> None:
    model = ScriptedModel([{"content": "ok"}])
    Agent(model, big_box(), tool_search="never").run("hi")
    assert len(model.requests[0].tools) == 43


def test_text_calls_to_found_tools_are_described_to_the_model_backend() -> None:
    # A backend that constrains text calls (a grammar) must learn the found tools.
    model = ScriptedModel(
        [
            {"content": '[tool_search(query="capital city of a country")]'},
            {"content": '[lookup_capital(country="Japan")]'},
            {"content": "Tokyo"},
        ]
    )
    Agent(model, big_box(), convention="text", tool_search="always").run("Capital?")
    described = [[t.name for t in r.described_tools] for r in model.requests]
    assert described[0] == ["tool_search"]
    assert described[1][0] == "tool_search"
    assert "lookup_capital" in described[1]
    assert all(r.tools == () or list(r.tools) == [] for r in model.requests)


def test_a_continued_conversation_keeps_the_tools_it_called_loaded() -> None:
    agent = Agent(
        ScriptedModel(
            [
                call("c1", "tool_search", {"query": "currency exchange rate"}),
                call("c2", "get_exchange_rate", {"base": "USD", "target": "EUR"}),
                {"content": "0.92"},
                call("c3", "get_exchange_rate", {"base": "USD", "target": "GBP"}),
                {"content": "0.79"},
            ]
        ),
        big_box(),
        tool_search="always",
    )
    first = agent.run("USD to EUR?")
    second = agent.run("And to GBP?", history=first.messages)
    assert second.rejected == []
    assert [c.name for c in second.calls] == ["get_exchange_rate"]


def test_a_deferred_toolbox_turns_search_on_unless_the_agent_says_otherwise() -> None:
    def first_tools(**kwargs: Any) -> list[str]:
        model = ScriptedModel([{"content": "ok"}])
        box = Toolbox([get_exchange_rate, lookup_capital], defer=True)
        Agent(model, box, **kwargs).run("hi")
        return [t.name for t in model.requests[0].tools]

    assert first_tools() == ["tool_search"]
    assert first_tools(always_loaded=["lookup_capital"]) == ["lookup_capital", "tool_search"]
    assert first_tools(tool_search="never") == ["get_exchange_rate", "lookup_capital"]
