"""`AnthropicChat`: Claude models through the Anthropic Messages API.

The conversation is translated to the Messages wire format:

- system messages at the start become the ``system`` field; a system message
  later in the conversation (the API has no such role) is sent as user text;
- an assistant message becomes ``text`` and ``tool_use`` blocks, the input
  being the call's arguments parsed as JSON; arguments that are not a JSON
  object (a model elsewhere wrote them badly) are sent as ``{"_raw": text}``
  so the conversation stays valid and the text stays visible;
- tool messages become ``tool_result`` blocks, marked ``is_error`` when the
  message says the call failed or was refused (`Message.is_error`); a tool message
  answering no ``tool_use`` of the assistant message before it (a script's
  output, a call read from text) is sent as user text ``Output of NAME:``;
- consecutive user-side messages are merged into one user message, since the
  API wants user and assistant turns to alternate; an assistant message with
  neither text nor calls is left out for the same reason;
- for a model that can see (``vision=True``), each image a tool result refers to
  (its ``media:`` reference in the text) is sent inside the ``tool_result`` as an
  ``image`` block with its base64 source, after the text.

Replies are read back: text blocks joined as the content, ``tool_use`` blocks
as calls, ``stop_reason`` as the finish reason (verbatim: ``end_turn``,
``tool_use``, ``max_tokens`` …). Other blocks (thinking, server tools) are
kept only in ``raw``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._exceptions import (
    ModelRateLimitError,
    ModelResponseError,
    ModelServerError,
    UsageError,
)
from .._messages import Message, ToolCall, Usage, wire_call
from ..media import Image, recall
from ..tools._render import to_anthropic
from ._base import CallDelta, DeltaSink, ModelRequest, ModelResponse, TextDelta
from ._retry import (
    Failure,
    excerpt,
    reply_object,
    reply_text,
    retry_after_seconds,
    server_message,
)
from ._vendor import VendorModel, _StreamFault, how_far

if TYPE_CHECKING:
    import anthropic

__all__ = ["AnthropicChat", "anthropic_messages"]


class AnthropicChat(VendorModel["anthropic.AsyncAnthropic"]):
    """A Claude model reached through the official ``anthropic`` SDK.

    The key comes from `api_key`, else ``ANTHROPIC_API_KEY``; with neither, a
    placeholder is sent when a base URL is set (a local gateway or proxy) and
    `ModelAuthError` is raised otherwise. `max_tokens` caps each reply unless
    the request sets its own limit (the API requires one).

    The retry policy is `OpenAIChat`'s: rate limits (429), overload (529),
    server errors (5xx), timeouts and connection failures are retried up to
    `max_retries` times, waiting `backoff` seconds and doubling each time,
    with jitter, or as long as the server's ``Retry-After`` asks; no wait
    exceeds `max_backoff`. Other failures are raised at once. A `client`
    passed in is used as is, apart from its own retries, which are turned
    off; the caller closes it.

    `respond_stream` passes text and ``input_json_delta`` pieces on as they
    arrive; an ``error`` event is judged as the same error in a status line
    would be (``overloaded_error`` is retried while no piece was passed on).
    """

    _vendor = "anthropic"
    _key_var = "ANTHROPIC_API_KEY"
    _base_url_var = "ANTHROPIC_BASE_URL"
    _keyless = "a gateway that needs none"
    _timeout_hint = "long replies may need a larger timeout=..."
    _not_found_hint = "check the model name and base_url"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        max_tokens: int = 1024,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        client: anthropic.AsyncAnthropic | None = None,
        vision: bool = False,
    ) -> None:
        if max_tokens < 1:
            raise UsageError(f"max_tokens must be at least 1, not {max_tokens}")
        import anthropic

        self._sdk_error = anthropic.AnthropicError
        self._sdk_timeout = anthropic.APITimeoutError
        self._sdk_unreachable = anthropic.APIConnectionError
        self._sdk_status = anthropic.APIStatusError
        super().__init__(
            model,
            connect=anthropic.AsyncAnthropic,
            client=client,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_backoff=max_backoff,
            vision=vision,
        )
        self.max_tokens = max_tokens

    # --- the request ------------------------------------------------------------------

    def _params(
        self, request: ModelRequest, names: Mapping[str, str], *, images: bool = True
    ) -> dict[str, Any]:
        system, messages = anthropic_messages(request.messages, vision=self.vision and images)
        for message in messages if names else ():
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    block["name"] = names.get(block["name"], block["name"])
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_output_tokens or self.max_tokens,
            "messages": messages,
            "timeout": self.timeout,
        }
        if system is not None:
            params["system"] = system
        if request.tools:
            tools = [to_anthropic(t) for t in request.tools]
            for rendered in tools:
                rendered["name"] = names.get(rendered["name"], rendered["name"])
            params["tools"] = tools
            params["tool_choice"] = _tool_choice(request.tool_choice, names)
            if request.parallel_tool_calls is False and request.tool_choice != "none":
                params["tool_choice"]["disable_parallel_tool_use"] = True
        if request.temperature is not None:
            # Recent SDKs dropped sampling parameters from create(); the field
            # still goes in the body for the models that accept it.
            params["extra_body"] = {"temperature": request.temperature}
        return params

    async def _post(self, params: dict[str, Any]) -> bytes:
        raw = await self._client.messages.with_raw_response.create(**params)
        body: bytes = await raw.read()
        return body

    # --- the response -----------------------------------------------------------------

    def _checked(self, body: bytes) -> Mapping[str, Any]:
        server = self.base_url
        data = reply_object(body, server)
        if data.get("type") == "error":
            said = server_message(data.get("error")) or excerpt(body)
            raise ModelResponseError(f"{server} answered 200 with an error: {said}")
        blocks = data.get("content")
        if blocks is None:
            raise ModelResponseError(
                f"{server} answered without 'content' (is base_url an Anthropic Messages "
                f"endpoint?): {excerpt(body)!r}"
            )
        if not isinstance(blocks, Sequence) or isinstance(blocks, str | bytes):
            raise ModelResponseError(
                f"{server} answered with 'content' that is not a list: {excerpt(body)!r}"
            )
        return data

    def _response(self, data: Mapping[str, Any]) -> ModelResponse:
        texts: list[str] = []
        calls: list[ToolCall] = []
        problems: list[str] = []
        for index, block in enumerate(data["content"], start=1):
            if not isinstance(block, Mapping):
                problems.append(f"content block #{index} is not an object")
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if isinstance(text, str):
                    texts.append(text)
            elif kind == "tool_use":
                calls.append(
                    wire_call(
                        block.get("id"),
                        block.get("name"),
                        block.get("input"),
                        fallback_id=f"toolu_{self._responses}_{index}",
                    )
                )
        content = "".join(texts) if texts else None
        return self._reply(
            data,
            content=content,
            tool_calls=calls,
            problems=problems,
            usage=_usage(data.get("usage")),
            finish_reason=data.get("stop_reason"),
        )

    # --- the stream -------------------------------------------------------------------

    async def _events(self, params: dict[str, Any]) -> AsyncGenerator[Any, None]:
        stream = await self._client.messages.create(**params, stream=True)
        try:
            async for event in stream:
                yield event
        except json.JSONDecodeError as exc:
            raise _StreamFault(
                Failure(
                    ModelResponseError,
                    f"{self.base_url} sent a stream event that is not JSON "
                    f"({exc.msg}): {exc.doc[:200]!r}",
                )
            ) from exc
        finally:
            await stream.close()

    def _reader(self, names: Mapping[str, str], on_delta: DeltaSink) -> _EventReader:
        return _EventReader(names, on_delta)

    # --- failures ---------------------------------------------------------------------

    def _status_failure(self, exc: anthropic.APIStatusError) -> Failure:
        server = self.base_url
        if exc.status_code == 200:
            # An ``error`` event in a stream: the SDK raises it with the stream's own status.
            return _event_failure(exc, server)
        if exc.status_code == 529:
            # Anthropic's own status for overload: retried like any 5xx, but with its own advice.
            said = reply_text(exc.body, exc.response.content)
            return Failure(
                ModelServerError,
                f"{server} is overloaded (HTTP 529: {said})",
                "try again later, or raise max_retries",
                retry_after=retry_after_seconds(exc.response.headers),
            )
        return super()._status_failure(exc)


# --- streaming ------------------------------------------------------------------------


def _event_failure(exc: anthropic.APIStatusError, server: str) -> Failure:
    """An ``error`` event in the stream, judged as the same error in a status line would be."""
    body = exc.body if isinstance(exc.body, Mapping) else {}
    error = body.get("error") if isinstance(body.get("error"), Mapping) else {}
    kind = error.get("type") if isinstance(error, Mapping) else None
    said = server_message(error) or str(exc.message)
    message = f"{server} sent an error event ({kind or 'unknown'}: {said})"
    if kind in ("overloaded_error", "api_error"):
        return Failure(ModelServerError, message, "try again later, or raise max_retries")
    if kind == "rate_limit_error":
        return Failure(ModelRateLimitError, message)
    return Failure(ModelResponseError, message)


class _EventReader:
    """Assembles Messages API stream events into the message body they stream."""

    def __init__(self, names: Mapping[str, str], on_delta: DeltaSink) -> None:
        self._on_delta = on_delta
        self._names = names
        self._message: dict[str, Any] = {}
        self._usage: dict[str, Any] = {}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        #: The place of each tool_use block among the reply's calls.
        self._call_index: dict[int, int] = {}
        self._stop: Any = None
        self.events = 0

    def add(self, event: Any) -> None:
        self.events += 1
        kind = getattr(event, "type", None)
        if kind == "message_start":
            message = event.message
            self._message = {"id": message.id, "model": message.model}
            self._absorb_usage(message.usage)
        elif kind == "content_block_start":
            block = event.content_block.model_dump()
            self._blocks[event.index] = block
            if block.get("type") == "text" and block.get("text"):
                self._on_delta(TextDelta(block["text"]))
            elif block.get("type") == "tool_use":
                place = self._call_index[event.index] = len(self._call_index)
                self._json[event.index] = []
                name = block.get("name")
                self._on_delta(CallDelta(place, block.get("id"), self._names.get(name, name)))
        elif kind == "content_block_delta":
            self._delta(event.index, event.delta)
        elif kind == "message_delta":
            self._stop = getattr(event.delta, "stop_reason", None)
            self._absorb_usage(getattr(event, "usage", None))

    def _delta(self, index: int, delta: Any) -> None:
        block = self._blocks.setdefault(index, {"type": "text", "text": ""})
        kind = getattr(delta, "type", None)
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.text
            self._on_delta(TextDelta(delta.text))
        elif kind == "input_json_delta":
            self._json.setdefault(index, []).append(delta.partial_json)
            if index in self._call_index and delta.partial_json:
                self._on_delta(CallDelta(self._call_index[index], arguments=delta.partial_json))

    def _absorb_usage(self, usage: Any) -> None:
        if usage is None:
            return
        raw = usage.model_dump() if hasattr(usage, "model_dump") else dict(usage)
        self._usage.update({k: v for k, v in raw.items() if isinstance(v, int)})

    def where(self) -> str:
        """How far the stream got, for an error message."""
        for index in reversed(self._call_index):
            if self._stop is None:
                size = sum(len(p) for p in self._json.get(index, ()))
                name = self._blocks[index].get("name")
                return how_far(f"{self.events} events", str(name), size)
        return how_far(f"{self.events} events")

    def body(self, model: str) -> dict[str, Any]:
        content = []
        for index, streamed in sorted(self._blocks.items()):
            block = dict(streamed)
            text = "".join(self._json.get(index, ()))
            if block.get("type") == "tool_use" and text.strip():
                try:
                    block["input"] = json.loads(text)
                except json.JSONDecodeError:
                    block["input"] = text  # kept as written; the convention reports it
            content.append(block)
        return {
            "type": "message",
            "role": "assistant",
            "model": self._message.get("model") or model,
            "content": content,
            "stop_reason": self._stop,
            "usage": self._usage,
        }


# --- messages -------------------------------------------------------------------------


def _input(arguments: str) -> dict[str, Any]:
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError:
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_raw": arguments}


def anthropic_messages(
    messages: Sequence[Message], *, vision: bool = False
) -> tuple[str | None, list[dict[str, Any]]]:
    """The conversation as the Messages API takes it: the system text and the messages.

    With `vision`, the images tool results refer to go along as ``image`` blocks.

    See the module docstring for how each kind of message is translated.
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    user_blocks: list[dict[str, Any]] = []
    open_calls: set[str] = set()
    started = False

    def flush_user() -> None:
        if user_blocks:
            out.append({"role": "user", "content": _compact(user_blocks)})
            user_blocks.clear()

    for message in messages:
        if message.role == "system" and not started:
            if message.content:
                system.append(message.content)
            continue
        started = True
        if message.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            for call in message.tool_calls:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": _input(call.arguments),
                    }
                )
            open_calls = {c.id for c in message.tool_calls}
            if not blocks:
                continue
            flush_user()
            out.append({"role": "assistant", "content": _compact(blocks)})
            continue
        content = message.content or ""
        if message.role == "tool" and message.tool_call_id in open_calls:
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
            images = _images(content) if vision else []
            if images:
                block["content"] = [{"type": "text", "text": content}, *images]
            elif content:
                block["content"] = content
            if message.is_error:
                block["is_error"] = True
            user_blocks.append(block)
            continue
        if message.role == "tool":
            label = f"Output of {message.name}" if message.name else "Output"
            content = f"{label}:\n{content}"
        if content:
            user_blocks.append({"type": "text", "text": content})
            if vision and message.role == "tool":
                user_blocks.extend(_images(content))
    flush_user()
    return ("\n\n".join(system) if system else None), out


def _images(text: str) -> list[dict[str, Any]]:
    """``image`` blocks for the images `text` refers to that this process still knows."""
    return [
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": value.mime_type,
                "data": base64.b64encode(value.data).decode("ascii"),
            },
        }
        for value in recall(text)
        if isinstance(value, Image)
    ]


def _compact(blocks: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """One text block is sent as a plain string, the API's shorthand."""
    if len(blocks) == 1 and blocks[0]["type"] == "text":
        text: str = blocks[0]["text"]
        return text
    return list(blocks)


def _tool_choice(choice: str, names: Mapping[str, str]) -> dict[str, Any]:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    return {"type": "tool", "name": names.get(choice, choice)}


# --- reading replies and failures -----------------------------------------------------


def _usage(raw: object) -> Usage | None:
    if not isinstance(raw, Mapping):
        return None
    output = raw.get("output_tokens")
    # Cached prompt tokens are counted apart from input_tokens; all of them
    # were read by the model, so they are all input here.
    parts = [
        raw.get(key)
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    counted = [p for p in parts if isinstance(p, int)]
    if not counted and not isinstance(output, int):
        return None
    return Usage(
        input_tokens=sum(counted),
        output_tokens=output if isinstance(output, int) else 0,
        source="provider",
    )
