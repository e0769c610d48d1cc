"""AgentDojo's tools as tooluse tools, and the annotations read off the suites."""

from __future__ import annotations

import ast

import pytest

from tooluse.eval.agentdojo import build_toolbox, load_suite, tool_facts

SUITES = ("banking", "slack", "travel", "workspace")


@pytest.mark.parametrize("name", SUITES)
def test_every_tool_is_annotated_and_renders(name: str) -> None:
    from agentdojo.functions_runtime import FunctionsRuntime

    suite = load_suite(name)
    facts = tool_facts(suite)
    assert set(facts) == {f.name for f in suite.tools}
    box = build_toolbox(suite, FunctionsRuntime(suite.tools), None)
    assert box.names == [f.name for f in suite.tools]
    ast.parse(box.stub_module())
    for tool in box:
        assert tool.side_effects == facts[tool.name].side_effects
        assert "title" not in tool.parameters


def test_banking_facts_follow_from_the_replay() -> None:
    facts = tool_facts(load_suite("banking"))
    # Changes the account: side effects. Shows text others wrote: untrusted.
    assert facts["send_money"].side_effects and facts["send_money"].trust == "trusted"
    assert not facts["read_file"].side_effects and facts["read_file"].trust == "untrusted"
    recent = facts["get_most_recent_transactions"]
    assert not recent.side_effects and recent.trust == "untrusted"
    # No ground truth calls it: the worst case.
    assert not facts["get_iban"].observed
    assert facts["get_iban"].side_effects and facts["get_iban"].trust == "untrusted"


def test_side_effects_are_pooled_across_suites_by_function() -> None:
    # travel's ground truths never search the calendar; workspace's do, and never
    # change anything with it. Trust stays the suite's own: unobserved in travel.
    travel = tool_facts(load_suite("travel"))["search_calendar_events"]
    assert not travel.observed and not travel.side_effects and travel.trust == "untrusted"


def test_a_tool_runs_on_agentdojos_runtime_and_reports_its_errors() -> None:
    from agentdojo.functions_runtime import FunctionsRuntime

    from tooluse import ModelRetry

    suite = load_suite("banking")
    env = suite.raw.load_and_inject_default_environment({})
    box = build_toolbox(suite, FunctionsRuntime(suite.tools), env)
    send = box.get("send_money")
    assert send is not None
    before = len(env.bank_account.transactions)
    send(recipient="DE123", amount=10.0, subject="rent", date="2022-01-01")
    assert len(env.bank_account.transactions) == before + 1
    update = box.get("update_scheduled_transaction")
    assert update is not None
    # AgentDojo's own error text, as its runtime reports it, is what the model sees.
    with pytest.raises(ModelRetry, match=r"^ValueError: Transaction with ID 999 not found\.$"):
        update(id=999, amount=1.0)


@pytest.mark.parametrize("name", SUITES)
def test_each_suites_tools_join_into_one_grammar_llguidance_takes(name: str) -> None:
    # workspace's share_file refers to its own $defs (an enum): joined with the
    # other tools under one root, the reference must still point somewhere.
    from agentdojo.functions_runtime import FunctionsRuntime

    from tooluse import Message
    from tooluse.models import LocalModel, ModelRequest

    suite = load_suite(name)
    box = build_toolbox(suite, FunctionsRuntime(suite.tools), None)
    model = LocalModel("smollm2-135m")
    grammar = model.grammar_for(ModelRequest([Message("user", "x")], list(box), "auto"))
    assert grammar is not None
    model.compiler().matcher(grammar)  # GrammarError if llguidance refuses it
