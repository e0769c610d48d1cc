"""The one interface every model backend implements."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._messages import Message, ToolCall, Usage
from ..tools import Tool

__all__ = [
    "CallDelta",
    "Delta",
    "DeltaSink",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ReplyFormat",
    "TextDelta",
    "ToolChoice",
]

ToolChoice = Literal["auto", "none", "required"] | str
"""``auto``, ``none``, ``required``, or the name of the one tool to call."""

ReplyFormat = Literal["text", "code", "python_calls"]
"""What the reply's text should be: free text, prose with one fenced Python block,
or a Python list of calls to the request's `described_tools` (or a plain answer).

Backends that can constrain decoding use it to pick a grammar; others ignore it.
"""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What the model is asked: the conversation and the tools it may call."""

    messages: Sequence[Message]
    tools: Sequence[Tool] = ()
    tool_choice: ToolChoice = "auto"
    max_output_tokens: int | None = None
    temperature: float | None = None
    reply_format: ReplyFormat = "text"
    #: False asks for at most one call per reply; None leaves the backend's default.
    parallel_tool_calls: bool | None = None
    #: Tools the prompt describes in text, for a reply format that writes calls as
    #: text (``python_calls``); never passed to the API as tools.
    described_tools: Sequence[Tool] = ()


@dataclass(slots=True)
class ModelResponse:
    """The model's reply: text, tool calls, or both.

    `problems` lists anything wrong with the reply's shape that the backend
    noticed while reading it (a call without a function object, say); the
    convention turns them into feedback for the model.
    """

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str | None = None
    model_name: str | None = None
    problems: list[str] = field(default_factory=list)
    raw: Any = None


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the reply's text, as the backend received or decoded it."""

    text: str


@dataclass(frozen=True, slots=True)
class CallDelta:
    """A piece of the reply's `index`-th tool call.

    The first piece of a call carries its name (and its id, where the wire has
    one); later pieces carry more of the argument text.
    """

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


Delta = TextDelta | CallDelta
DeltaSink = Callable[[Delta], None]


class Model(ABC):
    """A language model backend.

    Subclasses implement `respond`, translating the request into their wire
    format and provider errors into `tooluse.ModelError` subclasses.
    """

    #: A short name for traces and reports, such as ``openai:gpt-4o-mini``.
    name: str = "model"
    #: Whether an agent checks this model's answers against its runs' results unless
    #: told otherwise (`Agent`'s ``check_answers``): the registry turns it on for the
    #: local models it measured it on.
    check_answers: bool = False

    @abstractmethod
    async def respond(self, request: ModelRequest) -> ModelResponse:
        """Return the model's next message for `request`."""

    async def respond_stream(self, request: ModelRequest, on_delta: DeltaSink) -> ModelResponse:
        """Return what `respond` returns, handing each piece to `on_delta` as it arrives.

        The pieces joined are the response's text and calls; the response is
        the one `respond` would give for the same reply. Backends that cannot
        stream hand over the whole reply as one piece once it is complete.
        """
        response = await self.respond(request)
        if response.content:
            on_delta(TextDelta(response.content))
        for index, call in enumerate(response.tool_calls):
            on_delta(CallDelta(index, call.id, call.name, call.arguments))
        return response

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release connections or processes the backend holds."""


_WIRE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def wire_names(names: Sequence[str]) -> dict[str, str]:
    """Names the chat-completions API refuses (``math.factorial``), mapped to ones it takes.

    Only names that need it are mapped; a replacement never collides with
    another tool's name. Replies are mapped back, so the rest of the runtime
    only ever sees the tools' own names.
    """
    taken = {n for n in names if _WIRE_NAME.match(n)}
    mapped: dict[str, str] = {}
    for name in names:
        if _WIRE_NAME.match(name):
            continue
        base = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:60] or "tool"
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        mapped[name] = candidate
    return mapped


def own_names(response: ModelResponse, names: Mapping[str, str]) -> ModelResponse:
    """`response` with the calls' wire names (`wire_names`) turned back into the tools' own."""
    if names:
        ours = {wire: name for name, wire in names.items()}
        response.tool_calls = [
            ToolCall(c.id, ours.get(c.name, c.name), c.arguments) for c in response.tool_calls
        ]
    return response
