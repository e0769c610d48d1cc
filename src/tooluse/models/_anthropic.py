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
  neither text nor calls is left out for the same reason.

Replies are read back: text blocks joined as the content, ``tool_use`` blocks
as calls, ``stop_reason`` as the finish reason (verbatim: ``end_turn``,
``tool_use``, ``max_tokens`` …). Other blocks (thinking, server tools) are
kept only in ``raw``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import anthropic

try:  # the transport under the SDK: httpx2 in recent releases, httpx before
    import httpx2 as _http
except ImportError:  # pragma: no cover - older SDKs
    import httpx as _http  # type: ignore[no-redef]

from .._exceptions import (
    ModelError,
    ModelRateLimitError,
    ModelResponseError,
    ModelServerError,
    UsageError,
)
from .._messages import Message, ToolCall, Usage
from ..tools._render import to_anthropic
from ._base import (
    CallDelta,
    Delta,
    DeltaSink,
    Model,
    ModelRequest,
    ModelResponse,
    TextDelta,
    own_names,
    wire_names,
)
from ._retry import (
    Failure,
    RetryPolicy,
    excerpt,
    reply_object,
    reply_text,
    resolve_key,
    retry_after_seconds,
    server_message,
    status_failure,
    timed_out,
    unreachable,
    with_retries,
)

__all__ = ["AnthropicChat", "anthropic_messages"]


class AnthropicChat(Model):
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
    """

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
    ) -> None:
        if max_retries < 0:
            raise UsageError(f"max_retries must be 0 or more, not {max_retries}")
        if max_tokens < 1:
            raise UsageError(f"max_tokens must be at least 1, not {max_tokens}")
        self.model = model
        self.name = f"anthropic:{model}"
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._owns_client = client is None
        if client is None:
            client = anthropic.AsyncAnthropic(
                api_key=resolve_key(
                    api_key,
                    base_url,
                    key_var="ANTHROPIC_API_KEY",
                    base_url_var="ANTHROPIC_BASE_URL",
                    keyless="a gateway that needs none",
                ),
                base_url=base_url,
                timeout=timeout,
                max_retries=0,
            )
        else:
            # Retries are ours, so that they are counted and reported the same
            # way whoever built the client.
            client = client.with_options(max_retries=0)
        self._client = client
        self._responses = 0
        self._closed = False

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        """The SDK client requests go through (with its own retries off)."""
        return self._client

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    async def respond(self, request: ModelRequest) -> ModelResponse:
        if self._closed:
            raise UsageError(f"{self.name} was closed; create a new model to send requests")
        params, names = self._params(request)

        async def attempt() -> bytes:
            raw = await self._client.messages.with_raw_response.create(**params)
            body: bytes = await raw.read()
            return body

        body = await with_retries(
            attempt,
            catch=anthropic.AnthropicError,
            classify=self._failure,
            policy=RetryPolicy(self.max_retries, self.backoff, self.max_backoff),
        )
        self._responses += 1
        return own_names(self._read(body), names)

    async def respond_stream(self, request: ModelRequest, on_delta: DeltaSink) -> ModelResponse:
        """`respond`, streamed: text and ``input_json_delta`` pieces passed on as they arrive.

        The read timeout applies between events. An ``error`` event, a broken
        connection or a stall before any piece was passed on is retried as
        `respond` retries; after, it raises at once (what was passed on cannot
        be taken back), saying how far the stream got.
        """
        if self._closed:
            raise UsageError(f"{self.name} was closed; create a new model to send requests")
        params, names = self._params(request)
        params["stream"] = True
        ours = {wire: name for name, wire in names.items()}
        passed = 0

        def pass_on(delta: Delta) -> None:
            nonlocal passed
            passed += 1
            on_delta(delta)

        def give_up(failure: Failure, reading: _EventReader) -> _Classified:
            if not passed:
                return _Classified(failure)
            return _Classified(
                Failure(
                    ModelResponseError,
                    f"the stream from {self.base_url} broke {reading.where()}: "
                    f"{failure.message}; its pieces were already passed on, so it was "
                    "not retried",
                )
            )

        async def attempt() -> dict[str, Any]:
            reading = _EventReader(pass_on, ours)
            stream = await self._client.messages.create(**params)
            try:
                async for event in stream:
                    reading.add(event)
            except anthropic.APIStatusError as exc:
                # An ``error`` event: the SDK raises it with the stream's own status (200).
                failure = (
                    _event_failure(exc, self.base_url)
                    if exc.status_code == 200
                    else self._failure(exc)
                )
                raise give_up(failure, reading) from exc
            except _http.TimeoutException as exc:
                failure = timed_out(
                    self.base_url, self.timeout, "long replies may need a larger timeout=..."
                )
                if passed:
                    failure = Failure(failure.kind, f"nothing arrived for {self.timeout:g} s")
                raise give_up(failure, reading) from exc
            except _http.TransportError as exc:
                failure = unreachable(self.base_url, exc)
                if passed:
                    failure = Failure(failure.kind, f"the connection was lost ({exc})")
                else:
                    failure = Failure(failure.kind, f"{self.base_url} broke the stream: {exc}")
                raise give_up(failure, reading) from exc
            except json.JSONDecodeError as exc:
                raise ModelResponseError(
                    f"{self.base_url} sent a stream event that is not JSON "
                    f"({exc.msg}): {exc.doc[:200]!r}"
                ) from exc
            finally:
                await stream.close()
            return reading.body(self.model)

        data = await with_retries(
            attempt,
            catch=anthropic.AnthropicError,
            classify=self._stream_failure,
            policy=RetryPolicy(self.max_retries, self.backoff, self.max_backoff),
        )
        self._responses += 1
        return own_names(self._read(json.dumps(data).encode()), names)

    def _stream_failure(self, exc: anthropic.AnthropicError) -> Failure:
        return exc.failure if isinstance(exc, _Classified) else self._failure(exc)

    async def aclose(self) -> None:
        """Close the HTTP client, unless it was passed in; the model is unusable after."""
        self._closed = True
        if self._owns_client:
            await self._client.close()

    # --- the request ------------------------------------------------------------------

    def _params(self, request: ModelRequest) -> tuple[dict[str, Any], dict[str, str]]:
        names = wire_names([t.name for t in request.tools])
        system, messages = anthropic_messages(request.messages)
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
            params["tool_choice"] = _tool_choice(request)
            if "name" in params["tool_choice"]:
                choice = params["tool_choice"]["name"]
                params["tool_choice"]["name"] = names.get(choice, choice)
            if request.parallel_tool_calls is False and request.tool_choice != "none":
                params["tool_choice"]["disable_parallel_tool_use"] = True
        elif request.tool_choice not in ("auto", "none"):
            raise UsageError(
                f"tool_choice={request.tool_choice!r} needs tools, but the request has none"
            )
        if request.temperature is not None:
            # Recent SDKs dropped sampling parameters from create(); the field
            # still goes in the body for the models that accept it.
            params["extra_body"] = {"temperature": request.temperature}
        return params, names

    # --- the response -----------------------------------------------------------------

    def _read(self, body: bytes) -> ModelResponse:
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
        texts: list[str] = []
        calls: list[ToolCall] = []
        problems: list[str] = []
        for index, block in enumerate(blocks, start=1):
            if not isinstance(block, Mapping):
                problems.append(f"content block #{index} is not an object")
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if isinstance(text, str):
                    texts.append(text)
            elif kind == "tool_use":
                call_id = block.get("id")
                if not isinstance(call_id, str) or not call_id:
                    # Every tool message must answer some id.
                    call_id = f"toolu_{self._responses}_{index}"
                name = block.get("name")
                calls.append(
                    ToolCall(
                        id=call_id,
                        name=name if isinstance(name, str) else "",
                        arguments=_arguments_text(block.get("input")),
                    )
                )
        stop_reason = data.get("stop_reason")
        model_name = data.get("model")
        return ModelResponse(
            content="".join(texts) if texts else None,
            tool_calls=calls,
            usage=_usage(data.get("usage")),
            finish_reason=stop_reason if isinstance(stop_reason, str) else None,
            model_name=model_name if isinstance(model_name, str) and model_name else self.model,
            problems=problems,
            raw=data,
        )

    # --- failures and retries ---------------------------------------------------------

    def _failure(self, exc: anthropic.AnthropicError) -> Failure:
        server = self.base_url
        if isinstance(exc, anthropic.APITimeoutError):
            return timed_out(server, self.timeout, "long replies may need a larger timeout=...")
        if isinstance(exc, anthropic.APIConnectionError):
            return unreachable(server, exc)
        if isinstance(exc, anthropic.APIStatusError):
            return _status_failure(exc, server)
        return Failure(ModelError, f"the anthropic client failed: {exc}")


# --- streaming ------------------------------------------------------------------------


class _Classified(anthropic.AnthropicError):
    """A failure of a stream, already judged (retry or not, what to say)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


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

    def __init__(self, on_delta: DeltaSink, names: Mapping[str, str]) -> None:
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
                return (
                    f"after {self.events} events, in the arguments of a call to {name} "
                    f"({size} characters received)"
                )
        return f"after {self.events} events"

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


def anthropic_messages(messages: Sequence[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """The conversation as the Messages API takes it: the system text and the messages.

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
            if content:
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
    flush_user()
    return ("\n\n".join(system) if system else None), out


def _compact(blocks: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """One text block is sent as a plain string, the API's shorthand."""
    if len(blocks) == 1 and blocks[0]["type"] == "text":
        text: str = blocks[0]["text"]
        return text
    return list(blocks)


def _tool_choice(request: ModelRequest) -> dict[str, Any]:
    choice = request.tool_choice
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    names = [t.name for t in request.tools]
    if choice not in names:
        raise UsageError(f"tool_choice={choice!r} is not one of the request's tools: {names}")
    return {"type": "tool", "name": choice}


# --- reading replies and failures -----------------------------------------------------


def _arguments_text(raw: object) -> str:
    if isinstance(raw, str):
        return raw
    if raw is None:
        return ""
    return json.dumps(raw, ensure_ascii=False)


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


def _status_failure(exc: anthropic.APIStatusError, server: str) -> Failure:
    said = reply_text(exc.body, exc.response.content)
    # Anthropic's own status for overload: retried like any 5xx, but with its own advice.
    if exc.status_code == 529:
        return Failure(
            ModelServerError,
            f"{server} is overloaded (HTTP 529: {said})",
            "try again later, or raise max_retries",
            retry_after=retry_after_seconds(exc.response.headers),
        )
    return status_failure(
        server,
        exc.status_code,
        said,
        exc.response.headers,
        key_var="ANTHROPIC_API_KEY",
        not_found_hint="check the model name and base_url",
    )
