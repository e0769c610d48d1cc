"""The embedded model, run in process by llama.cpp, with and without the grammar."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from examples.seed_tools import toolbox
from tooluse import Agent, Message, ModelResponseError, ToolCall, UsageError, tool
from tooluse.conventions import Answer, Calls, TextConvention, extract_script
from tooluse.decoding import to_gbnf
from tooluse.eval._everyday import toolbox as everyday
from tooluse.models import LocalModel, ModelRequest, ModelResponse, resolve_model
from tooluse.models._local_numbers import NUMBER, unsupported
from tooluse.models._local_steps import first_sentence, whole_sentences
from tooluse.models._registry import Registry
from tooluse.models._spec import default_local

ROOT = Path(__file__).resolve().parents[2]
TOOLS = list(toolbox)
SCHEMAS = {t.name: t.parameters for t in TOOLS}
SYSTEM = Message("system", "You are a helpful assistant.")
TASKS = [
    "What is the weather in Paris?",
    "Convert 100 USD to EUR.",
    "What is the capital of Japan?",
]


@pytest.fixture(scope="module")
def model() -> LocalModel:
    return LocalModel("smollm2-135m", max_output_tokens=48)


@pytest.fixture(scope="module")
def free_model() -> LocalModel:
    return LocalModel("smollm2-135m", constrained=False, max_output_tokens=48)


def ask(model: LocalModel, task: str, choice: str = "auto", tools: bool = True) -> ModelResponse:
    request = ModelRequest([SYSTEM, Message("user", task)], TOOLS if tools else (), choice)
    return model.respond_sync(request)


def assert_valid(call: ToolCall) -> None:
    assert call.name in SCHEMAS, call
    jsonschema.validate(json.loads(call.arguments), SCHEMAS[call.name])


def test_a_named_tool_choice_gives_one_valid_call_to_that_tool(model: LocalModel) -> None:
    for task in TASKS:
        response = ask(model, task, choice="get_exchange_rate")
        assert [c.name for c in response.tool_calls] == ["get_exchange_rate"], task
        assert_valid(response.tool_calls[0])
        assert response.content is None and response.problems == []
        # Only the arguments were sampled: the call's frame was forced.
        assert model.last_stats.forced_tokens > model.last_stats.sampled_tokens > 0


def test_required_calls_are_all_valid(model: LocalModel) -> None:
    for task in TASKS:
        response = ask(model, task, choice="required")
        assert response.tool_calls, task
        for call in response.tool_calls:
            assert_valid(call)


def test_the_model_chooses_between_calling_and_answering_and_every_call_is_valid(
    model: LocalModel,
) -> None:
    kinds = set()
    for task in TASKS:
        response = ask(model, task)
        assert response.problems == []
        assert response.tool_calls or response.content
        kinds.add("call" if response.tool_calls else "answer")
        for call in response.tool_calls:
            assert_valid(call)
    assert kinds, "no reply at all"


def test_one_call_per_reply_when_parallel_calls_are_off(model: LocalModel) -> None:
    for task in TASKS:
        request = ModelRequest(
            [SYSTEM, Message("user", task)], TOOLS, "required", parallel_tool_calls=False
        )
        response = model.respond_sync(request)
        assert len(response.tool_calls) == 1, task
        assert_valid(response.tool_calls[0])


def test_without_the_grammar_the_model_decodes_freely(free_model: LocalModel) -> None:
    request = ModelRequest([SYSTEM, Message("user", TASKS[0])], TOOLS, "required")
    assert free_model.grammar_for(request) is None
    response = free_model.respond_sync(request)
    assert response.usage is not None and response.usage.output_tokens > 0
    assert free_model.last_stats.forced_tokens == 0


def test_code_replies_hold_at_most_one_closed_python_block(model: LocalModel) -> None:
    for task in ["Write a script that prints 2 + 2.", "Print the squares of 1 to 5 with Python."]:
        request = ModelRequest([Message("user", task)], (), "none", reply_format="code")
        response = model.respond_sync(request)
        text = response.content or ""
        fences = text.count("```")
        if response.finish_reason == "length":
            assert fences <= 1, text  # cut off by the output cap, never a second block
            continue
        assert fences in (0, 2), text
        if fences:
            assert text.endswith("\n```") and "```python\n" in text
            # The block is exactly what the convention reads, with no repair needed.
            block = text[text.index("```python\n") + 10 : -4]
            found = extract_script(text, set())
            assert not isinstance(found, SyntaxError) and found is not None
            assert found.code.strip() == block.strip()


def test_text_convention_replies_are_python_calls_of_the_tools_or_an_answer(
    model: LocalModel,
) -> None:
    convention = TextConvention()
    prepared = convention.prepare(toolbox, None)
    assert prepared.tools == () and prepared.reply_format == "python_calls"
    kinds = set()
    for task in TASKS:
        messages = [Message("system", prepared.system_prompt or ""), Message("user", task)]
        request = ModelRequest(
            messages,
            (),
            "none",
            reply_format="python_calls",
            described_tools=prepared.described_tools,
        )
        assert model.grammar_for(request) is not None
        response = model.respond_sync(request)
        assert response.tool_calls == [] and response.content, task
        action = convention.interpret(response)
        # Never a reply the convention cannot read: calls of the tools, or an answer.
        assert isinstance(action, Calls | Answer), (task, response.content)
        kinds.add(type(action).__name__)
        if isinstance(action, Calls):
            assert action.calls, task
            for call in action.calls:
                assert_valid(call)
    assert kinds


def test_no_tools_means_no_grammar_and_plain_text(model: LocalModel) -> None:
    response = ask(model, "Say hello.", choice="none")
    assert response.tool_calls == [] and response.content


def test_the_prompt_prefix_is_reused_across_turns(model: LocalModel) -> None:
    ask(model, TASKS[0])
    first = model.last_stats
    ask(model, TASKS[1])
    second = model.last_stats
    # The system prompt with the tools is the same; only the task differs.
    assert second.reused_tokens > 0.8 * first.prompt_tokens - 30


def test_the_output_cap_ends_the_reply_with_finish_reason_length() -> None:
    short = LocalModel("smollm2-135m", max_output_tokens=3, constrained=False)
    response = ask(short, "Tell me a long story about the sea.", tools=False)
    assert response.finish_reason == "length"
    assert response.usage is not None and response.usage.output_tokens == 3


def test_a_call_cut_off_by_the_output_cap_is_reported_not_lost() -> None:
    short = LocalModel("smollm2-135m", max_output_tokens=6)
    response = ask(short, TASKS[0], choice="required")
    assert response.finish_reason == "length" and response.tool_calls == []
    assert response.problems == ["the reply was cut off after 6 tokens, in the middle of a call"]


def test_a_prompt_longer_than_the_window_is_a_clear_error(model: LocalModel) -> None:
    with pytest.raises(ModelResponseError, match="context window is 8192"):
        ask(model, "word " * 9000, tools=False)


def test_a_forced_tool_that_is_not_offered_is_a_usage_error(model: LocalModel) -> None:
    with pytest.raises(UsageError, match="not one of the request's tools"):
        ask(model, "x", choice="no_such_tool")


def test_model_specs() -> None:
    assert isinstance(resolve_model("local"), LocalModel)
    assert resolve_model("local").constrained is True
    assert resolve_model("local-unconstrained").constrained is False
    with pytest.raises(UsageError, match="no such model file"):
        resolve_model("local:/nonexistent/model.gguf")


def test_an_agent_runs_on_the_embedded_model_in_every_convention() -> None:
    for convention in ("json", "text", "code"):
        agent = Agent(
            LocalModel("smollm2-135m", max_output_tokens=64),
            toolbox,
            convention=convention,
            max_rounds=2,
        )
        with agent:
            result = agent.run("What is the weather in Paris?")
        # Decoding is greedy, so each convention's run is the same every time, and it
        # ends with the model's answer (SmolLM2 answers this one without a tool).
        assert result.status == "completed", (convention, result.error)
        assert result.answer and result.answer == result.messages[-1].content, convention
        assert result.usage.input_tokens > 0 and result.usage.source == "provider"
        if convention == "json":
            # Constrained decoding: nothing the model emits fails validation.
            assert result.rejected == [], result.rejected
            for record in result.calls:
                jsonschema.validate(record.arguments, SCHEMAS[record.name])


def test_plain_local_is_the_best_installed_model(tmp_path: Path) -> None:
    # Setup pulls qwen2.5-coder-1.5b, so here `local` is it.
    assert default_local(Registry()) == "qwen2.5-coder-1.5b"
    assert resolve_model("local").name == "local:qwen2.5-coder-1.5b"
    # Without it, the embedded SmolLM2 runs, and the user is told how to get the better one.
    with pytest.warns(UserWarning, match="tooluse models pull qwen2.5-coder-1.5b"):
        assert default_local(Registry(cache=tmp_path)) == "smollm2-135m"


def test_tooluse_run_defaults_to_the_best_installed_model() -> None:
    command = [
        str(Path(sys.executable).parent / "tooluse"),
        "run",
        "What is the weather in Paris?",
        "--tools",
        "examples.seed_tools:toolbox",
        "--tool-choice",
        "required",
        "--single-call",
        "--max-rounds",
        "1",
        "--json",
    ]
    proc = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    # One round, spent on the forced call: the run ends without an answer (exit 1).
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "max_rounds"
    assert data["model"] == "local:qwen2.5-coder-1.5b"
    [call] = data["calls"]
    jsonschema.validate(call["arguments"], SCHEMAS[call["name"]])
    assert data["usage"]["source"] == "provider" and data["usage"]["input_tokens"] > 0


def test_greedy_decoding_skips_the_mask_only_when_it_would_not_change_the_choice() -> None:
    # A tiny temperature samples from the fully masked distribution, which is
    # the masked argmax; greedy decoding checks the model's own first choice
    # against the grammar and computes the mask only when it is refused.
    # Both must give the same text.
    greedy = LocalModel("smollm2-135m", max_output_tokens=48)
    masked = LocalModel("smollm2-135m", max_output_tokens=48, temperature=1e-6)
    for task in TASKS[:2]:
        for choice in ("auto", "get_current_weather"):
            # Both from the same cached prompt: a prompt evaluated in one batch
            # and one evaluated a token at a time differ in the last bits of
            # their logits, enough to flip a near tie.
            ask(greedy, task, choice=choice)
            a = ask(greedy, task, choice=choice)
            full_masks = len(greedy.last_stats.mask_seconds)
            b = ask(masked, task, choice=choice)
            assert (a.content, a.tool_calls) == (b.content, b.tool_calls), (task, choice)
            assert full_masks <= len(masked.last_stats.mask_seconds)


# llama.cpp's grammar sampler checks the whole vocabulary at every step (seconds
# per token on a busy machine), so its decoding is tested on a grammar of one
# or two tokens, and the choice of engine without decoding.


def test_llama_cpp_grammars_decode_under_llama_cpp_sampler() -> None:
    from tooluse.models._local import _engine

    model = LocalModel("smollm2-135m")
    engine = _engine(str(model.path), model.n_ctx, model.threads)
    prompt = engine.template.render(
        ModelRequest([Message("user", "Is the sky blue? Answer yes or no.")])
    )
    with engine.lock:
        text, n_out, finish, _ = engine.decode_gbnf(prompt, 'root ::= "yes" | "no"', 8, 0.0)
    assert text in ("yes", "no") and 0 < n_out <= 2 and finish == "stop"


def test_a_grammar_llguidance_refuses_falls_back_to_llama_cpp_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from tooluse import Tool
    from tooluse.models._local import _engine

    # llguidance refuses a oneOf it cannot prove disjoint; llama.cpp reads it as anyOf.
    schema = {
        "type": "object",
        "properties": {
            "unit": {"oneOf": [{"enum": ["celsius", "fahrenheit"]}, {"const": "celsius"}]}
        },
        "required": ["unit"],
    }
    odd = Tool.from_schema("set_unit", "Set the temperature unit.", schema, lambda unit: unit)
    model = LocalModel("smollm2-135m")
    grammar = model.grammar_for(ModelRequest([Message("user", "x")], [odd], "set_unit"))
    assert grammar is not None
    engine = _engine(str(model.path), model.n_ctx, model.threads)
    with caplog.at_level("WARNING", logger="tooluse.models.local"):
        gbnf = model._gbnf_instead(engine, grammar)
    assert "falling back to llama.cpp's GBNF grammar" in caplog.text
    assert gbnf is not None and '"\\"celsius\\"" | "\\"fahrenheit\\""' in gbnf
    # One line, without the grammar llguidance's message goes on to list; said once.
    (told,) = caplog.records
    assert "\n" not in told.getMessage() and "start:" not in told.getMessage()
    caplog.clear()
    with caplog.at_level("WARNING", logger="tooluse.models.local"):
        assert model._gbnf_instead(engine, grammar) == gbnf
    assert caplog.text == ""
    # A grammar llguidance takes is decoded by llguidance, without a word.
    caplog.clear()
    plain = model.grammar_for(ModelRequest([Message("user", "x")], TOOLS, "auto"))
    assert plain is not None and model._gbnf_instead(engine, plain) is None
    assert caplog.text == ""
    assert LocalModel("smollm2-135m", grammar_engine="llama.cpp")._gbnf_instead(
        engine, plain
    ) == to_gbnf(plain)


def test_a_schema_no_grammar_engine_takes_is_a_clear_error() -> None:
    from tooluse import Tool
    from tooluse.decoding import GrammarError

    # A lookaround: llguidance refuses it, and llama.cpp's converter too.
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^(?!x)[a-z]{3}$"}},
        "required": ["code"],
    }
    odd = Tool.from_schema("set_code", "Set a code.", schema, lambda code: code)
    request = ModelRequest([Message("user", "Set the code.")], [odd], "set_code")
    with pytest.raises(GrammarError, match="no grammar engine takes this request"):
        LocalModel("smollm2-135m", max_output_tokens=8).respond_sync(request)


def test_models_evicted_from_the_engine_cache_are_freed() -> None:
    import gc

    import llama_cpp

    for n_ctx in (512, 1024, 1536):
        reply = LocalModel(
            "smollm2-135m", n_ctx=n_ctx, max_output_tokens=2, constrained=False
        ).respond_sync(ModelRequest([Message("user", "Hi")]))
        assert reply.usage is not None and reply.usage.output_tokens > 0
    gc.collect()

    # the two most recently used stay loaded; the third is gone, not leaked
    alive = [o for o in gc.get_objects() if isinstance(o, llama_cpp.Llama)]
    assert len(alive) == 2
    assert sorted(llm.n_ctx() for llm in alive) == [1024, 1536]


def test_the_scope_question_is_answered_with_a_valid_declaration(model: LocalModel) -> None:
    @tool(side_effects=True)
    def book_room(hotel: str) -> str:
        """Book a hotel room."""
        return "booked"

    events: list[dict[str, object]] = []
    agent = Agent(model, [*TOOLS, book_room], scope="ask", max_rounds=1, on_event=events.append)
    result = agent.run("Book a room at the Hotel Astoria.")
    (scoped,) = [e for e in events if e["event"] == "scope"]
    assert "problem" not in scoped, scoped  # the grammar forced a readable declaration
    assert result.scope is not None and set(result.scope) <= {"book_room"}
    assert result.usage.asides[0].source == "provider"


def test_an_answer_that_announces_a_step_goes_on_as_that_steps_call() -> None:
    plain = LocalModel("smollm2-135m", max_output_tokens=96, steps_as_calls=False)
    # Here any first sentence is a step, so that the tiny model's own answer has one.
    stepping = LocalModel("smollm2-135m", max_output_tokens=96, steps_as_calls=re.compile(""))
    request = ModelRequest([SYSTEM, Message("user", "What is the weather in Paris?")], TOOLS)
    answer = plain.respond_sync(request)
    assert answer.content and not answer.tool_calls, answer  # it answers in prose
    first = first_sentence(answer.content + "\n")
    assert first and first != answer.content

    stepped = stepping.respond_sync(request)
    # The same tokens up to the sentence's end, then calls from there on.
    assert stepped.content == first
    assert stepped.tool_calls and stepped.problems == []
    for call in stepped.tool_calls:
        assert_valid(call)
    assert stepping.last_stats.step == first and plain.last_stats.step is None

    # The built-in pattern leaves an answer that announces nothing whole.
    builtin = LocalModel("smollm2-135m", max_output_tokens=96, steps_as_calls=True)
    reply = builtin.respond_sync(request)
    assert reply.content and reply.content.startswith(first) and len(reply.content) > len(first)
    assert not reply.tool_calls and builtin.last_stats.step is None


def test_the_registry_takes_steps_as_calls_for_the_1_5b_only() -> None:
    registry = Registry()
    assert registry["qwen2.5-coder-1.5b"].steps_as_calls
    assert not registry["qwen2.5-coder-0.5b"].steps_as_calls
    assert LocalModel("smollm2-135m").step_pattern is None


def without_and_with(lever: str) -> tuple[LocalModel, LocalModel]:
    """The tiny model without `lever` (a `LocalModel` option) and with it."""
    off: dict[str, Any] = {lever: False}
    on: dict[str, Any] = {lever: True}
    return (
        LocalModel("smollm2-135m", max_output_tokens=96, **off),
        LocalModel("smollm2-135m", max_output_tokens=96, **on),
    )


def after_one_call(task: str, call: ToolCall, result: str) -> list[Message]:
    """A run's messages once `call` has returned `result`."""
    return [
        SYSTEM,
        Message("user", task),
        Message("assistant", None, tool_calls=(call,)),
        Message("tool", result, tool_call_id=call.id),
    ]


#: A run whose one result gives no number, so that the tiny model's answer, which
#: states the Eiffel Tower's height from memory, has numbers nothing gives.
HEIGHT = "How tall is the Eiffel Tower?"
HEIGHT_CALL = ToolCall("call_1", "get_weather", '{"city": "Paris"}')
HEIGHT_RUN = after_one_call(HEIGHT, HEIGHT_CALL, '{"name": "Eiffel Tower"}')


def test_an_answer_stating_a_number_nothing_gives_goes_on_as_a_call() -> None:
    plain, watching = without_and_with("numbers_as_calls")
    request = ModelRequest(HEIGHT_RUN, TOOLS)
    # Once first: later decodes of this prompt reuse its evaluation, whose last bits
    # differ from a fresh one's, and this prompt's first tokens are a near tie.
    plain.respond_sync(request)
    answer = plain.respond_sync(request)
    assert answer.content and not answer.tool_calls, answer
    missing = unsupported(answer.content, [HEIGHT, '{"name": "Eiffel Tower"}'])
    assert missing, answer.content  # the tiny model's own guess
    first = next(m for m in NUMBER.finditer(answer.content) if m.group() == missing[0])

    taken = watching.respond_sync(request)
    # The same tokens up to the number; the whole sentences before it are the text.
    assert taken.content == whole_sentences(answer.content[: first.start()])
    assert taken.tool_calls and taken.problems == []
    for call in taken.tool_calls:
        assert_valid(call)
    assert watching.last_stats.number == missing[0] and plain.last_stats.number is None

    # Before any result, nothing is watched: the answer is the plain one.
    ask = ModelRequest([SYSTEM, Message("user", HEIGHT)], TOOLS)
    assert watching.respond_sync(ask) == plain.respond_sync(ask)
    assert watching.last_stats.number is None


def test_a_number_whose_calls_the_run_has_made_goes_on_as_an_answer() -> None:
    # The tiny model's call for this number is the one the run has made already.
    made = ToolCall("call_1", "get_current_weather", '{"location": "Paris"}')
    run = [*HEIGHT_RUN[:2], Message("assistant", None, tool_calls=(made,)), HEIGHT_RUN[3]]
    request = ModelRequest(run, TOOLS)
    plain = LocalModel("smollm2-135m", max_output_tokens=96, numbers_as_calls=False)
    plain.respond_sync(request)  # see the test above
    answer = plain.respond_sync(request)
    assert answer.content and not answer.tool_calls, answer
    missing = unsupported(answer.content, [HEIGHT, '{"name": "Eiffel Tower"}'])
    assert missing, answer.content
    before = answer.content[: answer.content.index(missing[0])].rstrip()

    watching = LocalModel("smollm2-135m", max_output_tokens=96, numbers_as_calls=True)
    again = watching.respond_sync(request)
    # Stopped before the number, it would only call again: it answers from there.
    assert watching.last_stats.number == missing[0]
    assert again.content and again.content.startswith(before) and not again.tool_calls


def test_the_registry_takes_numbers_as_calls_for_the_1_5b_only() -> None:
    registry = Registry()
    assert registry["qwen2.5-coder-1.5b"].numbers_as_calls
    assert not registry["qwen2.5-coder-0.5b"].numbers_as_calls
    assert not LocalModel("smollm2-135m").numbers_as_calls


def test_a_step_that_would_repeat_the_runs_calls_goes_on_as_an_answer() -> None:
    # Here any first sentence is a step, so every reply that has one is stopped there.
    stepping = LocalModel("smollm2-135m", max_output_tokens=96, steps_as_calls=re.compile(""))
    question = Message("user", "What is the weather in Paris?")
    first = stepping.respond_sync(ModelRequest([SYSTEM, question], TOOLS))
    assert first.tool_calls and stepping.last_stats.step == first.content
    results = [Message("tool", "sunny, 18 °C", tool_call_id=c.id) for c in first.tool_calls]
    run = [
        SYSTEM,
        question,
        Message("assistant", first.content, tool_calls=tuple(first.tool_calls)),
    ]

    # With the result in, its step would look the weather up again: the model goes
    # on from the sentence with an answer instead, and no call is made.
    after = stepping.respond_sync(ModelRequest([*run, *results], TOOLS))
    assert after.content and not after.tool_calls
    sentence = first_sentence(after.content)
    assert sentence and after.content.startswith(sentence + "\n")
    assert stepping.last_stats.step is None


WARMER = "Is it warmer in Paris or in London right now?"
PARIS_CALL = ToolCall("call_1", "get_current_weather", '{"location": "Paris"}')
WARMER_RUN = after_one_call(WARMER, PARIS_CALL, '{"location": "Paris", "temperature_c": 18}')


def test_an_answer_while_a_listed_item_is_owed_is_made_the_call_that_takes_it() -> None:
    plain, owing = without_and_with("items_as_calls")
    request = ModelRequest(WARMER_RUN, TOOLS)
    plain.respond_sync(
        request
    )  # see test_an_answer_stating_a_number_nothing_gives_goes_on_as_a_call
    answer = plain.respond_sync(request)
    assert answer.content and not answer.tool_calls, answer  # Paris alone, and an answer

    taken = owing.respond_sync(request)
    assert taken.content is None and taken.problems == []
    [call] = taken.tool_calls
    assert (call.name, json.loads(call.arguments)["location"]) == ("get_current_weather", "London")
    assert_valid(call)
    assert owing.last_stats.item == "London" and plain.last_stats.item is None

    # Before any call, nothing is owed: the reply is the plain one.
    first = ModelRequest(WARMER_RUN[:2], TOOLS)
    assert owing.respond_sync(first) == plain.respond_sync(first)
    assert owing.last_stats.item is None


def test_an_owed_item_comes_before_a_step_the_answer_announces() -> None:
    # Here any first sentence is a step: without an owed item the answer would go on
    # from its first sentence as calls of the model's own choosing.
    both = LocalModel(
        "smollm2-135m", max_output_tokens=96, steps_as_calls=re.compile(""), items_as_calls=True
    )
    taken = both.respond_sync(ModelRequest(WARMER_RUN, TOOLS))
    [call] = taken.tool_calls
    assert (call.name, json.loads(call.arguments)["location"]) == ("get_current_weather", "London")
    assert both.last_stats.item == "London" and both.last_stats.step is None


DISPLAYS = "List the products in the displays category and how many of each are in stock."
LISTING = ToolCall("call_1", "list_products", '{"category": "displays"}')
DISPLAYS_RUN = after_one_call(
    DISPLAYS, LISTING, '[{"sku": "C100", "name": "27-inch monitor", "price_usd": 229.0}]'
)


def owed_call(messages: list[Message]) -> tuple[ToolCall, LocalModel]:
    """The one call the tiny model makes with `items_as_calls` where it answers without."""
    plain, owing = without_and_with("items_as_calls")
    request = ModelRequest(messages, list(everyday))
    plain.respond_sync(request)  # see test_an_answer_stating_a_number_nothing_gives_…
    answer = plain.respond_sync(request)
    assert answer.content and not answer.tool_calls, answer
    taken = owing.respond_sync(request)
    assert taken.content is None and taken.problems == []
    [call] = taken.tool_calls
    return call, owing


def test_an_answer_while_a_listed_record_is_owed_is_made_the_call_of_the_tool_taking_it() -> None:
    # check_stock is the one tool that requires a `sku`: the record's is owed its call.
    call, owing = owed_call(DISPLAYS_RUN)
    assert (call.name, json.loads(call.arguments)) == ("check_stock", {"sku": "C100"})
    assert owing.last_stats.item == "C100"


SUM = "I have 12 EUR and 45 GBP. How much is that together in US dollars?"
ADDED = ToolCall(
    "call_1", "convert_currency", '{"amount": 57, "from_currency": "EUR", "to_currency": "USD"}'
)
SUM_RUN = after_one_call(SUM, ADDED, "61.96")


def test_an_owed_item_given_with_a_number_is_called_with_that_number() -> None:
    # The call converted 57 EUR, the two amounts added: GBP is owed, with its own 45
    # (left to itself, the tiny model passes the 57 of the call before).
    call, owing = owed_call(SUM_RUN)
    arguments = json.loads(call.arguments)
    assert call.name == "convert_currency"
    assert (arguments["amount"], arguments["from_currency"]) == (45, "GBP")
    assert owing.last_stats.item == "GBP"


def test_the_registry_takes_items_as_calls_for_the_1_5b_only() -> None:
    registry = Registry()
    assert registry["qwen2.5-coder-1.5b"].items_as_calls
    assert not registry["qwen2.5-coder-0.5b"].items_as_calls
    assert not LocalModel("smollm2-135m").items_as_calls
