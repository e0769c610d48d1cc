"""The rule for a broken stream, the same for every HTTP backend, against loopback servers.

A stream that breaks before any piece was passed on is retried as an unstreamed
request is; once a piece was passed on it cannot be taken back, so a break is
raised at once, saying how far the stream got.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from tooluse._exceptions import (
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    ModelTimeoutError,
)
from tooluse._messages import Message
from tooluse.models import AnthropicChat, Delta, Model, OpenAIChat, TextDelta
from tooluse.models._base import ModelRequest

from ._chat_server import ChatServer, Stream, sse
from ._messages_server import MessagesServer
from .test_anthropic_stream import end, start, text_block
from .test_openai_stream import chunk

#: Long enough that a loaded machine still delivers each piece in time; the stalls
#: below last far longer, so only a stall ends an attempt this way.
TIMEOUT = 1.0
STALL = 60.0


@dataclass(frozen=True)
class Wire:
    """How one backend's server streams a reply of text pieces."""

    server: Callable[[], ChatServer]
    backend: Callable[..., Model]
    model: str
    #: What a stream sends before its first piece (passes nothing on).
    opening: list[bytes]
    piece: Callable[[str], list[bytes]]
    ending: list[bytes]
    malformed: bytes

    def connect(self, base_url: str, max_retries: int) -> Model:
        return self.backend(
            self.model,
            base_url=base_url,
            api_key="sk-test",
            timeout=TIMEOUT,
            max_retries=max_retries,
            backoff=0.01,
            max_backoff=0.05,
        )

    def reply(self, *pieces: str) -> Stream:
        items: list[bytes | float] = [*self.opening]
        for value in pieces:
            items += self.piece(value)
        return Stream([*items, *self.ending])


OPENAI = Wire(
    server=ChatServer,
    backend=OpenAIChat,
    model="gpt-test",
    opening=[chunk({"role": "assistant", "content": ""})],
    piece=lambda value: [chunk({"content": value})],
    ending=[chunk(finish="stop"), sse("[DONE]")],
    malformed=b"data: {not json\n\n",
)

ANTHROPIC = Wire(
    server=MessagesServer,
    backend=AnthropicChat,
    model="claude-test",
    opening=[start(), *text_block(0)[:1]],
    # A text block's one delta event, without its start and stop.
    piece=lambda value: text_block(0, value)[1:2],
    ending=[*text_block(0)[-1:], *end("end_turn")],
    malformed=b"event: content_block_delta\ndata: {not json\n\n",
)

WIRES = {"openai": OPENAI, "anthropic": ANTHROPIC}


@pytest.fixture(params=sorted(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


@pytest.fixture
def server(wire: Wire) -> Iterator[ChatServer]:
    served = wire.server().start()
    yield served
    served.stop()
    assert getattr(served, "violations", []) == []


def ask() -> ModelRequest:
    return ModelRequest(messages=[Message("user", "Hi")])


def broken(wire: Wire, how: str, *pieces: str) -> Stream:
    """A stream that passes `pieces` on, then breaks `how`."""
    items: list[bytes | float] = [*wire.opening]
    for value in pieces:
        items += wire.piece(value)
    if how == "cut":
        return Stream(items, cut=True)
    if how == "stall":
        return Stream([*items, STALL])
    assert how == "malformed"
    return Stream([*items, wire.malformed])


@pytest.mark.parametrize("how", ["cut", "stall"])
async def test_a_break_before_the_first_piece_is_retried(
    wire: Wire, server: ChatServer, how: str
) -> None:
    server.enqueue(broken(wire, how), wire.reply("fine"))
    backend = wire.connect(server.base_url, 1)
    pieces: list[Delta] = []
    try:
        response = await backend.respond_stream(ask(), pieces.append)
    finally:
        await backend.aclose()

    assert response.content == "fine"
    assert pieces == [TextDelta("fine")]
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("how", "kind", "said"),
    [
        pytest.param("cut", ModelConnectionError, "{server} broke the stream: ", id="cut"),
        pytest.param("stall", ModelTimeoutError, "{server} did not answer within 1 s", id="stall"),
    ],
)
async def test_a_break_before_the_first_piece_with_no_retry_left_is_the_ordinary_failure(
    wire: Wire, server: ChatServer, how: str, kind: type[ModelError], said: str
) -> None:
    server.enqueue(broken(wire, how))
    backend = wire.connect(server.base_url, 0)
    pieces: list[Delta] = []
    try:
        with pytest.raises(kind) as raised:
            await backend.respond_stream(ask(), pieces.append)
    finally:
        await backend.aclose()

    assert type(raised.value) is kind
    assert str(raised.value).startswith(said.format(server=backend.base_url))
    assert "(gave up after 1 attempt)" in str(raised.value)
    assert pieces == []
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("how", "reason"),
    [
        pytest.param("cut", "the connection was lost (", id="cut"),
        pytest.param("stall", "nothing arrived for 1 s (the timeout)", id="stall"),
        pytest.param("malformed", "{server} sent a stream {unit} that is not JSON", id="malformed"),
    ],
)
async def test_a_break_after_a_piece_is_raised_at_once_saying_how_far_it_got(
    wire: Wire, server: ChatServer, how: str, reason: str
) -> None:
    # A good reply waits in the queue: a retry would fetch it and succeed.
    server.enqueue(broken(wire, how, "Hel", "lo"), wire.reply("fine"))
    backend = wire.connect(server.base_url, 3)
    pieces: list[Delta] = []
    try:
        with pytest.raises(ModelResponseError) as raised:
            await backend.respond_stream(ask(), pieces.append)
    finally:
        await backend.aclose()

    assert type(raised.value) is ModelResponseError
    message = str(raised.value)
    unit = "chunk" if wire is OPENAI else "event"
    expected = f"the stream from {backend.base_url} broke after "
    assert message.startswith(expected), message
    assert f" {unit}s: " + reason.format(server=backend.base_url, unit=unit) in message
    assert message.endswith("; its pieces were already passed on, so it was not retried")
    assert pieces == [TextDelta("Hel"), TextDelta("lo")]
    assert len(server.requests) == 1
