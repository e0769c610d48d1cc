"""`OpenAIChat`: any server speaking the OpenAI chat-completions API.

That covers OpenAI itself and the OpenAI-compatible endpoints of vLLM, Ollama,
llama.cpp's server and most hosted gateways.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._exceptions import ModelResponseError
from .._messages import Usage, openai_messages, parse_openai_message
from ..media import Image, recall, render
from ..tools._render import to_openai
from ._base import CallDelta, DeltaSink, ModelRequest, ModelResponse, TextDelta
from ._retry import Failure, excerpt, reply_object, server_message
from ._vendor import VendorModel, _StreamFault, how_far

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIChat"]


class OpenAIChat(VendorModel["openai.AsyncOpenAI"]):
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

    `respond_stream` sends ``stream=True`` and passes text and call pieces on
    as they arrive; call arguments are assembled from their pieces and usage
    is read from the final chunk (``stream_options.include_usage``).

    `vision` says the model can see: an image a tool returned (shown in the tool
    message as its description and ``media:`` reference) is then sent as image
    content as well, in a user message after the tool messages, since a tool message
    cannot carry an image. A model without it reads the description alone.
    """

    _vendor = "openai"
    _key_var = "OPENAI_API_KEY"
    _base_url_var = "OPENAI_BASE_URL"
    _keyless = "a local server"
    _timeout_hint = "slow local models may need a larger timeout=..."
    _not_found_hint = "check the model name, and base_url (it usually ends in /v1)"

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
        vision: bool = False,
    ) -> None:
        import openai

        self._sdk_error = openai.OpenAIError
        self._sdk_timeout = openai.APITimeoutError
        self._sdk_unreachable = openai.APIConnectionError
        self._sdk_status = openai.APIStatusError
        super().__init__(
            model,
            connect=openai.AsyncOpenAI,
            client=client,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_backoff=max_backoff,
            vision=vision,
        )
        self.strict_tools = strict_tools
        self.extra_body = dict(extra_body) if extra_body else {}

    # --- the request ------------------------------------------------------------------

    def _params(
        self, request: ModelRequest, names: Mapping[str, str], *, images: bool = True
    ) -> dict[str, Any]:
        messages = openai_messages(request.messages)
        if self.vision and images:
            messages = with_images(messages)
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
            choice = request.tool_choice
            if choice in ("auto", "none", "required"):
                params["tool_choice"] = choice
            else:
                name = names.get(choice, choice)
                params["tool_choice"] = {"type": "function", "function": {"name": name}}
            if request.parallel_tool_calls is not None:
                params["parallel_tool_calls"] = request.parallel_tool_calls
        if request.max_output_tokens is not None:
            params["max_tokens"] = request.max_output_tokens
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if self.extra_body:
            params["extra_body"] = self.extra_body
        return params

    async def _post(self, params: dict[str, Any]) -> bytes:
        raw = await self._client.chat.completions.with_raw_response.create(**params)
        body: bytes = raw.content
        return body

    # --- the response -----------------------------------------------------------------

    def _checked(self, body: bytes) -> Mapping[str, Any]:
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
        return data

    def _response(self, data: Mapping[str, Any]) -> ModelResponse:
        choice = data["choices"][0]
        content, calls, problems = parse_openai_message(
            choice["message"], call_id_prefix=f"call_{self._responses}"
        )
        return self._reply(
            data,
            content=content,
            tool_calls=calls,
            problems=problems,
            usage=_usage(data.get("usage")),
            finish_reason=choice.get("finish_reason"),
        )

    # --- the stream -------------------------------------------------------------------

    async def _events(self, params: dict[str, Any]) -> AsyncGenerator[Mapping[str, Any], None]:
        # The wire read as is: the SDK's typed chunk objects cost more per token than
        # everything else here together.
        opened = self._client.chat.completions.with_streaming_response.create(
            **params, stream=True, stream_options={"include_usage": True}
        )
        async with opened as response:
            done = False
            async for data in _sse_data(response.iter_lines()):
                # Read on after [DONE] to the body's end, so the connection is reused.
                done = done or data == "[DONE]"
                if not done:
                    yield _chunk(data, self.base_url)

    def _reader(self, names: Mapping[str, str], on_delta: DeltaSink) -> _ChunkReader:
        return _ChunkReader(names, on_delta)


def with_images(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The wire messages with the images that tool results refer to, as image content.

    After each run of tool messages (and outputs sent as user text) whose text holds
    ``media:`` references this process still knows, one user message carries each
    image as an ``image_url`` part with a ``data:`` URL, its reference written before
    it so that the model can tell which is which.
    """
    out: list[dict[str, Any]] = []
    pending: list[Image] = []

    def flush() -> None:
        if pending:
            parts: list[dict[str, Any]] = [
                {"type": "text", "text": "The images the tool results above refer to:"}
            ]
            for image in pending:
                parts.append({"type": "text", "text": render(image)})
                parts.append({"type": "image_url", "image_url": {"url": _data_url(image)}})
            out.append({"role": "user", "content": parts})
            pending.clear()

    for message in messages:
        content = message.get("content")
        is_result = message["role"] == "tool" or (
            message["role"] == "user" and isinstance(content, str) and content.startswith("Output")
        )
        if not is_result:
            flush()
        out.append(message)
        if is_result and isinstance(content, str):
            for value in recall(content):
                if isinstance(value, Image) and value not in pending:
                    pending.append(value)
    flush()
    return out


def _data_url(image: Image) -> str:
    return f"data:{image.mime_type};base64,{base64.b64encode(image.data).decode('ascii')}"


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
        raise _fault(
            f"{server} sent a stream chunk that is not JSON ({exc.msg}): {data[:200]!r}"
        ) from None
    if not isinstance(chunk, Mapping):
        raise _fault(f"{server} sent a stream chunk that is not an object: {data[:200]!r}")
    if chunk.get("error"):
        said = server_message(chunk["error"]) or excerpt(data.encode())
        raise _fault(f"{server} sent an error in the stream: {said}")
    return chunk


def _fault(message: str) -> _StreamFault:
    """A chunk that says the reply is unusable: not retried, even before any piece."""
    return _StreamFault(Failure(ModelResponseError, message))


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
            return how_far(f"{self.chunks} chunks", name, size)
        return how_far(f"{self.chunks} chunks")

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
