"""`OpenAIChat` against a real HTTP server on loopback speaking chat completions."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tooluse._exceptions import (
    ModelAuthError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelRateLimitError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
    UsageError,
)
from tooluse._messages import Message, ToolCall, Usage
from tooluse.models._base import ModelRequest
from tooluse.models._openai import OpenAIChat
from tooluse.tools import Tool, tool
from tooluse.tools._render import to_openai

from ._chat_server import ChatServer, Reply, completion, error_body, tool_call


def connect(base_url: str, **options: Any) -> OpenAIChat:
    """A backend with a test key and backoff too short to slow the suite.

    Every test that waits does so for the behaviour under test, never for backoff.
    """
    settings: dict[str, Any] = {"api_key": "sk-test", "backoff": 0.01, "max_backoff": 0.05}
    return OpenAIChat("gpt-test", base_url=base_url, **(settings | options))


@tool
def get_weather(city: str, unit: str = "celsius") -> str:
    """Current weather for a city.

    Args:
        city: The city name.
        unit: celsius or fahrenheit.
    """
    return f"sunny in {city}"


@tool
def get_time(timezone: str) -> str:
    """Current time in a timezone."""
    return "12:00"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    chat = ChatServer().start()
    yield chat
    chat.stop()


@pytest.fixture
async def model(server: ChatServer) -> AsyncIterator[OpenAIChat]:
    backend = connect(server.base_url)
    yield backend
    await backend.aclose()


def ask(text: str = "Hi", **kwargs: Any) -> ModelRequest:
    return ModelRequest(messages=[Message("user", text)], **kwargs)


# --- what is sent ----------------------------------------------------------------------


async def test_text_answer(server: ChatServer, model: OpenAIChat) -> None:
    server.enqueue(completion("Hello there", model="gpt-test-2024"))
    messages = [Message("system", "Be brief."), Message("user", "Hi")]

    response = await model.respond(ModelRequest(messages=messages))

    assert response.content == "Hello there"
    assert response.tool_calls == []
    assert response.finish_reason == "stop"
    assert response.model_name == "gpt-test-2024"
    assert response.problems == []
    assert response.raw["id"] == "chatcmpl-test"
    [sent] = server.requests
    assert sent.method == "POST"
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.json == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
    }


def test_name_says_backend_and_model() -> None:
    assert OpenAIChat("gpt-4o-mini", api_key="sk-test").name == "openai:gpt-4o-mini"


async def test_tools_choice_and_limits_are_sent(server: ChatServer) -> None:
    server.enqueue(completion("ok"))
    backend = connect(server.base_url, extra_body={"top_k": 20})
    request = ask(
        tools=[get_weather, get_time],
        tool_choice="required",
        max_output_tokens=64,
        temperature=0.2,
    )

    await backend.respond(request)
    await backend.aclose()

    sent = server.requests[0].json
    assert sent["tools"] == [to_openai(get_weather), to_openai(get_time)]
    assert "strict" not in sent["tools"][0]["function"]
    assert sent["tool_choice"] == "required"
    assert sent["max_tokens"] == 64
    assert sent["temperature"] == 0.2
    assert sent["top_k"] == 20


async def test_strict_tools_send_strict_schemas(server: ChatServer) -> None:
    server.enqueue(completion("ok"))
    backend = connect(server.base_url, strict_tools=True)

    await backend.respond(ask(tools=[get_weather]))
    await backend.aclose()

    [sent_tool] = server.requests[0].json["tools"]
    assert sent_tool == to_openai(get_weather, strict=True)
    function = sent_tool["function"]
    assert function["strict"] is True
    assert function["parameters"]["additionalProperties"] is False
    assert function["parameters"]["required"] == ["city", "unit"]
    assert function["parameters"]["properties"]["unit"]["type"] == ["string", "null"]


@tool(examples=[{"arguments": {"city": "Madrid"}, "result": "sunny in Madrid"}])
def weather_shown(city: str, unit: str = "celsius") -> str:
    """Current weather for a city.

    Args:
        city: The city name.
        unit: celsius or fahrenheit.
    """
    return f"sunny in {city}"


async def test_tool_examples_are_sent_as_schema_examples(server: ChatServer) -> None:
    server.enqueue(completion("ok"))
    backend = connect(server.base_url)

    await backend.respond(ask(tools=[weather_shown]))
    await backend.aclose()

    [sent_tool] = server.requests[0].json["tools"]
    assert sent_tool["function"]["parameters"]["examples"] == [{"city": "Madrid"}]
    assert sent_tool["function"]["description"] == "Current weather for a city."


async def test_strict_tools_send_examples_in_the_description(server: ChatServer) -> None:
    server.enqueue(completion("ok"))
    backend = connect(server.base_url, strict_tools=True)

    await backend.respond(ask(tools=[weather_shown]))
    await backend.aclose()

    [sent_tool] = server.requests[0].json["tools"]
    function = sent_tool["function"]
    # Strict mode takes a documented subset of JSON Schema: the examples stay out of it.
    assert "examples" not in function["parameters"]
    assert function["description"] == (
        'Current weather for a city.\n\nExample: {"city": "Madrid"} -> "sunny in Madrid"'
    )


async def test_named_tool_choice(server: ChatServer, model: OpenAIChat) -> None:
    server.enqueue(completion(tool_calls=[tool_call("c1", "get_time", '{"timezone": "UTC"}')]))

    await model.respond(ask(tools=[get_weather, get_time], tool_choice="get_time"))

    assert server.requests[0].json["tool_choice"] == {
        "type": "function",
        "function": {"name": "get_time"},
    }


async def test_parallel_tool_calls_is_sent_only_when_set(
    server: ChatServer, model: OpenAIChat
) -> None:
    server.enqueue(completion("ok"))
    server.enqueue(completion("ok"))

    await model.respond(ask(tools=[get_weather], parallel_tool_calls=False))
    await model.respond(ask(tools=[get_weather]))

    assert server.requests[0].json["parallel_tool_calls"] is False
    assert "parallel_tool_calls" not in server.requests[1].json


async def test_no_tools_means_no_tools_field(server: ChatServer, model: OpenAIChat) -> None:
    server.enqueue(completion("ok"))

    await model.respond(ask(tool_choice="none"))

    assert "tools" not in server.requests[0].json
    assert "tool_choice" not in server.requests[0].json


@pytest.mark.parametrize(
    ("tools", "choice"),
    [([get_weather], "get_time"), ([], "required"), ([], "get_weather")],
)
async def test_impossible_tool_choice_is_a_usage_error(
    server: ChatServer, model: OpenAIChat, tools: list[Tool], choice: str
) -> None:
    with pytest.raises(UsageError, match="tool_choice"):
        await model.respond(ask(tools=tools, tool_choice=choice))

    assert server.requests == []


async def test_conversation_with_tool_results_is_sent_in_wire_shape(
    server: ChatServer, model: OpenAIChat
) -> None:
    server.enqueue(completion("It is sunny."))
    call = ToolCall("call_1", "get_weather", '{"city": "Oslo"}')
    messages = [
        Message("user", "Weather in Oslo?"),
        Message("assistant", None, tool_calls=(call,)),
        Message("tool", "sunny in Oslo", tool_call_id="call_1", name="get_weather"),
    ]

    await model.respond(ModelRequest(messages=messages, tools=[get_weather]))

    assert server.requests[0].json["messages"] == [
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "content": "sunny in Oslo", "tool_call_id": "call_1"},
    ]


# --- what is read ----------------------------------------------------------------------


async def test_tool_call(server: ChatServer, model: OpenAIChat) -> None:
    server.enqueue(
        completion(tool_calls=[tool_call("call_abc", "get_weather", '{"city": "Oslo"}')])
    )

    response = await model.respond(ask(tools=[get_weather]))

    assert response.content is None
    assert response.tool_calls == [ToolCall("call_abc", "get_weather", '{"city": "Oslo"}')]
    assert response.finish_reason == "tool_calls"
    assert response.problems == []


async def test_parallel_tool_calls(server: ChatServer, model: OpenAIChat) -> None:
    server.enqueue(
        completion(
            "Checking both.",
            tool_calls=[
                tool_call("call_1", "get_weather", '{"city": "Oslo"}'),
                tool_call("call_2", "get_time", '{"timezone": "Europe/Oslo"}'),
            ],
        )
    )

    response = await model.respond(ask(tools=[get_weather, get_time]))

    assert response.content == "Checking both."
    assert response.tool_calls == [
        ToolCall("call_1", "get_weather", '{"city": "Oslo"}'),
        ToolCall("call_2", "get_time", '{"timezone": "Europe/Oslo"}'),
    ]


async def test_usage_is_provider_usage(server: ChatServer, model: OpenAIChat) -> None:
    server.enqueue(
        completion("ok", usage={"prompt_tokens": 31, "completion_tokens": 7, "total_tokens": 38})
    )

    response = await model.respond(ask())

    assert response.usage == Usage(input_tokens=31, output_tokens=7, source="provider")


async def test_missing_usage_is_none(server: ChatServer, model: OpenAIChat) -> None:
    server.enqueue(completion("ok"))

    assert (await model.respond(ask())).usage is None


async def test_arguments_sent_as_an_object_are_kept(server: ChatServer, model: OpenAIChat) -> None:
    server.enqueue(completion(tool_calls=[tool_call("c1", "get_weather", {"city": "Oslo"})]))

    response = await model.respond(ask(tools=[get_weather]))

    assert response.tool_calls == [ToolCall("c1", "get_weather", '{"city": "Oslo"}')]
    assert response.problems == []


async def test_malformed_calls_become_problems(server: ChatServer, model: OpenAIChat) -> None:
    server.enqueue(
        completion(
            tool_calls=[
                {"id": "c1", "type": "function"},
                "not a call",
                {"type": "function", "function": {"name": "get_time", "arguments": "{}"}},
            ]
        )
    )

    response = await model.respond(ask(tools=[get_time]))

    assert response.problems == [
        "tool call #1 has no 'function' object",
        "tool call #2 is not an object",
    ]
    # The call without an id still gets one, since a tool message must answer it.
    assert response.tool_calls == [ToolCall("call_1_3", "get_time", "{}")]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"<html>502 Bad Gateway</html>", r"not JSON: '<html>502 Bad Gateway</html>'"),
        (b"", "empty body"),
        ({"id": "x", "object": "chat.completion"}, r"without 'choices'.*\"object\""),
        ({"id": "x", "choices": []}, "no choices"),
        ({"id": "x", "choices": "nope"}, "'choices' that is not a list"),
        ({"id": "x", "choices": [{"index": 0, "finish_reason": "stop"}]}, "no message"),
        ({"error": {"message": "model is loading"}}, "200 with an error: model is loading"),
        ([1, 2, 3], "JSON that is not an object"),
    ],
)
async def test_malformed_bodies(
    server: ChatServer, model: OpenAIChat, body: Any, expected: str
) -> None:
    server.enqueue(Reply(200, body))

    with pytest.raises(ModelResponseError, match=expected):
        await model.respond(ask())

    assert len(server.requests) == 1


async def test_long_bodies_are_cut_in_messages(server: ChatServer, model: OpenAIChat) -> None:
    server.enqueue(Reply(200, b"x" * 5000))

    with pytest.raises(ModelResponseError) as caught:
        await model.respond(ask())

    assert len(str(caught.value)) < 400


# --- retries ---------------------------------------------------------------------------


@pytest.fixture
async def patient(server: ChatServer) -> AsyncIterator[OpenAIChat]:
    """A model whose backoff is short but whose cap leaves room for Retry-After."""
    backend = connect(server.base_url, max_backoff=30)
    yield backend
    await backend.aclose()


async def test_429_then_success_honours_retry_after(
    server: ChatServer, patient: OpenAIChat
) -> None:
    server.enqueue(
        Reply(429, error_body("Rate limit reached", "requests"), headers={"Retry-After": "1"}),
        completion("ok"),
    )

    response = await patient.respond(ask())

    assert response.content == "ok"
    first, second = server.requests
    # The backoff alone would have waited at most 0.01 s.
    assert second.at - first.at >= 0.9
    assert second.json == first.json


async def test_retry_after_ms_is_read(server: ChatServer, patient: OpenAIChat) -> None:
    server.enqueue(
        Reply(503, error_body("overloaded"), headers={"retry-after-ms": "300"}),
        completion("ok"),
    )

    await patient.respond(ask())

    first, second = server.requests
    assert second.at - first.at >= 0.25


async def test_retry_after_is_capped(server: ChatServer, model: OpenAIChat) -> None:
    server.enqueue(
        Reply(429, error_body("come back in an hour"), headers={"Retry-After": "3600"}),
        completion("ok"),
    )

    # The guard only keeps a regression from hanging the suite for an hour.
    response = await asyncio.wait_for(model.respond(ask()), timeout=10)

    assert response.content == "ok"


async def test_429_repeatedly_is_a_rate_limit_error(server: ChatServer) -> None:
    server.fallback = Reply(429, error_body("Rate limit reached for gpt-test", "requests"))
    backend = connect(server.base_url, max_retries=2)

    with pytest.raises(ModelRateLimitError) as caught:
        await backend.respond(ask())
    await backend.aclose()

    assert len(server.requests) == 3
    message = str(caught.value)
    assert "429" in message
    assert "Rate limit reached for gpt-test" in message
    assert "3 attempts" in message
    import openai

    assert isinstance(caught.value.__cause__, openai.RateLimitError)


async def test_500_repeatedly_is_a_server_error(server: ChatServer) -> None:
    server.fallback = Reply(500, error_body("The server had an error", "server_error"))
    backend = connect(server.base_url, max_retries=3)

    with pytest.raises(ModelServerError) as caught:
        await backend.respond(ask())
    await backend.aclose()

    assert len(server.requests) == 4
    message = str(caught.value)
    assert "HTTP 500" in message
    assert "The server had an error" in message
    assert "4 attempts" in message
    assert server.base_url in message


async def test_503_then_success(server: ChatServer, model: OpenAIChat) -> None:
    server.enqueue(Reply(503, b"upstream unavailable"), completion("ok"))

    assert (await model.respond(ask())).content == "ok"
    assert len(server.requests) == 2


async def test_no_retries_when_max_retries_is_zero(server: ChatServer) -> None:
    server.fallback = Reply(502, b"bad gateway")
    backend = connect(server.base_url, max_retries=0)

    with pytest.raises(
        ModelServerError, match=r"HTTP 502: bad gateway \(gave up after 1 attempt\)"
    ):
        await backend.respond(ask())
    await backend.aclose()

    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [401, 403])
async def test_refused_key_is_an_auth_error_without_retry(
    server: ChatServer, model: OpenAIChat, status: int
) -> None:
    server.fallback = Reply(status, error_body("Incorrect API key provided: sk-test."))

    with pytest.raises(ModelAuthError) as caught:
        await model.respond(ask())

    assert len(server.requests) == 1
    message = str(caught.value)
    assert "refused the key" in message
    assert f"HTTP {status}" in message
    assert "Incorrect API key provided" in message


@pytest.mark.parametrize("status", [400, 404, 422])
async def test_rejected_request_is_a_bad_request_error_without_retry(
    server: ChatServer, model: OpenAIChat, status: int
) -> None:
    server.fallback = Reply(status, error_body("'messages' must contain the word 'json'"))

    with pytest.raises(ModelBadRequestError) as caught:
        await model.respond(ask())

    assert len(server.requests) == 1
    assert f"HTTP {status}: 'messages' must contain the word 'json'" in str(caught.value)


async def test_error_body_shapes_of_other_servers(server: ChatServer, model: OpenAIChat) -> None:
    # vLLM puts the message at the top level rather than under "error".
    server.enqueue(Reply(400, {"object": "error", "message": "max_tokens is too large"}))

    with pytest.raises(ModelBadRequestError, match="max_tokens is too large"):
        await model.respond(ask())


async def test_slow_answer_is_a_timeout_error(server: ChatServer) -> None:
    server.fallback = Reply(body=completion("too late"), delay=2.0)
    backend = connect(server.base_url, timeout=0.3, max_retries=1)

    with pytest.raises(ModelTimeoutError) as caught:
        await backend.respond(ask())
    await backend.aclose()

    assert len(server.requests) == 2
    assert "did not answer within 0.3 s" in str(caught.value)
    assert "2 attempts" in str(caught.value)


async def test_timeout_then_success(server: ChatServer) -> None:
    server.enqueue(Reply(body=completion("too late"), delay=2.0), completion("in time"))
    backend = connect(server.base_url, timeout=0.3)

    response = await backend.respond(ask())
    await backend.aclose()

    assert response.content == "in time"


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_connection_refused_is_a_connection_error() -> None:
    base_url = f"http://127.0.0.1:{_unused_port()}/v1"
    backend = connect(base_url, max_retries=1)

    with pytest.raises(ModelConnectionError) as caught:
        await backend.respond(ask())
    await backend.aclose()

    message = str(caught.value)
    assert f"could not reach {base_url}" in message
    assert "is the server running" in message
    assert "2 attempts" in message


# --- keys and clients ------------------------------------------------------------------


@pytest.fixture
def no_key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.mark.usefixtures("no_key_env")
def test_no_key_anywhere_is_an_auth_error() -> None:
    with pytest.raises(ModelAuthError, match=r"No API key found — pass api_key=\.\.\."):
        OpenAIChat("gpt-test")


@pytest.mark.usefixtures("no_key_env")
async def test_local_server_without_key_gets_a_placeholder(server: ChatServer) -> None:
    server.enqueue(completion("ok"))
    backend = OpenAIChat("llama3", base_url=server.base_url)

    await backend.respond(ask())
    await backend.aclose()

    assert server.requests[0].headers["authorization"].startswith("Bearer ")
    assert server.requests[0].headers["authorization"] != "Bearer "


async def test_key_from_environment(server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    server.enqueue(completion("ok"))
    backend = OpenAIChat("gpt-test", base_url=server.base_url)

    await backend.respond(ask())
    await backend.aclose()

    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"


async def test_passed_client_is_used_without_its_retries_and_left_open(
    server: ChatServer,
) -> None:
    server.fallback = Reply(500, error_body("boom", "server_error"))
    import openai

    client = openai.AsyncOpenAI(api_key="sk-client", base_url=server.base_url, max_retries=5)
    backend = OpenAIChat("gpt-test", client=client, max_retries=1, backoff=0.01)

    with pytest.raises(ModelServerError):
        await backend.respond(ask())
    await backend.aclose()

    assert len(server.requests) == 2
    assert server.requests[0].headers["authorization"] == "Bearer sk-client"
    assert not client.is_closed()
    await client.close()


async def test_aclose_closes_its_own_client(server: ChatServer) -> None:
    server.enqueue(completion("ok"))
    backend = connect(server.base_url)
    await backend.respond(ask())

    await backend.aclose()

    assert backend.client.is_closed()
    with pytest.raises(UsageError, match="was closed"):
        await backend.respond(ask())
