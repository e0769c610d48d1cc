"""The conversation as the runtime keeps it: typed messages, tool calls, usage.

Backends translate these to and from their wire formats; nothing else in the
library reads provider dictionaries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "Message",
    "Role",
    "ToolCall",
    "Usage",
    "arguments_text",
    "openai_messages",
    "parse_openai_message",
    "wire_call",
]

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call as the model emitted it, before any validation.

    `arguments` is the raw text the model produced (a JSON object if all went
    well); the dispatcher parses and validates it.
    """

    id: str
    name: str
    arguments: str

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(slots=True)
class Message:
    """One message of the conversation.

    `id` is a stable, short identifier (``m1``, ``m2`` …) the runtime assigns
    when the message enters a run, so that the model can name messages.
    `is_error` marks a tool message that reports a failed or refused call
    (backends with an error flag on tool results send it).
    """

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    id: str = ""
    is_error: bool = False

    def to_openai(self) -> dict[str, Any]:
        """The chat-completions shape of this message."""
        out: dict[str, Any] = {"role": self.role}
        if self.role == "assistant":
            out["content"] = self.content
            if self.tool_calls:
                out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        else:
            out["content"] = self.content or ""
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible form that keeps the message id and error flag (for traces)."""
        out = self.to_openai()
        out["id"] = self.id
        if self.is_error:
            out["is_error"] = True
        if self.name is not None:
            out["name"] = self.name
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """The message `to_dict` wrote."""
        calls = tuple(
            ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"])
            for c in data.get("tool_calls") or ()
        )
        return cls(
            data["role"],
            data.get("content"),
            calls,
            data.get("tool_call_id"),
            data.get("name"),
            data.get("id", ""),
            bool(data.get("is_error", False)),
        )


@dataclass(slots=True)
class Usage:
    """Tokens of one model request, or a sum of several.

    `source` says where the numbers come from: ``provider`` (reported by the
    backend), ``o200k`` (counted offline with that tokenizer) or ``none``.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    source: str = "none"

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        return cls(data["input_tokens"], data["output_tokens"], data.get("source", "none"))


def openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation in chat-completions shape, valid on the wire.

    A tool message that answers no call of the assistant message before it
    (a script's output in the code convention) is sent as a user message:
    the API accepts tool messages only in reply to tool calls. An assistant
    message with calls and no text carries ``""``, not null: the API takes
    both, but some compatible servers (llama-cpp-python's) refuse null.
    """
    out: list[dict[str, Any]] = []
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "assistant":
            open_calls = {c.id for c in message.tool_calls}
        elif message.role == "tool" and message.tool_call_id not in open_calls:
            label = f"Output of {message.name}" if message.name else "Output"
            out.append({"role": "user", "content": f"{label}:\n{message.content or ''}"})
            continue
        wire = message.to_openai()
        if wire.get("content", "") is None:
            wire["content"] = ""
        out.append(wire)
    return out


def arguments_text(raw: object) -> str:
    """A call's arguments as text; an object some servers (and Anthropic's API) send is
    written as JSON, keeping what the model meant rather than rejecting the shape."""
    if isinstance(raw, str):
        return raw
    if raw is None:
        return ""
    return json.dumps(raw, ensure_ascii=False)


def wire_call(call_id: object, name: object, arguments: object, *, fallback_id: str) -> ToolCall:
    """A call as a server sent its fields, none of them trusted: a missing id is
    `fallback_id` (every tool message must answer some id), a name that is not text
    is empty, and the arguments are text (`arguments_text`)."""
    return ToolCall(
        call_id if isinstance(call_id, str) and call_id else fallback_id,
        name if isinstance(name, str) else "",
        arguments_text(arguments),
    )


def parse_openai_message(
    message: Mapping[str, Any], *, call_id_prefix: str = "call"
) -> tuple[str | None, list[ToolCall], list[str]]:
    """Read an assistant message in the chat-completions shape.

    Returns the text content, the tool calls, and a list of problems with the
    shape (each one a sentence the model or the user can act on). Calls with
    a missing id get one made up from `call_id_prefix`, because every tool
    message must answer some id.
    """
    content = message.get("content")
    text: str | None
    if content is None or isinstance(content, str):
        text = content
    elif isinstance(content, Sequence):
        # Content given as a list of parts: keep the text parts.
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
        text = "".join(str(p) for p in parts)
    else:
        text = str(content)
    calls: list[ToolCall] = []
    problems: list[str] = []
    raw_calls = message.get("tool_calls") or []
    # `type(...) is` first: the ABC checks cost more than the rest of a call's reading.
    if type(raw_calls) is not list and (
        not isinstance(raw_calls, Sequence) or isinstance(raw_calls, str | bytes)
    ):
        problems.append("tool_calls must be a list of call objects")
        raw_calls = []
    for index, raw in enumerate(raw_calls):
        if type(raw) is not dict and not isinstance(raw, Mapping):
            problems.append(f"tool call #{index + 1} is not an object")
            continue
        function = raw.get("function")
        if type(function) is not dict and not isinstance(function, Mapping):
            problems.append(f"tool call #{index + 1} has no 'function' object")
            continue
        calls.append(
            wire_call(
                raw.get("id"),
                function.get("name"),
                function.get("arguments"),
                fallback_id=f"{call_id_prefix}_{index + 1}",
            )
        )
    return text, calls, problems
