"""`AnthropicChat.respond_stream` against a loopback Messages API server streaming SSE events."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tooluse import Agent, CallEndEvent, CallStartEvent, DoneEvent, TextEvent, tool
from tooluse._exceptions import ModelResponseError, ModelTimeoutError
from tooluse._messages import Message, Usage
from tooluse.models import AnthropicChat, CallDelta, Delta, TextDelta
from tooluse.models._base import ModelRequest

from ._chat_server import Stream, sse
from ._dotted import dotted_factorial
from ._messages_server import MessagesServer, message, text, tool_use


@pytest.fixture
def server() -> Iterator[MessagesServer]:
    messages = MessagesServer().start()
    yield messages
    assert messages.violations == []
    messages.stop()


def connect(base_url: str, **options: Any) -> AnthropicChat:
    settings: dict[str, Any] = {"api_key": "sk-ant-test", "backoff": 0.01, "max_backoff": 0.05}
    return AnthropicChat("claude-test", base_url=base_url, **(settings | options))


@pytest.fixture
async def model(server: MessagesServer) -> AsyncIterator[AnthropicChat]:
    backend = connect(server.base_url)
    yield backend
    await backend.aclose()


@tool
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city name.
    """
    return f"sunny in {city}"


PARIS = '{"city": "Paris"}'


def event(data: dict[str, Any]) -> bytes:
    return sse(data, event=data["type"])


def start(input_tokens: int = 10) -> bytes:
    return event(
        {
            "type": "message_start",
            "message": {
                "id": "msg_stream",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": 1},
            },
        }
    )


def text_block(index: int, *pieces: str) -> list[bytes]:
    out = [event({"type": "content_block_start", "index": index, "content_block": text("")})]
    for piece in pieces:
        delta = {"type": "text_delta", "text": piece}
        out.append(event({"type": "content_block_delta", "index": index, "delta": delta}))
    out.append(event({"type": "content_block_stop", "index": index}))
    return out


def tool_block(index: int, call_id: str, name: str, *pieces: str, stop: bool = True) -> list[bytes]:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    out = [event({"type": "content_block_start", "index": index, "content_block": block})]
    for piece in pieces:
        delta = {"type": "input_json_delta", "partial_json": piece}
        out.append(event({"type": "content_block_delta", "index": index, "delta": delta}))
    if stop:
        out.append(event({"type": "content_block_stop", "index": index}))
    return out


def end(stop_reason: str, output_tokens: int = 5) -> list[bytes]:
    delta = {"stop_reason": stop_reason, "stop_sequence": None}
    return [
        event({"type": "message_delta", "delta": delta, "usage": {"output_tokens": output_tokens}}),
        event({"type": "message_stop"}),
    ]


def error_event(kind: str = "overloaded_error", said: str = "Overloaded") -> bytes:
    return sse({"type": "error", "error": {"type": kind, "message": said}}, event="error")


def ask(words: str = "Hi") -> ModelRequest:
    return ModelRequest(messages=[Message("user", words)], tools=[get_weather])


async def test_text_and_input_json_pieces_are_passed_on_and_assembled(
    server: MessagesServer, model: AnthropicChat
) -> None:
    server.enqueue(
        Stream(
            [
                start(),
                *text_block(0, "Let me ", "look."),
                *tool_block(1, "toolu_1", "get_weather", '{"ci', 'ty": "Paris"}'),
                *end("tool_use", output_tokens=15),
            ]
        )
    )
    pieces: list[Delta] = []
    response = await model.respond_stream(ask(), pieces.append)

    assert pieces == [
        TextDelta("Let me "),
        TextDelta("look."),
        CallDelta(0, "toolu_1", "get_weather"),
        CallDelta(0, arguments='{"ci'),
        CallDelta(0, arguments='ty": "Paris"}'),
    ]
    assert response.content == "Let me look."
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("toolu_1", "get_weather", '{"city": "Paris"}')
    ]
    assert response.finish_reason == "tool_use"
    assert response.usage == Usage(10, 15, "provider")
    assert server.requests[0].json["stream"] is True


async def test_a_streamed_reply_reads_as_the_same_reply_unstreamed(
    server: MessagesServer, model: AnthropicChat
) -> None:
    server.enqueue(
        message(
            text("Let me look."),
            tool_use("toolu_1", "get_weather", {"city": "Paris"}),
            usage={"input_tokens": 10, "output_tokens": 15},
        ),
        Stream(
            [
                start(),
                *text_block(0, "Let me look."),
                *tool_block(1, "toolu_1", "get_weather", '{"city":', ' "Paris"}'),
                *end("tool_use", output_tokens=15),
            ]
        ),
    )
    whole = await model.respond(ask())
    streamed = await model.respond_stream(ask(), lambda _: None)
    for field in ("content", "tool_calls", "usage", "finish_reason", "model_name", "problems"):
        assert getattr(streamed, field) == getattr(whole, field), field


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in ("duration_s", "started_at")}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


async def test_an_agent_run_streamed_ends_as_the_same_run_unstreamed(
    server: MessagesServer,
) -> None:
    usage = {"input_tokens": 10, "output_tokens": 5}
    server.enqueue(
        message(tool_use("toolu_1", "get_weather", {"city": "Paris"}), usage=usage),
        message(text("It is sunny."), usage=usage),
        Stream([start(), *tool_block(0, "toolu_1", "get_weather", PARIS), *end("tool_use")]),
        Stream([start(), *text_block(0, "It is ", "sunny."), *end("end_turn")]),
    )
    backend = connect(server.base_url)
    ran = await Agent(backend, [get_weather]).arun("Weather in Paris?")
    events = [e async for e in Agent(backend, [get_weather]).stream("Weather in Paris?")]
    await backend.aclose()

    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.result.answer == "It is sunny."
    assert _stable(done.result.to_dict()) == _stable(ran.to_dict())
    assert [e.text for e in events if isinstance(e, TextEvent)] == ["It is ", "sunny."]
    assert [(e.id, e.name) for e in events if isinstance(e, CallStartEvent)] == [
        ("toolu_1", "get_weather")
    ]


# --- faults ----------------------------------------------------------------------------


async def test_an_error_event_mid_stream_is_a_clear_error_and_keeps_the_record(
    server: MessagesServer,
) -> None:
    server.enqueue(
        Stream([start(), *tool_block(0, "toolu_1", "get_weather", PARIS), *end("tool_use")]),
        Stream([start(), *text_block(0, "It is "), error_event()]),
    )
    backend = connect(server.base_url)
    events = [e async for e in Agent(backend, [get_weather]).stream("Weather?")]
    await backend.aclose()

    result = events[-1].result  # type: ignore[union-attr]
    assert result.status == "error"
    assert result.error == (
        f"ModelResponseError: the stream from {backend.base_url} broke after 4 events: "
        f"{backend.base_url} sent an error event (overloaded_error: Overloaded); its pieces "
        "were already passed on, so it was not retried"
    )
    assert [c.id for c in result.calls] == ["toolu_1"]
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]
    assert [e.id for e in events if isinstance(e, CallEndEvent)] == ["toolu_1"]
    assert len(server.requests) == 2


async def test_an_error_event_before_any_piece_is_retried(
    server: MessagesServer, model: AnthropicChat
) -> None:
    server.enqueue(
        Stream([start(), error_event()]),
        Stream([start(), *text_block(0, "fine"), *end("end_turn")]),
    )
    response = await model.respond_stream(ask(), lambda _: None)
    assert response.content == "fine"
    assert len(server.requests) == 2


async def test_a_stream_cut_in_a_calls_arguments_is_a_clear_error(
    server: MessagesServer, model: AnthropicChat
) -> None:
    cut = tool_block(0, "toolu_1", "get_weather", '{"ci', stop=False)
    server.enqueue(Stream([start(), *cut], cut=True))
    with pytest.raises(ModelResponseError) as raised:
        await model.respond_stream(ask(), lambda _: None)
    assert "in the arguments of a call to get_weather (4 characters received)" in str(raised.value)
    assert "the connection was lost" in str(raised.value)


async def test_the_read_timeout_applies_between_events(server: MessagesServer) -> None:
    backend = connect(server.base_url, timeout=0.3, max_retries=0)
    server.enqueue(Stream([start(), *text_block(0, "Hel")[:2], 30.0]))
    pieces: list[Delta] = []
    with pytest.raises(ModelResponseError, match=r"nothing arrived for 0\.3 s"):
        await backend.respond_stream(ask(), pieces.append)
    assert pieces == [TextDelta("Hel")]
    server.enqueue(Stream([start(), 30.0]))
    with pytest.raises(ModelTimeoutError, match=r"did not answer within 0\.3 s"):
        await backend.respond_stream(ask(), pieces.append)
    await backend.aclose()


async def test_a_malformed_event_is_a_clear_error(
    server: MessagesServer, model: AnthropicChat
) -> None:
    server.enqueue(Stream([start(), b"event: content_block_start\ndata: {oops\n\n"]))
    with pytest.raises(ModelResponseError, match=r"stream event that is not JSON.*oops"):
        await model.respond_stream(ask(), lambda _: None)


async def test_a_dotted_name_streams_as_the_tools_own(server: MessagesServer) -> None:
    dotted = dotted_factorial([])
    server.enqueue(
        Stream(
            [
                start(),
                *tool_block(0, "toolu_1", "math_factorial", '{"number": 5}'),
                *end("tool_use"),
            ]
        )
    )
    backend = connect(server.base_url)
    pieces: list[Delta] = []
    request = ModelRequest(messages=[Message("user", "5!")], tools=[dotted])
    response = await backend.respond_stream(request, pieces.append)
    await backend.aclose()
    assert server.violations == []
    assert pieces[0] == CallDelta(0, "toolu_1", "math.factorial")
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("math.factorial", '{"number": 5}')
    ]
