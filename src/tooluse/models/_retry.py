"""How the HTTP backends fail, wait, try again and report what the server said.

A backend turns each exception of its SDK into a `Failure` (what went wrong,
which `ModelError` to raise, what to advise) and hands `with_retries` one
coroutine per attempt. Whether to retry is the error class's ``retryable``;
how long to wait is the `RetryPolicy`, or the server's ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from .._exceptions import (
    ModelAuthError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelError,
    ModelRateLimitError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
)

__all__ = [
    "Failure",
    "RetryPolicy",
    "excerpt",
    "reply_object",
    "reply_text",
    "resolve_key",
    "retry_after_seconds",
    "server_message",
    "status_failure",
    "timed_out",
    "unreachable",
    "with_retries",
]

# Local servers and gateways usually ignore the key, but the SDKs insist on having one.
_PLACEHOLDER_KEY = "no-key-needed"
_EXCERPT = 200
_JITTER = 0.25

T = TypeVar("T")
E = TypeVar("E", bound=Exception)


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed attempt: the error to raise if it is the last, and how long to wait if not."""

    kind: type[ModelError]
    message: str
    hint: str = ""
    retry_after: float | None = None

    def error(self, attempts: int) -> ModelError:
        """The error to raise after `attempts` attempts."""
        message = self.message
        if self.kind.retryable:
            message += f" (gave up after {_attempts(attempts)})"
        if self.hint:
            message += f"; {self.hint}"
        return self.kind(message)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Up to `max_retries` retries, waiting `backoff` seconds and doubling each time.

    No wait exceeds `max_backoff`, not even one the server asks for.
    """

    max_retries: int
    backoff: float
    max_backoff: float

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number `attempt` (counting from 1)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_backoff)
        delay = min(self.backoff * 2.0 ** (attempt - 1), self.max_backoff)
        # Jitter keeps many clients that failed together from retrying together.
        return delay * (1 - _JITTER * random.random())


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    catch: type[E] | tuple[type[E], ...],
    classify: Callable[[E], Failure],
    policy: RetryPolicy,
) -> T:
    """Await ``attempt()`` until it succeeds, retrying the `catch` exceptions `policy` allows.

    `catch` is an exception class or a tuple of them, as ``except`` takes.

    Each caught exception is turned into a `Failure` by `classify`; one that is
    not retryable, or the last one allowed, is raised as its `ModelError`,
    chained to the exception. Other exceptions propagate untouched.
    """
    count = 0
    while True:
        count += 1
        try:
            return await attempt()
        except catch as exc:
            failure = classify(exc)
            if not failure.kind.retryable or count > policy.max_retries:
                raise failure.error(count) from exc
            delay = policy.delay(count, failure.retry_after)
        await asyncio.sleep(delay)


# --- failures every backend reports alike ---------------------------------------------


def timed_out(server: str, timeout: float, hint: str) -> Failure:
    """The attempt ran past the backend's `timeout`."""
    return Failure(ModelTimeoutError, f"{server} did not answer within {timeout:g} s", hint)


def unreachable(server: str, exc: BaseException) -> Failure:
    """No connection could be made; the SDK keeps the reason as `exc`'s cause."""
    cause = f": {exc.__cause__}" if exc.__cause__ else ""
    return Failure(
        ModelConnectionError,
        f"could not reach {server}{cause}",
        "is the server running at that address?",
    )


def status_failure(
    server: str,
    status: int,
    said: str,
    headers: Mapping[str, str],
    *,
    key_var: str,
    not_found_hint: str,
) -> Failure:
    """An HTTP error status as a `Failure`; `said` is the reply's `reply_text`.

    `key_var` names the environment variable a refused key may have come from;
    `not_found_hint` is the advice for a 404.
    """
    if status in (401, 403):
        return Failure(
            ModelAuthError,
            f"{server} refused the key (HTTP {status}: {said})",
            f"check api_key=... or {key_var}",
        )
    if status == 429:
        return Failure(
            ModelRateLimitError,
            f"{server} answered 429 Too Many Requests: {said}",
            "wait, lower the request rate, or raise max_retries",
            retry_after=retry_after_seconds(headers),
        )
    if status == 408:
        return Failure(ModelTimeoutError, f"{server} answered 408 Request Timeout: {said}")
    if status >= 500:
        return Failure(
            ModelServerError,
            f"{server} failed with HTTP {status}: {said}",
            retry_after=retry_after_seconds(headers),
        )
    hint = not_found_hint if status == 404 else ""
    return Failure(
        ModelBadRequestError, f"{server} rejected the request with HTTP {status}: {said}", hint
    )


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """How long the server asks the client to wait, if it says; negative once past."""
    # OpenAI's retry-after-ms, where a server sends it, is more precise than Retry-After.
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
    # An HTTP date is rare here (the header is nearly always seconds): its parser, and
    # the email package under it, are loaded only for one.
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


# --- what a reply says ----------------------------------------------------------------


def reply_object(body: bytes, server: str) -> Mapping[str, Any]:
    """A successful reply's body as a JSON object, or `ModelResponseError` saying why not."""
    if not body.strip():
        raise ModelResponseError(f"{server} answered 200 with an empty body")
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ModelResponseError(
            f"{server} answered with a body that is not JSON: {excerpt(body)!r}"
        ) from None
    if not isinstance(data, Mapping):
        raise ModelResponseError(
            f"{server} answered with JSON that is not an object: {excerpt(body)!r}"
        )
    return data


def server_message(error: object) -> str | None:
    """The human part of an error body, whichever server shaped it.

    OpenAI and Anthropic nest it as ``{"error": {"message": ...}}``; other
    servers use ``error`` or ``detail``, as a string or nested again.
    """
    if isinstance(error, str):
        return error or None
    if isinstance(error, Mapping):
        for key in ("message", "error", "detail"):
            found = server_message(error.get(key))
            if found:
                return found
    return None


def reply_text(body: object, content: bytes) -> str:
    """What a failed reply says, for an error message: its `server_message`, else its start."""
    said = _shorten(server_message(body) or "") or excerpt(content)
    return said or "no message"


def excerpt(body: bytes) -> str:
    """The start of a reply body on one line, short enough for an error message."""
    return _shorten(body.decode("utf-8", errors="replace"))


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…"


def _attempts(count: int) -> str:
    return "1 attempt" if count == 1 else f"{count} attempts"


# --- the key --------------------------------------------------------------------------


def resolve_key(
    api_key: str | None,
    base_url: str | None,
    *,
    key_var: str,
    base_url_var: str,
    keyless: str,
) -> str:
    """`api_key`, else the `key_var` environment variable, else a placeholder if a base URL is set.

    With none of them, `ModelAuthError` says how to provide a key; `keyless`
    names the kind of server that needs none (``"a local server"``).
    """
    key = api_key or os.environ.get(key_var)
    if key:
        return key
    if base_url or os.environ.get(base_url_var):
        return _PLACEHOLDER_KEY
    raise ModelAuthError(
        f"No API key found — pass api_key=... or set {key_var} "
        f"(for {keyless}, pass its base_url=... instead)"
    )
