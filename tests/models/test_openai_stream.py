"""`OpenAIChat.respond_stream` against a loopback server streaming chat-completion chunks (SSE)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tooluse import Agent, CallEndEvent, CallStartEvent, DoneEvent, TextEvent, tool
from tooluse._exceptions import ModelResponseError, ModelTimeoutError
from tooluse._messages import Message, Usage
from tooluse.models import CallDelta, Delta, TextDelta
from tooluse.models._base import ModelRequest
from tooluse.models._openai import OpenAIChat

from ._chat_server import ChatServer, Stream, completion, sse, tool_call


@pytest.fixture
def server() -> Iterator[ChatServer]:
    chat = ChatServer().start()
    yield chat
    chat.stop()


def connect(base_url: str, **options: Any) -> OpenAIChat:
    settings: dict[str, Any] = {"api_key": "sk-test", "backoff": 0.01, "max_backoff": 0.05}
    return OpenAIChat("gpt-test", base_url=base_url, **(settings | options))


@pytest.fixture
async def model(server: ChatServer) -> AsyncIterator[OpenAIChat]:
    backend = connect(server.base_url)
    yield backend
    await backend.aclose()


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    choices: bool = True,
) -> bytes:
    body: dict[str, Any] = {
        "id": "chatcmpl-stream",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}] if choices else [],
    }
    if usage is not None:
        body["usage"] = usage
    return sse(body)


def call_pieces(index: int, call_id: str, name: str, pieces: list[str]) -> list[bytes]:
    """A call as servers stream it: id and name first, then the arguments in pieces."""
    first = {"index": index, "id": call_id, "type": "function", "function": {"name": name}}
    out = [chunk({"role": "assistant", "tool_calls": [first]})]
    for piece in pieces:
        out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    return out


USAGE = {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30}


def text_stream(*pieces: str, usage: dict[str, Any] = USAGE) -> Stream:
    items: list[bytes | float] = [chunk({"role": "assistant", "content": ""})]
    items += [chunk({"content": piece}) for piece in pieces]
    items += [chunk(finish="stop"), chunk(usage=usage, choices=False), sse("[DONE]")]
    return Stream(items)


def calls_stream(*calls: tuple[str, str, list[str]]) -> Stream:
    items: list[bytes | float] = []
    for index, (call_id, name, pieces) in enumerate(calls):
        items += call_pieces(index, call_id, name, pieces)
    items += [chunk(finish="tool_calls"), chunk(usage=USAGE, choices=False), sse("[DONE]")]
    return Stream(items)


def ask(text: str = "Hi") -> ModelRequest:
    return ModelRequest(messages=[Message("user", text)])


async def test_text_pieces_are_passed_on_and_joined(server: ChatServer, model: OpenAIChat) -> None:
    server.enqueue(text_stream("Hel", "lo ", "there"))
    pieces: list[Delta] = []
    response = await model.respond_stream(ask(), pieces.append)

    assert pieces == [TextDelta("Hel"), TextDelta("lo "), TextDelta("there")]
    assert response.content == "Hello there"
    assert response.finish_reason == "stop"
    assert response.usage == Usage(21, 9, "provider")
    sent = server.requests[0].json
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}


async def test_call_arguments_are_assembled_from_their_pieces(
    server: ChatServer, model: OpenAIChat
) -> None:
    server.enqueue(
        calls_stream(
            ("call_a", "get_weather", ['{"ci', 'ty": "Par', 'is"}']),
            ("call_b", "get_time", ['{"timezone": "CET"}']),
        )
    )
    pieces: list[Delta] = []
    response = await model.respond_stream(ask(), pieces.append)

    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_a", "get_weather", '{"city": "Paris"}'),
        ("call_b", "get_time", '{"timezone": "CET"}'),
    ]
    assert pieces[0] == CallDelta(0, "call_a", "get_weather", "")
    assert pieces[1:4] == [CallDelta(0, arguments=p) for p in ['{"ci', 'ty": "Par', 'is"}']]
    assert pieces[4] == CallDelta(1, "call_b", "get_time", "")
    assert response.finish_reason == "tool_calls"


async def test_a_streamed_reply_reads_as_the_same_reply_unstreamed(
    server: ChatServer, model: OpenAIChat
) -> None:
    calls = [tool_call("call_a", "get_weather", '{"city": "Paris"}')]
    server.enqueue(
        completion("Looking.", tool_calls=calls, usage=USAGE, model="test-model"),
        Stream(
            [
                chunk({"role": "assistant", "content": "Look"}),
                chunk({"content": "ing."}),
                *call_pieces(0, "call_a", "get_weather", ['{"city": ', '"Paris"}']),
                chunk(finish="tool_calls"),
                chunk(usage=USAGE, choices=False),
                sse("[DONE]"),
            ]
        ),
    )
    whole = await model.respond(ask())
    streamed = await model.respond_stream(ask(), lambda _: None)
    for field in ("content", "tool_calls", "usage", "finish_reason", "model_name", "problems"):
        assert getattr(streamed, field) == getattr(whole, field), field


@tool
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city name.
    """
    return f"sunny in {city}"


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in ("duration_s", "started_at")}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


async def test_an_agent_run_streamed_ends_as_the_same_run_unstreamed(server: ChatServer) -> None:
    calls = [tool_call("call_a", "get_weather", '{"city": "Paris"}')]
    server.enqueue(
        completion(None, tool_calls=calls, usage=USAGE, model="test-model"),
        completion("It is sunny.", usage=USAGE, model="test-model"),
        calls_stream(("call_a", "get_weather", ['{"city"', ': "Paris"}'])),
        text_stream("It is ", "sunny."),
    )
    backend = connect(server.base_url)
    ran = await Agent(backend, [get_weather]).arun("Weather in Paris?")
    events = [e async for e in Agent(backend, [get_weather]).stream("Weather in Paris?")]
    await backend.aclose()

    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.result.status == "completed" and done.result.answer == "It is sunny."
    assert _stable(done.result.to_dict()) == _stable(ran.to_dict())
    assert [e.kind for e in events] == [
        "call_start",
        "call_end",
        "round_end",
        "text",
        "text",
        "round_end",
        "done",
    ]
    assert [e.text for e in events if isinstance(e, TextEvent)] == ["It is ", "sunny."]
    starts = [e for e in events if isinstance(e, CallStartEvent)]
    assert [(s.id, s.name) for s in starts] == [("call_a", "get_weather")]


# --- faults ----------------------------------------------------------------------------


async def test_a_stream_cut_in_a_calls_arguments_is_a_clear_error_and_keeps_the_record(
    server: ChatServer,
) -> None:
    cut = Stream(call_pieces(0, "call_b", "get_weather", ['{"city": "Lo']), cut=True)
    server.enqueue(calls_stream(("call_a", "get_weather", ['{"city": "Paris"}'])), cut)
    backend = connect(server.base_url)
    events = [e async for e in Agent(backend, [get_weather]).stream("Weather in two cities?")]
    await backend.aclose()

    result = events[-1].result  # type: ignore[union-attr]
    assert result.status == "error"
    assert result.error.startswith("ModelResponseError: the stream from")
    where = "in the arguments of a call to get_weather (12 characters received)"
    assert f"{where}: the connection was lost" in result.error
    assert "not retried" in result.error
    # the first round is kept whole; the broken reply never became a message
    assert [c.id for c in result.calls] == ["call_a"]
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]
    assert len(server.requests) == 2
    ended = [e for e in events if isinstance(e, CallEndEvent)]
    assert [e.id for e in ended] == ["call_a"]


async def test_a_stream_cut_before_any_piece_is_retried(
    server: ChatServer, model: OpenAIChat
) -> None:
    server.enqueue(Stream([], cut=True), text_stream("fine"))
    response = await model.respond_stream(ask(), lambda _: None)
    assert response.content == "fine"
    assert len(server.requests) == 2


async def test_the_read_timeout_applies_between_chunks(server: ChatServer) -> None:
    backend = connect(server.base_url, timeout=0.3, max_retries=0)
    # The first piece arrives at once, then the server stalls far longer than the timeout.
    server.enqueue(Stream([chunk({"role": "assistant", "content": "Hel"}), 30.0]))
    pieces: list[Delta] = []
    with pytest.raises(ModelResponseError, match=r"nothing arrived for 0\.3 s"):
        await backend.respond_stream(ask(), pieces.append)
    assert pieces == [TextDelta("Hel")]
    # A stall before any piece is an ordinary timeout, retried like any.
    server.enqueue(Stream([30.0]))
    with pytest.raises(ModelTimeoutError, match=r"did not answer within 0\.3 s"):
        await backend.respond_stream(ask(), pieces.append)
    await backend.aclose()


async def test_a_malformed_chunk_is_a_clear_error(server: ChatServer, model: OpenAIChat) -> None:
    server.enqueue(Stream([chunk({"role": "assistant", "content": "Hi"}), b"data: {not json\n\n"]))
    with pytest.raises(ModelResponseError, match=r"stream chunk that is not JSON.*not json"):
        await model.respond_stream(ask(), lambda _: None)


async def test_an_error_object_in_the_stream_is_reported(
    server: ChatServer, model: OpenAIChat
) -> None:
    error = {"error": {"message": "the model fell over", "type": "server_error"}}
    server.enqueue(Stream([chunk({"role": "assistant", "content": "Hi"}), sse(error)]))
    with pytest.raises(ModelResponseError, match=r"broke after 1 chunks: .*the model fell over"):
        await model.respond_stream(ask(), lambda _: None)
    assert len(server.requests) == 1
