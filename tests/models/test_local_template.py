"""Chat templates: the model's own, given the tools natively when it renders them."""

from __future__ import annotations

import json

import pytest

from examples.seed_tools import toolbox
from tooluse import Message, ToolCall
from tooluse.models import ModelRequest
from tooluse.models._chat_template import (
    CHATML,
    SEVERAL_CALLS,
    ChatTemplate,
    plain_messages,
    tool_response,
)

TOOLS = list(toolbox)
SYSTEM = Message("system", "You are a helpful assistant.")
CALL = ToolCall("c1", "lookup_capital", '{"country": "Japan"}')
CONVERSATION = [
    SYSTEM,
    Message("user", "Capital of Japan?"),
    Message("assistant", None, (CALL,)),
    Message("tool", "Tokyo", tool_call_id="c1", name="lookup_capital"),
]

#: A template in the shape of Qwen2.5's and Hermes': the tools as JSON lines
#: in the system turn, calls in tags, results in a user turn.
WITH_TOOLS = """\
{%- if tools %}<|im_start|>system
{{ messages[0]['content'] }}
<tools>
{%- for tool in tools %}{{ "\n" }}{{ tool | tojson }}{% endfor %}{{ "\n</tools>" }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'system' and tools %}{% continue %}{% endif %}
{%- if message.role == 'assistant' and message.tool_calls %}<|im_start|>assistant
{%- for call in message.tool_calls %}
<tool_call>
{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% else %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""


def template(text: str | None) -> ChatTemplate:
    return ChatTemplate(text, bos="", eos="<|im_end|>", source="model.gguf")


def test_a_template_that_renders_tools_gets_them_natively() -> None:
    chat = template(WITH_TOOLS)
    assert chat.takes_tools
    prompt = chat.render(ModelRequest(CONVERSATION, TOOLS))
    system = prompt.split("<|im_end|>")[0]
    lines = [json.loads(line) for line in system.splitlines() if line.startswith("{")]
    assert [t["function"]["name"] for t in lines] == [t.name for t in TOOLS]
    assert lines[0]["function"]["parameters"] == TOOLS[0].parameters
    # The earlier call and its result in the template's own syntax, not ours.
    assert '<tool_call>\n{"name": "lookup_capital", "arguments": {"country": "Japan"}}' in prompt
    # The result names its tool, in Hermes' shape.
    assert (
        '<tool_response>\n{"name": "lookup_capital", "content": "Tokyo"}\n</tool_response>'
        in prompt
    )
    assert "You can call these tools" not in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_the_tools_stay_in_the_same_place_across_rounds() -> None:
    # The system turn with the tools comes first and does not change, so the
    # prompt's prefix is reused from one round to the next.
    chat = template(WITH_TOOLS)
    first = chat.render(ModelRequest(CONVERSATION[:2], TOOLS))
    later = chat.render(ModelRequest(CONVERSATION, TOOLS))
    assert later.startswith(first.removesuffix("<|im_start|>assistant\n"))


def system_turn(prompt: str) -> str:
    return prompt.split("<|im_end|>", maxsplit=1)[0].removeprefix("<|im_start|>system\n")


def test_a_default_system_prompt_stands_in_only_where_the_request_has_none() -> None:
    chat = template(WITH_TOOLS)
    bare = chat.render(ModelRequest(CONVERSATION[1:2], TOOLS), SEVERAL_CALLS)
    assert system_turn(bare).startswith(f"{SEVERAL_CALLS}\n<tools>")
    assert bare.count("Capital of Japan?") == 1
    # The caller's own system prompt is left as it is.
    own = chat.render(ModelRequest(CONVERSATION[:2], TOOLS), SEVERAL_CALLS)
    assert SEVERAL_CALLS not in own
    assert system_turn(own).startswith("You are a helpful assistant.\n<tools>")
    # Without tools offered, the template's own defaults apply.
    plain = chat.render(ModelRequest(CONVERSATION[1:2], TOOLS, "none"), SEVERAL_CALLS)
    assert SEVERAL_CALLS not in plain


def test_a_template_without_tools_gets_them_described_in_the_system_prompt() -> None:
    chat = template(CHATML)
    assert not chat.takes_tools
    prompt = chat.render(ModelRequest(CONVERSATION, TOOLS))
    assert prompt.startswith("<|im_start|>system\nYou are a helpful assistant.\n\nYou can call")
    assert '{"name": "lookup_capital", "description":' in prompt
    assert '<tool_call>{"name": "lookup_capital", "arguments": {"country": "Japan"}}' in prompt


def test_no_tools_offered_means_no_tools_in_the_prompt() -> None:
    for chat in (template(WITH_TOOLS), template(CHATML)):
        prompt = chat.render(ModelRequest(CONVERSATION[:2], TOOLS, "none"))
        assert "lookup_capital" not in prompt and "<tools>" not in prompt


def test_a_model_file_without_a_template_is_prompted_in_chatml_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="tooluse.models.local"):
        chat = template(None)
    assert "model.gguf has no chat template; prompting it in ChatML" in caplog.text
    prompt = chat.render(ModelRequest([Message("user", "Hi")]))
    assert prompt == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def test_a_template_that_fails_on_a_conversation_falls_back_to_chatml(
    caplog: pytest.LogCaptureFixture,
) -> None:
    strict = "{% if messages[0].role != 'system' %}{{ raise_exception('system first') }}{% endif %}"
    chat = template(strict + CHATML)
    with caplog.at_level("WARNING", logger="tooluse.models.local"):
        prompt = chat.render(ModelRequest([Message("user", "Hi")]))
    assert "system first" in caplog.text
    assert prompt == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def test_the_conversation_is_rendered_in_roles_every_template_knows() -> None:
    rendered = plain_messages(ModelRequest(CONVERSATION, TOOLS))
    assert [m["role"] for m in rendered] == ["system", "user", "assistant", "user"]
    assert rendered[0]["content"].startswith("You are a helpful assistant.")
    assert '{"name": "lookup_capital"' in rendered[0]["content"]
    assert rendered[2]["content"] == (
        '<tool_call>{"name": "lookup_capital", "arguments": {"country": "Japan"}}</tool_call>'
    )
    assert rendered[3]["content"] == (
        '<tool_response>\n{"name": "lookup_capital", "content": "Tokyo"}\n</tool_response>'
    )


def test_a_result_names_its_tool_and_keeps_json_as_json() -> None:
    rate = Message("tool", "0.92", tool_call_id="c1", name="get_exchange_rate")
    page = Message("tool", '{"items": ["apple"]}', tool_call_id="c2", name="list_items")
    failed = Message("tool", "Error: no such city", tool_call_id="c3", name="weather")
    assert json.loads(tool_response(rate)) == {"name": "get_exchange_rate", "content": 0.92}
    assert json.loads(tool_response(page)) == {
        "name": "list_items",
        "content": {"items": ["apple"]},
    }
    assert json.loads(tool_response(failed)) == {
        "name": "weather",
        "content": "Error: no such city",
    }
