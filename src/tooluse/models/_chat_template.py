"""A GGUF's own chat template, given the tools the way the model was trained to see them.

A template that renders ``tools`` (Qwen2.5's, Llama 3.1's, Hermes') gets the
request's tools as ``tools=`` and the conversation in native roles: assistant
messages with ``tool_calls``, results as ``tool`` messages. A template that
does not gets the tools described in the system prompt by `tools_block` and
the conversation in the roles every template knows. A file without a
template is rendered as ChatML, with a warning.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, cast

from .._messages import Message, ToolCall
from ..decoding import CALL_CLOSE, CALL_OPEN
from ..tools import Tool
from ..tools._render import described_with_examples
from ._base import ModelRequest

__all__ = ["CHATML", "ChatTemplate", "tools_block"]

logger = logging.getLogger("tooluse.models.local")

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
#: Qwen2.5-Coder-0.5B's system prompt where a request offering tools has none
#: and a reply may hold several calls (`LocalModel.parallel_system`, set by
#: the registry). Given tools natively, it writes one call and stops even where
#: the request needs more (BFCL's `parallel`, first 50, json: 17 passed under
#: its template's default system prompt, 27 under this one). The 1.5B is better
#: off without it: with it, it answers the demo task by calling the calculator
#: with a rate it made up.
SEVERAL_CALLS = (
    "If the request needs several calls, make every one of them now, in one reply, "
    "one JSON object per line."
)
#: Qwen2.5-Coder-1.5B's system prompt where a request offering tools has none
#: (`LocalModel.default_system`, set by the registry), the one `make demo` gives
#: it. Under its template's default, once a result is back it writes the same call
#: again, round after round; under "call tools to get facts, then reply in plain
#: text" it answered the hotel task with a question, and passed 19 of the 39
#: everyday tasks in json (docs/models.md has the measurements).
FACTS_THEN_ANSWER = (
    "You are a helpful assistant. Call a tool only for a fact you do not have yet, and use "
    "the calculator for arithmetic. Once the tool results give you what you need, reply to "
    "the user in plain text and answer every part of the question."
)
#: A note for `LocalModel(after_results=...)`: at the point where the model
#: decides, the reminder to answer from the results or to make the call that is
#: still missing. Qwen2.5-Coder-1.5B often explains how one would compute the rest
#: instead of calling for it; docs/models.md has what this note did to that.
ANSWER_NOW = (
    "If these results answer every part of the question, reply to the user now, in "
    "plain text, with the values they give. If a part is still missing, make the call "
    "for it."
)
#: A tool name no template would print unless it renders the tools it is given.
_PROBE = "tooluse_template_probe"


class ChatTemplate:
    """Renders requests into prompt text with a model's chat template.

    Args:
        template: the GGUF's ``tokenizer.chat_template``; None or empty for ChatML.
        bos, eos: the model's begin- and end-of-sequence token text.
        source: what the template came from, for the warning.
    """

    def __init__(self, template: str | None, *, bos: str, eos: str, source: str) -> None:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        if not template:
            logger.warning("%s has no chat template; prompting it in ChatML", source)
            template = CHATML
        self._formatter = Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos)
        self._chatml = Jinja2ChatFormatter(CHATML, eos_token=eos, bos_token=bos)
        #: Whether the template renders the tools it is given (so it gets them natively).
        self.takes_tools = self._renders_tools()

    def render(self, request: ModelRequest, default_system: str | None = None) -> str:
        """The prompt for `request`, ending where the assistant's reply begins.

        `default_system` is the system prompt where the tools go to the
        template and the request has none of its own.
        """
        offer = bool(request.tools) and request.tool_choice != "none"
        if offer and self.takes_tools:
            try:
                messages = native_messages(request.messages)
                if default_system and not _has_system(messages):
                    messages.insert(0, {"role": "system", "content": default_system})
                return self._render(messages, tool_specs(request.tools))
            except Exception as exc:  # jinja raises whatever a template says
                logger.warning("the chat template failed with tools (%s); describing them", exc)
        return self._render(plain_messages(request))

    def _render(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> str:
        try:
            return self._formatter(messages=cast(Any, messages), tools=cast(Any, tools)).prompt
        except Exception as exc:  # jinja raises whatever a template says
            if tools is not None:
                raise
            logger.warning("the model's chat template failed (%s); using ChatML", exc)
            return self._chatml(messages=cast(Any, messages)).prompt

    def _renders_tools(self) -> bool:
        probe = {"type": "function", "function": {"name": _PROBE, "parameters": {}}}
        messages = [{"role": "user", "content": "hi"}]
        try:
            text = self._formatter(messages=cast(Any, messages), tools=cast(Any, [probe])).prompt
        except Exception:  # a template that chokes on tools does not take them
            return False
        return _PROBE in text


def _has_system(messages: list[dict[str, Any]]) -> bool:
    return bool(messages) and messages[0]["role"] == "system"


def tool_specs(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """The tools in the OpenAI shape chat templates are written for.

    A tool's examples go below its description, one line each: every template
    prints the description, and few print anything else they do not know.
    """
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": described_with_examples(t),
                "parameters": t.parameters,
            },
        }
        for t in tools
    ]


def native_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation with assistant ``tool_calls`` and ``tool`` results, as templates expect."""
    out: list[dict[str, Any]] = []
    for message in messages:
        entry: dict[str, Any] = {"role": message.role, "content": message.content or ""}
        if message.role == "assistant" and message.tool_calls:
            entry["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _arguments(call)},
                }
                for call in message.tool_calls
            ]
        elif message.role == "tool":
            entry["tool_call_id"] = message.tool_call_id
            entry["name"] = message.name
            entry["content"] = tool_response(message)
        out.append(entry)
    return out


def _arguments(call: ToolCall) -> Any:
    # Templates print arguments with `tojson`: they want the object, not its text.
    try:
        return json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return call.arguments


def tools_block(tools: Sequence[Tool]) -> str:
    """How the tools and the call syntax are explained where the template cannot."""
    lines = [
        "You can call these tools. To call one or more, reply with nothing but one line per call:",
        f'{CALL_OPEN}{{"name": "TOOL_NAME", "arguments": {{...}}}}{CALL_CLOSE}',
        "Each result comes back in a <tool_response>.",
        "When no tool is needed, answer in plain text.",
        "<tools>",
    ]
    for t in tools:
        spec = {
            "name": t.name,
            "description": described_with_examples(t),
            "parameters": t.parameters,
        }
        lines.append(json.dumps(spec, ensure_ascii=False))
    lines.append("</tools>")
    return "\n".join(lines)


def plain_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The conversation in the plain roles every chat template knows, tools in the system prompt."""
    out: list[dict[str, Any]] = []
    offer_tools = bool(request.tools) and request.tool_choice != "none"
    messages: list[Message] = list(request.messages)
    if offer_tools:
        if messages and messages[0].role == "system":
            first = messages[0]
            messages[0] = Message(
                "system", f"{first.content or ''}\n\n{tools_block(request.tools)}".strip()
            )
        else:
            messages.insert(0, Message("system", tools_block(request.tools)))
    for message in messages:
        role, content = message.role, message.content or ""
        if role == "assistant" and message.tool_calls:
            calls = [call_text(c) for c in message.tool_calls]
            content = "\n".join([content, *calls] if content else calls)
        elif role == "tool":
            role = "user"
            content = f"<tool_response>\n{tool_response(message)}\n</tool_response>"
        if out and out[-1]["role"] == role and role != "system":
            out[-1]["content"] += "\n" + content
        else:
            out.append({"role": role, "content": content})
    return out


def tool_response(message: Message) -> str:
    """A result as Hermes' format writes it: ``{"name": tool, "content": value}``.

    Templates print a result's text bare; a bare ``0.92`` does not say which
    call it answers, and small models then make the same call again. JSON
    results are nested as values, anything else as a string.
    """
    text = message.content or ""
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError:
        value = text
    return json.dumps({"name": message.name or "", "content": value}, ensure_ascii=False)


def call_text(call: ToolCall) -> str:
    """A call as the model is told to write it."""
    arguments = call.arguments or "{}"
    return f'{CALL_OPEN}{{"name": {json.dumps(call.name)}, "arguments": {arguments}}}{CALL_CLOSE}'
