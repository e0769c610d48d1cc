"""Qwen2.5-Coder-0.5B: its own template with tools, and its one-token call tags.

Skipped unless the model has been pulled (``tooluse models pull
qwen2.5-coder-0.5b``); the same paths are tested without it on a synthetic
template and vocabulary (tests/models/test_local_template.py,
tests/decoding/test_grammars.py).
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from examples.seed_tools import toolbox
from tooluse import Agent, Message, ToolCall
from tooluse.decoding import CALL_CLOSE, CALL_OPEN
from tooluse.models import LocalModel, ModelRequest, resolve_model
from tooluse.models._chat_template import ANSWER_NOW, FACTS_THEN_ANSWER, SEVERAL_CALLS
from tooluse.models._registry import Registry

TOOLS = list(toolbox)
SCHEMAS = {t.name: t.parameters for t in TOOLS}


@pytest.fixture(scope="module")
def qwen() -> LocalModel:
    # scripts/setup.sh pulls it; without it the error says which command does.
    path = Registry().locate("qwen2.5-coder-0.5b")
    return LocalModel(path, max_output_tokens=64)


def ask(model: LocalModel, task: str, choice: str = "auto") -> tuple[str, list[tuple[str, dict]]]:
    response = model.respond_sync(ModelRequest([Message("user", task)], TOOLS, choice))
    assert response.problems == [], response.problems
    for call in response.tool_calls:
        jsonschema.validate(json.loads(call.arguments), SCHEMAS[call.name])
    return response.content or "", [(c.name, json.loads(c.arguments)) for c in response.tool_calls]


def test_by_name_it_gets_its_own_system_prompt_and_by_path_its_templates() -> None:
    named = resolve_model("local:qwen2.5-coder-0.5b")
    assert isinstance(named, LocalModel)
    assert (named.parallel_system, named.default_system) == (SEVERAL_CALLS, None)
    larger = resolve_model("local-unconstrained:qwen2.5-coder-1.5b")
    assert isinstance(larger, LocalModel) and larger.default_system == FACTS_THEN_ANSWER
    by_path = resolve_model(f"local:{Registry().locate('qwen2.5-coder-0.5b')}")
    assert isinstance(by_path, LocalModel)
    assert (by_path.parallel_system, by_path.default_system) == (None, None)


def test_the_several_calls_prompt_goes_only_where_a_reply_may_hold_several() -> None:
    model = LocalModel(
        Registry().locate("qwen2.5-coder-0.5b"), default_system="ONE", parallel_system="MANY"
    )
    task = [Message("user", "Weather in Oslo and Rome?")]
    assert "MANY" in model.prompt(ModelRequest(task, TOOLS, "auto"))
    one = model.prompt(ModelRequest(task, TOOLS, "auto", parallel_tool_calls=False))
    assert "ONE" in one and "MANY" not in one
    assert "ONE" not in LocalModel(Registry().locate("qwen2.5-coder-0.5b")).prompt(
        ModelRequest(task, TOOLS, "auto", parallel_tool_calls=False)
    )


def test_the_note_after_results_follows_the_last_result_and_no_other_message() -> None:
    call = ToolCall("c1", "get_exchange_rate", '{"base": "USD", "target": "EUR"}')
    asked = [Message("user", "Is 100 USD enough for 85 EUR?")]
    answered = [*asked, Message("assistant", None, (call,)), Message("tool", "0.92", "c1")]
    named = LocalModel("qwen2.5-coder-1.5b", after_results=ANSWER_NOW)
    prompt = named.prompt(ModelRequest(answered, TOOLS, "auto"))
    # Once, straight after the result, where the model decides what to do next.
    assert prompt.count(ANSWER_NOW) == 1
    assert prompt.index("0.92") < prompt.index(ANSWER_NOW) < prompt.rindex("<|im_start|>assistant")
    # Not before any result, and not in the run's own messages.
    assert ANSWER_NOW not in named.prompt(ModelRequest(asked, TOOLS, "auto"))
    assert answered[-1].content == "0.92"
    # The same in a convention that sends no tools (a script's output).
    script = [*asked, Message("assistant", "print(1)"), Message("tool", "92.0", "s1")]
    assert named.prompt(ModelRequest(script)).count(ANSWER_NOW) == 1
    # "" turns it off, and no model in the registry has one by default.
    off = LocalModel("qwen2.5-coder-1.5b", after_results="")
    assert off.after_results is None
    assert ANSWER_NOW not in off.prompt(ModelRequest(answered, TOOLS, "auto"))
    assert all(entry.after_results is None for entry in Registry().models.values())


def test_the_registry_says_whose_answers_an_agent_checks() -> None:
    larger = resolve_model("local:qwen2.5-coder-1.5b")
    assert isinstance(larger, LocalModel) and larger.check_answers is True
    assert Agent(larger, TOOLS).config.check_answers is True
    assert Agent(larger, TOOLS, check_answers=False).config.check_answers is False
    # The 0.5B was not measured with it, and a file by path is no registry entry.
    smaller = resolve_model("local:qwen2.5-coder-0.5b")
    assert isinstance(smaller, LocalModel) and smaller.check_answers is False
    by_path = LocalModel(Registry().locate("qwen2.5-coder-1.5b"))
    assert by_path.check_answers is False
    assert Agent(by_path, TOOLS).config.check_answers is False
    assert Agent(by_path, TOOLS, check_answers=True).config.check_answers is True


def test_the_call_tags_are_single_special_tokens_in_the_grammar(qwen: LocalModel) -> None:
    compiler = qwen.compiler()
    open_, close = compiler.special_token(CALL_OPEN), compiler.special_token(CALL_CLOSE)
    assert open_ is not None and close is not None
    grammar = qwen.grammar_for(ModelRequest([Message("user", "x")], TOOLS, "calculator"))
    assert grammar is not None and f"<[{open_}]>" in grammar.lark


def test_a_forced_tool_is_called_through_the_tag_token(qwen: LocalModel) -> None:
    # This failed before any call was made: the grammar spelled the tag,
    # and the model's one token for it was refused.
    _, calls = ask(qwen, "Convert 100 USD to EUR.", choice="get_exchange_rate")
    assert [name for name, _ in calls] == ["get_exchange_rate"]


def test_it_calls_the_tool_when_asked_to_and_talks_when_not(qwen: LocalModel) -> None:
    _, calls = ask(qwen, "What is the weather in Paris, France right now? Use the tool.")
    assert [name for name, _ in calls] == ["get_current_weather"]
    assert "Paris" in calls[0][1]["location"]
    text, calls = ask(qwen, "Hi! How are you today?")
    assert calls == [] and text


def test_a_loop_of_tokens_is_broken_before_the_output_cap() -> None:
    # Greedy, the 0.5B writes this calculator expression's zeros (then ",000"s)
    # until the output cap, and the call is cut off; refusing what would go on
    # with the loop after 16 tokens of it lets the model close the call.
    path = Registry().locate("qwen2.5-coder-0.5b")
    hotel = "Convert 100 USD to EUR and tell me if it's enough for a €85 hotel room"
    request = ModelRequest([Message("user", hotel)], TOOLS, "auto")
    plain = {"max_output_tokens": 96, "repeat_penalty": 1.0}  # the guard alone
    unguarded = LocalModel(path, **plain, max_run=None).respond_sync(request)
    assert unguarded.finish_reason == "length" and "0" * 30 in (unguarded.content or "")
    guarded = LocalModel(path, **plain).respond_sync(request)
    assert guarded.problems == [] and guarded.finish_reason == "stop", guarded.content
    assert guarded.tool_calls, guarded.content
    for call in guarded.tool_calls:
        jsonschema.validate(json.loads(call.arguments), SCHEMAS[call.name])
        assert "0" * 17 not in call.arguments
