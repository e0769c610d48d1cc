"""`OpenAIChat`: any server speaking the OpenAI chat-completions API.

That covers OpenAI itself and the OpenAI-compatible endpoints of vLLM, Ollama,
llama.cpp's server and most hosted gateways.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import openai

try:  # the transport under the SDK: httpx2 in recent releases, httpx before
    import httpx2 as _http
except ImportError:  # pragma: no cover - older SDKs
    import httpx as _http  # type: ignore[no-redef]

from .._exceptions import ModelError, ModelResponseError, UsageError
from .._messages import Usage, openai_messages, parse_openai_message
from ..tools._render import to_openai
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
    server_message,
    status_failure,
    timed_out,
    unreachable,
    with_retries,
)

__all__ = ["OpenAIChat"]


class OpenAIChat(Model):
    """A chat-completions model reached through the official ``openai`` SDK.

    `base_url` points at any OpenAI-compatible server (``http://localhost:11434/v1``
    for Ollama, say). The key comes from `api_key`, else ``OPENAI_API_KEY``;
    with neither, a placeholder is sent when a base URL is set (local servers
    rarely check it) and `ModelAuthError` is raised otherwise.

    `timeout` bounds each attempt. Rate limits (429), server errors (5xx),
    timeouts and connection failures are retried up to `max_retries` times,
    waiting `backoff` seconds and doubling each time, with jitter, or as long
    as the server's ``Retry-After`` asks; no wait exceeds `max_backoff`. Other
    failures are raised at once. `strict_tools` sends tool schemas in OpenAI's
    strict mode; `extra_body` is merged into every request body (for server
    options such as vLLM's ``top_k``). A `client` passed in is used as is,
    apart from its own retries, which are turned off; the caller closes it.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        strict_tools: bool = False,
        extra_body: Mapping[str, Any] | None = None,
        client: openai.AsyncOpenAI | None = None,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
    ) -> None:
        if max_retries < 0:
            raise UsageError(f"max_retries must be 0 or more, not {max_retries}")
        self.model = model
        self.name = f"openai:{model}"
        self.timeout = timeout
        self.max_retries = max_retries
        self.strict_tools = strict_tools
        self.extra_body = dict(extra_body) if extra_body else {}
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._owns_client = client is None
        if client is None:
            client = openai.AsyncOpenAI(
                api_key=resolve_key(
                    api_key,
                    base_url,
                    key_var="OPENAI_API_KEY",
                    base_url_var="OPENAI_BASE_URL",
                    keyless="a local server",
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
    def client(self) -> openai.AsyncOpenAI:
        """The SDK client requests go through (with its own retries off)."""
        return self._client

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    async def respond(self, request: ModelRequest) -> ModelResponse:
        if self._closed:
            raise UsageError(f"{self.name} was closed; create a new model to send requests")
        params, names = self._params(request)
        raw = await with_retries(
            lambda: self._client.chat.completions.with_raw_response.create(**params),
            catch=openai.OpenAIError,
            classify=self._failure,
            policy=RetryPolicy(self.max_retries, self.backoff, self.max_backoff),
        )
        self._responses += 1
        return own_names(self._read(raw.content), names)

    async def respond_stream(self, request: ModelRequest, on_delta: DeltaSink) -> ModelResponse:
        """`respond`, with ``stream=True``: text and call pieces passed on as they arrive.

        Call arguments are assembled from their pieces and usage is read from
        the final chunk (``stream_options.include_usage``). The read timeout
        applies between chunks. A failure before any piece was passed on is
        retried as `respond` retries; after, it raises at once (what was passed
        on cannot be taken back), saying how far the stream got.
        """
        if self._closed:
            raise UsageError(f"{self.name} was closed; create a new model to send requests")
        params, names = self._params(request)
        params["stream"] = True
        params["stream_options"] = {"include_usage": True}
        ours = {wire: name for name, wire in names.items()}
        passed = 0

        def pass_on(delta: Delta) -> None:
            nonlocal passed
            passed += 1
            on_delta(delta)

        async def attempt() -> dict[str, Any]:
            reading = _ChunkReader(ours, pass_on)
            # The wire read as is: the SDK's typed chunk objects cost more per token than
            # everything else here together.
            opened = self._client.chat.completions.with_streaming_response.create(**params)
            async with opened as response:
                try:
                    done = False
                    async for data in _sse_data(response.iter_lines()):
                        # Read on after [DONE] to the body's end, so the connection is reused.
                        done = done or data == "[DONE]"
                        if not done:
                            reading.add(_chunk(data, self.base_url))
                except _http.TimeoutException as exc:
                    failed: openai.OpenAIError = openai.APITimeoutError(
                        request=response.http_request
                    )
                    failed.__cause__ = exc
                except _http.TransportError as exc:
                    failed = openai.APIConnectionError(request=response.http_request)
                    failed.__cause__ = exc
                except _StreamError as exc:
                    failed = exc
                else:
                    return reading.body(self.model)
            if passed:
                raise _StreamCut(self._cut_reason(failed), reading.where()) from failed
            raise failed

        body = await with_retries(
            attempt,
            catch=openai.OpenAIError,
            classify=self._stream_failure,
            policy=RetryPolicy(self.max_retries, self.backoff, self.max_backoff),
        )
        self._responses += 1
        return own_names(self._read(json.dumps(body).encode()), names)

    def _stream_failure(self, exc: openai.OpenAIError) -> Failure:
        if isinstance(exc, _StreamError):
            return Failure(ModelResponseError, str(exc))
        if isinstance(exc, _StreamCut):
            return Failure(
                ModelResponseError,
                f"the stream from {self.base_url} broke {exc.where}: {exc.reason}; "
                "its pieces were already passed on, so it was not retried",
            )
        return self._failure(exc)

    def _cut_reason(self, exc: openai.OpenAIError) -> str:
        if isinstance(exc, _StreamError):
            return str(exc)
        if isinstance(exc, openai.APITimeoutError):
            return f"nothing arrived for {self.timeout:g} s (the timeout)"
        if isinstance(exc, openai.APIConnectionError):
            return f"the connection was lost ({exc.__cause__ or exc})"
        return self._failure(exc).message

    async def aclose(self) -> None:
        """Close the HTTP client, unless it was passed in; the model is unusable after."""
        self._closed = True
        if self._owns_client:
            await self._client.close()

    # --- the request ------------------------------------------------------------------

    def _params(self, request: ModelRequest) -> tuple[dict[str, Any], dict[str, str]]:
        names = wire_names([t.name for t in request.tools])
        messages = openai_messages(request.messages)
        if names:
            for message in messages:
                for call in message.get("tool_calls", ()):
                    function = call["function"]
                    function["name"] = names.get(function["name"], function["name"])
        params: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "timeout": self.timeout,
        }
        if request.tools:
            tools = [to_openai(t, strict=self.strict_tools) for t in request.tools]
            for rendered in tools:
                function = rendered["function"]
                function["name"] = names.get(function["name"], function["name"])
            params["tools"] = tools
            choice = _tool_choice(request)
            if isinstance(choice, dict):
                choice["function"]["name"] = names.get(request.tool_choice, request.tool_choice)
            params["tool_choice"] = choice
            if request.parallel_tool_calls is not None:
                params["parallel_tool_calls"] = request.parallel_tool_calls
        elif request.tool_choice not in ("auto", "none"):
            raise UsageError(
                f"tool_choice={request.tool_choice!r} needs tools, but the request has none"
            )
        if request.max_output_tokens is not None:
            params["max_tokens"] = request.max_output_tokens
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if self.extra_body:
            params["extra_body"] = self.extra_body
        return params, names

    # --- the response -----------------------------------------------------------------

    def _read(self, body: bytes) -> ModelResponse:
        server = self.base_url
        data = reply_object(body, server)
        choices = data.get("choices")
        if choices is None:
            error = server_message(data.get("error"))
            if error is not None:
                raise ModelResponseError(f"{server} answered 200 with an error: {error}")
            raise ModelResponseError(
                f"{server} answered without 'choices' (is base_url a chat-completions "
                f"endpoint?): {excerpt(body)!r}"
            )
        if not isinstance(choices, Sequence) or isinstance(choices, str):
            raise ModelResponseError(
                f"{server} answered with 'choices' that is not a list: {excerpt(body)!r}"
            )
        if not choices:
            raise ModelResponseError(f"{server} answered with no choices: {excerpt(body)!r}")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, Mapping) else None
        if not isinstance(message, Mapping):
            raise ModelResponseError(
                f"{server} answered with a choice that has no message: {excerpt(body)!r}"
            )
        content, calls, problems = parse_openai_message(
            message, call_id_prefix=f"call_{self._responses}"
        )
        finish_reason = choice.get("finish_reason")
        model_name = data.get("model")
        return ModelResponse(
            content=content,
            tool_calls=calls,
            usage=_usage(data.get("usage")),
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
            model_name=model_name if isinstance(model_name, str) and model_name else self.model,
            problems=problems,
            raw=data,
        )

    # --- failures and retries ---------------------------------------------------------

    def _failure(self, exc: openai.OpenAIError) -> Failure:
        server = self.base_url
        if isinstance(exc, openai.APITimeoutError):
            return timed_out(
                server, self.timeout, "slow local models may need a larger timeout=..."
            )
        if isinstance(exc, openai.APIConnectionError):
            return unreachable(server, exc)
        if isinstance(exc, openai.APIStatusError):
            return status_failure(
                server,
                exc.status_code,
                reply_text(exc.body, exc.response.content),
                exc.response.headers,
                key_var="OPENAI_API_KEY",
                not_found_hint="check the model name, and base_url (it usually ends in /v1)",
            )
        return Failure(ModelError, f"the openai client failed: {exc}")


class _StreamCut(openai.OpenAIError):
    """A stream that failed after some of it was passed on: not to be retried."""

    def __init__(self, reason: str, where: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.where = where


class _StreamError(openai.OpenAIError):
    """The stream said something wrong: an error object, or a chunk that is not JSON."""


async def _sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The ``data`` of each server-sent event (its lines joined), as events end."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


def _chunk(data: str, server: str) -> Mapping[str, Any]:
    try:
        chunk = json.loads(data)
    except json.JSONDecodeError as exc:
        raise _StreamError(
            f"{server} sent a stream chunk that is not JSON ({exc.msg}): {data[:200]!r}"
        ) from None
    if not isinstance(chunk, Mapping):
        raise _StreamError(f"{server} sent a stream chunk that is not an object: {data[:200]!r}")
    if chunk.get("error"):
        said = server_message(chunk["error"]) or excerpt(data.encode())
        raise _StreamError(f"{server} sent an error in the stream: {said}")
    return chunk


class _ChunkReader:
    """Assembles chat.completion.chunk objects into the chat.completion body they stream."""

    def __init__(self, names: Mapping[str, str], on_delta: DeltaSink) -> None:
        self._names = names
        self._on_delta = on_delta
        self._text: list[str] | None = None
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: str | None = None
        self._usage: Any = None
        self._model: str | None = None
        self.chunks = 0

    def add(self, chunk: Mapping[str, Any]) -> None:
        self.chunks += 1
        model = chunk.get("model")
        if isinstance(model, str) and model:
            self._model = model
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self._usage = usage
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            return
        for choice in choices:
            if not isinstance(choice, Mapping) or choice.get("index", 0) not in (0, None):
                continue
            finish = choice.get("finish_reason")
            if isinstance(finish, str) and finish:
                self._finish = finish
            delta = choice.get("delta")
            if not isinstance(delta, Mapping):
                continue
            text = delta.get("content")
            if isinstance(text, str):
                if self._text is None:
                    self._text = []
                if text:
                    self._text.append(text)
                    self._on_delta(TextDelta(text))
            pieces = delta.get("tool_calls")
            if isinstance(pieces, list):
                for piece in pieces:
                    if isinstance(piece, Mapping):
                        self._add_call(piece)

    def _add_call(self, piece: Mapping[str, Any]) -> None:
        index = piece.get("index")
        if not isinstance(index, int):
            index = len(self._calls)
        function = piece.get("function")
        function = function if isinstance(function, Mapping) else {}
        name = function.get("name")
        arguments = function.get("arguments")
        arguments = arguments if isinstance(arguments, str) else ""
        call_id = piece.get("id")
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = {"id": None, "name": "", "arguments": [], "told": False}
        if isinstance(call_id, str) and call_id:
            call["id"] = call_id
        if isinstance(name, str) and name:
            call["name"] += name
        if arguments:
            call["arguments"].append(arguments)
        if not call["told"] and call["name"]:
            call["told"] = True
            told = "".join(call["arguments"])
            name = self._names.get(call["name"], call["name"])
            self._on_delta(CallDelta(index, call["id"], name, told))
        elif call["told"] and arguments:
            self._on_delta(CallDelta(index, arguments=arguments))

    def where(self) -> str:
        """How far the stream got, for an error message."""
        open_calls = [c for c in self._calls.values() if c["name"]]
        if open_calls and self._finish is None:
            last = open_calls[-1]
            name = self._names.get(last["name"], last["name"])
            size = sum(len(a) for a in last["arguments"])
            return (
                f"after {self.chunks} chunks, in the arguments of a call to {name} "
                f"({size} characters received)"
            )
        return f"after {self.chunks} chunks"

    def body(self, model: str) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None if self._text is None else "".join(self._text),
        }
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": "".join(call["arguments"])},
                }
                for _, call in sorted(self._calls.items())
            ]
        body: dict[str, Any] = {
            "object": "chat.completion",
            "model": self._model or model,
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish}],
        }
        if self._usage is not None:
            body["usage"] = self._usage
        return body


def _tool_choice(request: ModelRequest) -> str | dict[str, Any]:
    choice = request.tool_choice
    if choice in ("auto", "none", "required"):
        return choice
    names = [t.name for t in request.tools]
    if choice not in names:
        raise UsageError(f"tool_choice={choice!r} is not one of the request's tools: {names}")
    return {"type": "function", "function": {"name": choice}}


def _usage(raw: object) -> Usage | None:
    if not isinstance(raw, Mapping):
        return None
    prompt = raw.get("prompt_tokens")
    completion = raw.get("completion_tokens")
    if not isinstance(prompt, int) and not isinstance(completion, int):
        return None
    return Usage(
        input_tokens=prompt if isinstance(prompt, int) else 0,
        output_tokens=completion if isinstance(completion, int) else 0,
        source="provider",
    )
