"""`OpenAIChat`: any server speaking the OpenAI chat-completions API.

That covers OpenAI itself and the OpenAI-compatible endpoints of vLLM, Ollama,
llama.cpp's server and most hosted gateways.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import openai

from .._exceptions import (
    ModelAuthError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelError,
    ModelRateLimitError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
    UsageError,
)
from .._messages import Usage, openai_messages, parse_openai_message
from ..tools._render import to_openai
from ._base import Model, ModelRequest, ModelResponse

__all__ = ["OpenAIChat"]

# Local servers usually ignore the key, but the SDK insists on having one.
_PLACEHOLDER_KEY = "no-key-needed"
_EXCERPT = 200
_JITTER = 0.25


@dataclass(frozen=True, slots=True)
class _Failure:
    kind: type[ModelError]
    message: str
    hint: str = ""
    retry_after: float | None = None

    def error(self, attempts: int) -> ModelError:
        message = self.message
        if self.kind.retryable:
            message += f" (gave up after {_attempts(attempts)})"
        if self.hint:
            message += f"; {self.hint}"
        return self.kind(message)


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
                api_key=_resolve_key(api_key, base_url),
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
        params = self._params(request)
        attempt = 0
        while True:
            attempt += 1
            try:
                raw = await self._client.chat.completions.with_raw_response.create(**params)
            except openai.OpenAIError as exc:
                failure = self._failure(exc)
                if not failure.kind.retryable or attempt > self.max_retries:
                    raise failure.error(attempt) from exc
                delay = self._delay(attempt, failure.retry_after)
            else:
                self._responses += 1
                return self._read(raw.content)
            await asyncio.sleep(delay)

    async def aclose(self) -> None:
        """Close the HTTP client, unless it was passed in; the model is unusable after."""
        self._closed = True
        if self._owns_client:
            await self._client.close()

    # --- the request ------------------------------------------------------------------

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": openai_messages(request.messages),
            "timeout": self.timeout,
        }
        if request.tools:
            params["tools"] = [to_openai(t, strict=self.strict_tools) for t in request.tools]
            params["tool_choice"] = _tool_choice(request)
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
        return params

    # --- the response -----------------------------------------------------------------

    def _read(self, body: bytes) -> ModelResponse:
        server = self.base_url
        if not body.strip():
            raise ModelResponseError(f"{server} answered 200 with an empty body")
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ModelResponseError(
                f"{server} answered with a body that is not JSON: {_excerpt(body)!r}"
            ) from None
        if not isinstance(data, Mapping):
            raise ModelResponseError(
                f"{server} answered with JSON that is not an object: {_excerpt(body)!r}"
            )
        choices = data.get("choices")
        if choices is None:
            error = _error_message(data.get("error"))
            if error is not None:
                raise ModelResponseError(f"{server} answered 200 with an error: {error}")
            raise ModelResponseError(
                f"{server} answered without 'choices' (is base_url a chat-completions "
                f"endpoint?): {_excerpt(body)!r}"
            )
        if not isinstance(choices, Sequence) or isinstance(choices, str):
            raise ModelResponseError(
                f"{server} answered with 'choices' that is not a list: {_excerpt(body)!r}"
            )
        if not choices:
            raise ModelResponseError(f"{server} answered with no choices: {_excerpt(body)!r}")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, Mapping) else None
        if not isinstance(message, Mapping):
            raise ModelResponseError(
                f"{server} answered with a choice that has no message: {_excerpt(body)!r}"
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

    def _failure(self, exc: openai.OpenAIError) -> _Failure:
        server = self.base_url
        if isinstance(exc, openai.APITimeoutError):
            return _Failure(
                ModelTimeoutError,
                f"{server} did not answer within {self.timeout:g} s",
                "slow local models may need a larger timeout=...",
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = f": {exc.__cause__}" if exc.__cause__ else ""
            return _Failure(
                ModelConnectionError,
                f"could not reach {server}{cause}",
                "is the server running at that address?",
            )
        if isinstance(exc, openai.APIStatusError):
            return _status_failure(exc, server)
        return _Failure(ModelError, f"the openai client failed: {exc}")

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_backoff)
        delay = min(self.backoff * 2.0 ** (attempt - 1), self.max_backoff)
        # Jitter keeps many clients that failed together from retrying together.
        return delay * (1 - _JITTER * random.random())


def _resolve_key(api_key: str | None, base_url: str | None) -> str:
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if key:
        return key
    if base_url or os.environ.get("OPENAI_BASE_URL"):
        return _PLACEHOLDER_KEY
    raise ModelAuthError(
        "No API key found — pass api_key=... or set OPENAI_API_KEY "
        "(for a local server, pass its base_url=... instead)"
    )


def _tool_choice(request: ModelRequest) -> str | dict[str, Any]:
    choice = request.tool_choice
    if choice in ("auto", "none", "required"):
        return choice
    names = [t.name for t in request.tools]
    if choice not in names:
        raise UsageError(f"tool_choice={choice!r} is not one of the request's tools: {names}")
    return {"type": "function", "function": {"name": choice}}


def _status_failure(exc: openai.APIStatusError, server: str) -> _Failure:
    status = exc.status_code
    said = _shorten(_error_message(exc.body) or "") or _excerpt(exc.response.content)
    said = said or "no message"
    if status in (401, 403):
        return _Failure(
            ModelAuthError,
            f"{server} refused the key (HTTP {status}: {said})",
            "check api_key=... or OPENAI_API_KEY",
        )
    if status == 429:
        return _Failure(
            ModelRateLimitError,
            f"{server} answered 429 Too Many Requests: {said}",
            "wait, lower the request rate, or raise max_retries",
            retry_after=_retry_after(exc),
        )
    if status == 408:
        return _Failure(ModelTimeoutError, f"{server} answered 408 Request Timeout: {said}")
    if status >= 500:
        return _Failure(
            ModelServerError,
            f"{server} failed with HTTP {status}: {said}",
            retry_after=_retry_after(exc),
        )
    hint = "check the model name, and base_url (it usually ends in /v1)" if status == 404 else ""
    return _Failure(
        ModelBadRequestError, f"{server} rejected the request with HTTP {status}: {said}", hint
    )


def _retry_after(exc: openai.APIStatusError) -> float | None:
    headers = exc.response.headers
    # OpenAI sends milliseconds in a header of its own; prefer its precision.
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


def _error_message(error: object) -> str | None:
    """The human part of an error body, whichever server shaped it."""
    if isinstance(error, str):
        return error or None
    if isinstance(error, Mapping):
        for key in ("message", "error", "detail"):
            found = _error_message(error.get(key))
            if found:
                return found
    return None


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


def _excerpt(body: bytes) -> str:
    return _shorten(body.decode("utf-8", errors="replace"))


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…"


def _attempts(count: int) -> str:
    return "1 attempt" if count == 1 else f"{count} attempts"
