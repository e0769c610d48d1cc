"""`ScriptedModel`: a model that answers from a script, for tests and examples."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._exceptions import ModelResponseError, UsageError
from .._messages import Message, Usage, parse_openai_message
from .._written import json_lines
from ._base import CallDelta, DeltaSink, Model, ModelRequest, ModelResponse, TextDelta

__all__ = ["ScriptedModel"]

Responder = Callable[[Sequence[Message]], Mapping[str, Any] | str]


class ScriptedModel(Model):
    """Answers with prepared assistant messages and records what it was asked.

    `script` is either a list of assistant messages in the OpenAI
    chat-completions shape (``{"content": ...}`` or ``{"tool_calls": [...]}``;
    a plain string is a text answer) consumed one per request, or a function
    of the conversation returning the next one. An optional ``"usage"`` key
    (``{"input_tokens": .., "output_tokens": ..}``) is reported as provider
    usage. `requests` keeps every `ModelRequest` received, so tests can assert
    what the model was shown.

    Streamed (`respond_stream`), a reply's text and each call's arguments are
    handed over in pieces of `chunk` characters (the whole at once if None),
    with a turn of the event loop between pieces, as a network would give them.
    """

    def __init__(
        self,
        script: Sequence[Mapping[str, Any] | str] | Responder,
        *,
        name: str = "scripted",
        chunk: int | None = None,
    ) -> None:
        if chunk is not None and chunk < 1:
            raise UsageError(f"chunk must be at least 1 character, not {chunk}")
        self.name = name
        self.chunk = chunk
        self._responder: Responder | None = None
        self._queue: list[Mapping[str, Any] | str] = []
        if callable(script):
            self._responder = script
        else:
            self._queue = list(script)
        self._position = 0
        self.requests: list[ModelRequest] = []

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        """Load a script from JSON Lines: one assistant message per line.

        A trace written by ``--trace`` works too: its ``model_response``
        events are replayed in order.
        """
        messages: list[Mapping[str, Any] | str] = []
        text = Path(path).read_text(encoding="utf-8")
        for number, item in json_lines(text):
            if isinstance(item, json.JSONDecodeError):
                raise UsageError(f"{path}:{number}: not JSON: {item.msg}") from None
            if isinstance(item, dict) and "event" in item:
                if item["event"] == "model_response":
                    messages.append(item["message"])
                continue
            if not isinstance(item, dict | str):
                raise UsageError(f"{path}:{number}: expected an assistant message object")
            messages.append(item)
        return cls(messages, name=f"scripted:{Path(path).name}")

    @property
    def remaining(self) -> int:
        return len(self._queue) - self._position

    async def respond(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self._responder is not None:
            item = self._responder(request.messages)
        else:
            if self._position >= len(self._queue):
                raise ModelResponseError(
                    f"the scripted model has no reply left (it had {len(self._queue)})"
                )
            item = self._queue[self._position]
            self._position += 1
        return _to_response(item, self.name, index=len(self.requests))

    async def respond_stream(self, request: ModelRequest, on_delta: DeltaSink) -> ModelResponse:
        if self.chunk is None:  # the whole reply at once, as a backend that cannot stream
            return await super().respond_stream(request, on_delta)
        response = await self.respond(request)
        for piece in _pieces(response.content or "", self.chunk):
            on_delta(TextDelta(piece))
            await asyncio.sleep(0)
        for index, call in enumerate(response.tool_calls):
            on_delta(CallDelta(index, call.id, call.name))
            for piece in _pieces(call.arguments, self.chunk):
                on_delta(CallDelta(index, arguments=piece))
                await asyncio.sleep(0)
        return response


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _to_response(item: Mapping[str, Any] | str, name: str, *, index: int) -> ModelResponse:
    if isinstance(item, str):
        return ModelResponse(content=item, finish_reason="stop", model_name=name, raw=item)
    if type(item) is not dict and not isinstance(item, Mapping):
        raise ModelResponseError(f"scripted reply #{index} is not a message object")
    content, calls, problems = parse_openai_message(item, call_id_prefix=f"call_{index}")
    usage = None
    raw_usage = item.get("usage")
    if raw_usage is not None and isinstance(raw_usage, Mapping):
        usage = Usage(
            input_tokens=int(raw_usage.get("input_tokens", 0)),
            output_tokens=int(raw_usage.get("output_tokens", 0)),
            source="provider",
        )
    return ModelResponse(
        content=content,
        tool_calls=calls,
        usage=usage,
        finish_reason="tool_calls" if calls else "stop",
        model_name=name,
        problems=problems,
        raw=dict(item),
    )
