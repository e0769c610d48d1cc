"""`VendorModel`: what the backends over a vendor's HTTP SDK share.

Each backend (`OpenAIChat`, `AnthropicChat`) says only what its wire format
is: the request body (`_params`), how one is sent (`_post`) and its reply
checked and read (`_checked`, `_response`), how a stream is opened and its
events assembled (`_events`, `_reader`), and which of its SDK's exceptions
means what (`_sdk_timeout`, `_sdk_unreachable`, `_sdk_status`; and
`_status_failure` for a status its API gives a meaning of its own). The rest
is here, once: the key and the client, the closed state, what a failure
amounts to, retries, and the rule for a stream that breaks. Before any piece
was passed on, a break is judged as a failed request is, and retried if that
is retryable; after, it is raised at once as `ModelResponseError`, saying how
far the stream got, since what was passed on cannot be taken back.
"""

from __future__ import annotations

import warnings
from abc import abstractmethod
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

try:  # the transport under the SDKs: httpx2 in recent releases, httpx before
    import httpx2 as _http
except ImportError:  # pragma: no cover - older SDKs
    import httpx as _http  # type: ignore[no-redef]

from .._exceptions import (
    ModelBadRequestError,
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    UsageError,
)
from .._messages import ToolCall, Usage
from ._base import Delta, DeltaSink, Model, ModelRequest, ModelResponse, own_names, wire_names
from ._retry import (
    Failure,
    RetryPolicy,
    reply_text,
    resolve_key,
    status_failure,
    timed_out,
    unreachable,
    with_retries,
)

__all__ = ["StreamReader", "VendorModel", "_StreamFault", "how_far"]


class Client(Protocol):
    """What the base uses of an SDK client: ``openai.AsyncOpenAI``, ``anthropic.AsyncAnthropic``."""

    @property
    def base_url(self) -> object: ...

    def with_options(self, *, max_retries: int) -> Self: ...

    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=Client)


class StreamReader(Protocol):
    """Assembles one stream's events into the reply body they stream, passing pieces on."""

    def add(self, event: Any) -> None: ...

    def where(self) -> str:
        """How far the stream got, for an error message."""
        ...

    def body(self, model: str) -> Mapping[str, Any]:
        """The reply body, as the unstreamed request would have answered it."""
        ...


def how_far(received: str, call: str | None = None, size: int = 0) -> str:
    """`StreamReader.where`'s words: after what was `received` (``12 chunks``), and in the
    arguments of a call to `call` (`size` characters of them) if some were arriving."""
    if call is None:
        return f"after {received}"
    return f"after {received}, in the arguments of a call to {call} ({size} characters received)"


class _StreamFault(Exception):
    """A stream that went wrong in a way its backend has judged.

    `failure` is what it amounts to while nothing was passed on yet; `reason`
    says what happened in a few words, for the error raised when something was.
    """

    def __init__(self, failure: Failure, reason: str | None = None) -> None:
        super().__init__(failure.message)
        self.failure = failure
        self.reason = failure.message if reason is None else reason


class VendorModel(Model, Generic[ClientT]):
    """A model reached over HTTP through its vendor's SDK, with the SDK's own retries off."""

    #: The prefix of `name`: ``openai`` for ``openai:gpt-4o-mini``.
    _vendor: ClassVar[str]
    #: The environment variables the key and the base URL may come from.
    _key_var: ClassVar[str]
    _base_url_var: ClassVar[str]
    #: The kind of server that needs no key, for the error when none is found.
    _keyless: ClassVar[str]
    #: The advice when a request runs past the timeout.
    _timeout_hint: ClassVar[str]
    #: The SDK's exceptions, which `_failure` judges: the base class of them all, and
    #: those for a request past the timeout, a server not reached and an error status.
    #: Set by each backend's constructor, which is where its SDK is imported: an SDK
    #: takes up to a second and a half to import, and importing the backend's class
    #: (as `tooluse.models` does for any of its names) should not cost that.
    _sdk_error: type[Exception]
    _sdk_timeout: type[Exception]
    _sdk_unreachable: type[Exception]
    _sdk_status: type[Exception]
    #: The advice when the server answers 404.
    _not_found_hint: ClassVar[str]

    def __init__(
        self,
        model: str,
        *,
        connect: Callable[..., ClientT],
        client: ClientT | None,
        base_url: str | None,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        backoff: float,
        max_backoff: float,
        vision: bool,
    ) -> None:
        if max_retries < 0:
            raise UsageError(f"max_retries must be 0 or more, not {max_retries}")
        self.model = model
        self.name = f"{self._vendor}:{model}"
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._owns_client = client is None
        if client is None:
            key = resolve_key(
                api_key,
                base_url,
                key_var=self._key_var,
                base_url_var=self._base_url_var,
                keyless=self._keyless,
            )
            client = connect(api_key=key, base_url=base_url, timeout=timeout, max_retries=0)
        else:
            # Retries are ours, so that they are counted and reported the same
            # way whoever built the client.
            client = client.with_options(max_retries=0)
        self._client: ClientT = client
        self._responses = 0
        self._closed = False
        #: Whether the model can see: images of tool results are sent as image content.
        self.vision = vision

    @property
    def client(self) -> ClientT:
        """The SDK client requests go through (with its own retries off)."""
        return self._client

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    async def aclose(self) -> None:
        """Close the HTTP client, unless it was passed in; the model is unusable after."""
        self._closed = True
        if self._owns_client:
            await self._client.close()

    async def respond(self, request: ModelRequest) -> ModelResponse:
        names = self._start(request)
        params = self._params(request, names)

        async def send(params: dict[str, Any]) -> bytes:
            return await with_retries(
                lambda: self._post(params),
                catch=self._sdk_error,
                classify=self._failure,
                policy=self._policy(),
            )

        try:
            body = await send(params)
        except ModelBadRequestError as exc:
            plain = self._without_images(request, names, params, exc)
            if plain is None:
                raise
            body = await send(plain)
        return self._finish(self._checked(body), names)

    def _without_images(
        self,
        request: ModelRequest,
        names: Mapping[str, str],
        params: dict[str, Any],
        refusal: ModelBadRequestError,
    ) -> dict[str, Any] | None:
        """The request without its images, if a vision model refused one that had some.

        A server that cannot take an image (too large, a type it does not read, a model
        that cannot see after all) refuses the whole request; the run goes on with the
        images' descriptions, which the tool messages hold anyway, and says so once.
        """
        if not self.vision:
            return None
        plain = self._params(request, names, images=False)
        if plain == params:
            return None
        warnings.warn(
            f"{self.name} refused a request with images ({refusal}); it was sent again "
            "with their descriptions only",
            RuntimeWarning,
            stacklevel=2,
        )
        return plain

    async def respond_stream(self, request: ModelRequest, on_delta: DeltaSink) -> ModelResponse:
        """`respond`, streamed: each piece passed on as it arrives.

        The read timeout applies between events. A break before any piece was
        passed on is retried as `respond` retries; after, it raises at once
        (what was passed on cannot be taken back), saying how far the stream got.
        """
        names = self._start(request)
        params = self._params(request, names)
        ours = {wire: name for name, wire in names.items()}
        breaks = (_http.TimeoutException, _http.TransportError, _StreamFault, self._sdk_error)
        passed = 0

        def pass_on(delta: Delta) -> None:
            nonlocal passed
            passed += 1
            on_delta(delta)

        async def attempt() -> Mapping[str, Any]:
            reading = self._reader(ours, pass_on)
            try:
                async with aclosing(self._events(params)) as events:
                    async for event in events:
                        reading.add(event)
            except breaks as exc:
                if not passed:
                    raise
                broke = self._stream_failure(exc)[1]
                raise _StreamFault(
                    Failure(
                        ModelResponseError,
                        f"the stream from {self.base_url} broke {reading.where()}: {broke}; "
                        "its pieces were already passed on, so it was not retried",
                    )
                ) from exc
            return reading.body(self.model)

        async def send() -> Mapping[str, Any]:
            return await with_retries(
                attempt,
                catch=breaks,
                classify=lambda exc: self._stream_failure(exc)[0],
                policy=self._policy(),
            )

        try:
            body = await send()
        except ModelBadRequestError as exc:
            plain = self._without_images(request, names, params, exc)
            if plain is None or passed:
                raise
            params = plain
            body = await send()
        return self._finish(body, names)

    def _start(self, request: ModelRequest) -> dict[str, str]:
        """Check that the model is open and `request` can be sent; return its tools' wire names."""
        if self._closed:
            raise UsageError(f"{self.name} was closed; create a new model to send requests")
        choice = request.tool_choice
        names = [t.name for t in request.tools]
        if not names and choice not in ("auto", "none"):
            raise UsageError(f"tool_choice={choice!r} needs tools, but the request has none")
        if choice not in ("auto", "none", "required") and choice not in names:
            raise UsageError(f"tool_choice={choice!r} is not one of the request's tools: {names}")
        return wire_names(names)

    def _finish(self, body: Mapping[str, Any], names: Mapping[str, str]) -> ModelResponse:
        self._responses += 1
        return own_names(self._response(body), names)

    def _reply(
        self,
        data: Mapping[str, Any],
        *,
        content: str | None,
        tool_calls: list[ToolCall],
        problems: list[str],
        usage: Usage | None,
        finish_reason: object,
    ) -> ModelResponse:
        """The response for reply body `data`, from what the backend read in it."""
        model_name = data.get("model")
        return ModelResponse(
            content=content,
            tool_calls=tool_calls,
            usage=usage,
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
            # The model the server says answered (an alias resolved), else the one asked.
            model_name=model_name if isinstance(model_name, str) and model_name else self.model,
            problems=problems,
            raw=data,
        )

    def _failure(self, exc: Exception) -> Failure:
        """What an exception of the SDK (`_sdk_error`) amounts to."""
        # The timeout first: both SDKs make it a kind of connection error.
        if isinstance(exc, self._sdk_timeout):
            return timed_out(self.base_url, self.timeout, self._timeout_hint)
        if isinstance(exc, self._sdk_unreachable):
            return unreachable(self.base_url, exc)
        if isinstance(exc, self._sdk_status):
            return self._status_failure(exc)
        return Failure(ModelError, f"the {self._vendor} client failed: {exc}")

    def _status_failure(self, exc: Any) -> Failure:
        """What an error status (`_sdk_status`) amounts to; a backend whose API gives
        some status a meaning of its own says so first."""
        return status_failure(
            self.base_url,
            exc.status_code,
            reply_text(exc.body, exc.response.content),
            exc.response.headers,
            key_var=self._key_var,
            not_found_hint=self._not_found_hint,
        )

    def _policy(self) -> RetryPolicy:
        return RetryPolicy(self.max_retries, self.backoff, self.max_backoff)

    def _stream_failure(self, exc: Exception) -> tuple[Failure, str]:
        """What `exc`, raised while a stream was read, amounts to: the failure while
        nothing was passed on, and in a few words what broke, for when something was."""
        if isinstance(exc, _StreamFault):
            return exc.failure, exc.reason
        cause = exc.__cause__ or exc.__context__
        if isinstance(exc, self._sdk_error) and isinstance(
            cause, _http.TimeoutException | _http.TransportError
        ):
            # Some SDK releases wrap the transport's error in their own (a connection
            # error) while a stream is read: what broke is the cause.
            exc = cause
        if isinstance(exc, _http.TimeoutException):
            return (
                timed_out(self.base_url, self.timeout, self._timeout_hint),
                f"nothing arrived for {self.timeout:g} s (the timeout)",
            )
        if isinstance(exc, _http.TransportError):
            # The server answered, then the connection under the stream went.
            failure = Failure(
                ModelConnectionError,
                f"{self.base_url} broke the stream: {exc}",
                "is the server running at that address?",
            )
            return failure, f"the connection was lost ({exc})"
        failure = self._failure(exc)
        return failure, failure.message

    # --- what each backend says -------------------------------------------------------

    @abstractmethod
    def _params(
        self, request: ModelRequest, names: Mapping[str, str], *, images: bool = True
    ) -> dict[str, Any]:
        """The SDK's arguments for `request`, its tools named by their wire `names`;
        with the images tool results refer to if the model can see and `images`."""

    @abstractmethod
    async def _post(self, params: dict[str, Any]) -> bytes:
        """Send one request; the reply's body as it came."""

    @abstractmethod
    def _checked(self, body: bytes) -> Mapping[str, Any]:
        """The reply `body` as an object of the wire format; `ModelResponseError` if not."""

    @abstractmethod
    def _response(self, data: Mapping[str, Any]) -> ModelResponse:
        """The response a checked (or streamed and assembled) reply body says."""

    @abstractmethod
    def _events(self, params: dict[str, Any]) -> AsyncGenerator[Any, None]:
        """Open a stream for `params` and yield its events as they arrive.

        A break the backend recognizes in its wire format (an error event, an
        event that is not JSON) is raised as `_StreamFault`; the transport's own
        exceptions and the SDK's are left to the base.
        """

    @abstractmethod
    def _reader(self, names: Mapping[str, str], on_delta: DeltaSink) -> StreamReader:
        """A reader for one stream; `names` maps wire names back to the tools' own."""
