"""`AnthropicChat` against a real HTTP server on loopback speaking the Messages API."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from examples.seed_tools import toolbox as seed_tools
from tooluse import Agent
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
from tooluse.models import AnthropicChat, resolve_model
from tooluse.models._base import ModelRequest
from tooluse.tools import Tool, tool
from tooluse.tools._render import to_anthropic

from ._dotted import dotted_factorial
from ._messages_server import (
    MessagesServer,
    Received,
    Reply,
    error_body,
    message,
    text,
    tool_use,
)


def connect(base_url: str, **options: Any) -> AnthropicChat:
    """A backend with a test key and backoff too short to slow the suite.

    Every test that waits does so for the behaviour under test, never for backoff.
    """
    settings: dict[str, Any] = {"api_key": "sk-ant-test", "backoff": 0.01, "max_backoff": 0.05}
    return AnthropicChat("claude-test", base_url=base_url, **(settings | options))


def sent_key(received: Received) -> str:
    # The SDK has sent the key as x-api-key, and lately as a bearer token.
    if "x-api-key" in received.headers:
        return received.headers["x-api-key"]
    return received.headers.get("authorization", "").removeprefix("Bearer ")


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
def server() -> Iterator[MessagesServer]:
    srv = MessagesServer().start()
    yield srv
    srv.stop()
    assert srv.violations == [], "a request broke the Messages API's rules"


@pytest.fixture
async def model(server: MessagesServer) -> AsyncIterator[AnthropicChat]:
    backend = connect(server.base_url)
    yield backend
    await backend.aclose()


def ask(content: str = "Hi", **kwargs: Any) -> ModelRequest:
    return ModelRequest(messages=[Message("user", content)], **kwargs)


# --- what is sent ----------------------------------------------------------------------


async def test_text_answer(server: MessagesServer, model: AnthropicChat) -> None:
    server.enqueue(message(text("Hello "), text("there"), model="claude-test-2025"))
    messages = [Message("system", "Be brief."), Message("user", "Hi")]

    response = await model.respond(ModelRequest(messages=messages))

    assert response.content == "Hello there"
    assert response.tool_calls == []
    assert response.finish_reason == "end_turn"
    assert response.model_name == "claude-test-2025"
    assert response.problems == []
    assert response.raw["id"] == "msg_test"
    [sent] = server.requests
    assert sent.method == "POST"
    assert sent.path == "/v1/messages"
    assert sent_key(sent) == "sk-ant-test"
    assert sent.headers["anthropic-version"]
    assert sent.json == {
        "model": "claude-test",
        "max_tokens": 1024,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Hi"}],
    }


def test_name_says_backend_and_model() -> None:
    assert AnthropicChat("claude-x", api_key="k").name == "anthropic:claude-x"


async def test_tools_choice_and_limits_are_sent(server: MessagesServer) -> None:
    server.enqueue(message(text("ok")))
    backend = connect(server.base_url, max_tokens=2048)
    request = ask(
        tools=[get_weather, get_time], tool_choice="required", max_output_tokens=64, temperature=0.2
    )

    await backend.respond(request)
    await backend.aclose()

    sent = server.requests[0].json
    assert sent["tools"] == [to_anthropic(get_weather), to_anthropic(get_time)]
    assert sent["tools"][0]["input_schema"]["properties"]["city"] == {
        "type": "string",
        "description": "The city name.",
    }
    assert sent["tool_choice"] == {"type": "any"}
    assert sent["max_tokens"] == 64
    assert sent["temperature"] == 0.2


async def test_tool_examples_are_sent_as_input_examples(server: MessagesServer) -> None:
    @tool(
        examples=[
            {"arguments": {"city": "Madrid"}, "result": "sunny in Madrid"},
            {"arguments": {"city": "Oslo", "unit": "fahrenheit"}},
        ]
    )
    def weather(city: str, unit: str = "celsius") -> str:
        """Current weather for a city.

        Args:
            city: The city name.
            unit: celsius or fahrenheit.
        """
        return f"sunny in {city}"

    server.enqueue(message(text("ok")))
    backend = connect(server.base_url)

    await backend.respond(ask(tools=[weather, get_time]))
    await backend.aclose()

    # The server checks each example against the tool's input_schema, as the API does.
    assert server.violations == []
    [sent, plain] = server.requests[0].json["tools"]
    assert sent == {
        "name": "weather",
        "description": "Current weather for a city.",
        "input_schema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city name."},
                "unit": {
                    "type": "string",
                    "description": "celsius or fahrenheit.",
                    "default": "celsius",
                },
            },
            "required": ["city"],
        },
        "input_examples": [{"city": "Madrid"}, {"city": "Oslo", "unit": "fahrenheit"}],
    }
    assert "input_examples" not in plain


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("get_time", {"type": "tool", "name": "get_time"}),
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
    ],
)
async def test_tool_choice_mapping(
    server: MessagesServer, model: AnthropicChat, choice: str, expected: dict[str, str]
) -> None:
    server.enqueue(message(tool_use("toolu_1", "get_time", {"timezone": "UTC"})))

    await model.respond(ask(tools=[get_weather, get_time], tool_choice=choice))

    assert server.requests[0].json["tool_choice"] == expected


async def test_one_call_per_reply_disables_parallel_tool_use(
    server: MessagesServer, model: AnthropicChat
) -> None:
    server.enqueue(message(text("ok")))

    await model.respond(ask(tools=[get_weather], tool_choice="required", parallel_tool_calls=False))

    assert server.requests[0].json["tool_choice"] == {
        "type": "any",
        "disable_parallel_tool_use": True,
    }


async def test_no_tools_means_no_tools_field(server: MessagesServer, model: AnthropicChat) -> None:
    server.enqueue(message(text("ok")))

    await model.respond(ask(tool_choice="none"))

    assert "tools" not in server.requests[0].json
    assert "tool_choice" not in server.requests[0].json


@pytest.mark.parametrize(
    ("tools", "choice"),
    [([get_weather], "get_time"), ([], "required"), ([], "get_weather")],
)
async def test_impossible_tool_choice_is_a_usage_error(
    server: MessagesServer, model: AnthropicChat, tools: list[Tool], choice: str
) -> None:
    with pytest.raises(UsageError, match="tool_choice"):
        await model.respond(ask(tools=tools, tool_choice=choice))

    assert server.requests == []


async def test_conversation_with_tool_results_is_sent_in_wire_shape(
    server: MessagesServer, model: AnthropicChat
) -> None:
    server.enqueue(message(text("It is sunny in Oslo; Bergen is unknown.")))
    messages = [
        Message("system", "Be brief."),
        Message("user", "Weather in Oslo and Bergen?"),
        Message(
            "assistant",
            "Checking both.",
            tool_calls=(
                ToolCall("toolu_1", "get_weather", '{"city": "Oslo"}'),
                ToolCall("toolu_2", "get_weather", '{"city": "Bergen"'),
            ),
        ),
        Message("tool", "sunny in Oslo", tool_call_id="toolu_1", name="get_weather"),
        Message(
            "tool",
            "Error: no station in Bergen",
            tool_call_id="toolu_2",
            name="get_weather",
            is_error=True,
        ),
        Message("user", "Note: keep it short."),
        # an empty reply, then the feedback it got
        Message("assistant", None),
        Message("user", "Your last reply was empty."),
        # a script's output answers no tool_use
        Message("assistant", "```python\nprint(1)\n```"),
        Message("tool", "1", tool_call_id="script_1", name="python"),
        Message("system", "Context was compressed."),
    ]

    await model.respond(ModelRequest(messages=messages, tools=[get_weather]))

    sent = server.requests[0].json
    assert sent["system"] == "Be brief."
    assert sent["messages"] == [
        {"role": "user", "content": "Weather in Oslo and Bergen?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking both."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "get_weather",
                    # arguments that are not JSON stay visible, in an object the API accepts
                    "input": {"_raw": '{"city": "Bergen"'},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny in Oslo"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "Error: no station in Bergen",
                    "is_error": True,
                },
                {"type": "text", "text": "Note: keep it short."},
                {"type": "text", "text": "Your last reply was empty."},
            ],
        },
        {"role": "assistant", "content": "```python\nprint(1)\n```"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Output of python:\n1"},
                {"type": "text", "text": "Context was compressed."},
            ],
        },
    ]


async def test_the_test_server_rejects_what_the_api_rejects(server: MessagesServer) -> None:
    import anthropic

    client = anthropic.AsyncAnthropic(api_key="k", base_url=server.base_url, max_retries=0)
    dangling = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [tool_use("toolu_1", "get_time", {})]},
        {"role": "user", "content": "and?"},
    ]

    with pytest.raises(anthropic.BadRequestError, match="without tool_result blocks"):
        await client.messages.create(model="m", max_tokens=8, messages=dangling)  # type: ignore[arg-type]
    await client.close()

    assert len(server.violations) == 1
    server.violations.clear()


# --- what is read ----------------------------------------------------------------------


async def test_tool_use(server: MessagesServer, model: AnthropicChat) -> None:
    server.enqueue(message(tool_use("toolu_abc", "get_weather", {"city": "Oslo"})))

    response = await model.respond(ask(tools=[get_weather]))

    assert response.content is None
    assert response.tool_calls == [ToolCall("toolu_abc", "get_weather", '{"city": "Oslo"}')]
    assert response.finish_reason == "tool_use"
    assert response.problems == []


async def test_parallel_tool_use(server: MessagesServer, model: AnthropicChat) -> None:
    server.enqueue(
        message(
            {"type": "thinking", "thinking": "both at once", "signature": "sig"},
            text("Checking both."),
            tool_use("toolu_1", "get_weather", {"city": "Zürich"}),
            tool_use("toolu_2", "get_time", {"timezone": "Europe/Zurich"}),
        )
    )

    response = await model.respond(ask(tools=[get_weather, get_time]))

    assert response.content == "Checking both."
    assert response.tool_calls == [
        ToolCall("toolu_1", "get_weather", '{"city": "Zürich"}'),
        ToolCall("toolu_2", "get_time", '{"timezone": "Europe/Zurich"}'),
    ]


async def test_usage_is_provider_usage_with_cached_tokens(
    server: MessagesServer, model: AnthropicChat
) -> None:
    server.enqueue(
        message(
            text("ok"),
            usage={
                "input_tokens": 31,
                "output_tokens": 7,
                "cache_creation_input_tokens": 100,
                "cache_read_input_tokens": 1000,
            },
        ),
        message(text("ok"), usage={"input_tokens": 12, "output_tokens": 3}),
    )

    first = await model.respond(ask())
    second = await model.respond(ask())

    assert first.usage == Usage(input_tokens=1131, output_tokens=7, source="provider")
    assert second.usage == Usage(input_tokens=12, output_tokens=3, source="provider")


async def test_missing_usage_is_none(server: MessagesServer, model: AnthropicChat) -> None:
    body = message(text("ok"))
    del body["usage"]
    server.enqueue(body)

    assert (await model.respond(ask())).usage is None


async def test_odd_blocks_become_problems_or_are_filled_in(
    server: MessagesServer, model: AnthropicChat
) -> None:
    server.enqueue(
        message(
            "not a block",  # type: ignore[arg-type]
            {"type": "tool_use", "name": "get_time", "input": {"timezone": "UTC"}},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            stop_reason="tool_use",
        )
    )

    response = await model.respond(ask(tools=[get_time]))

    assert response.problems == ["content block #1 is not an object"]
    # The call without an id still gets one, since a tool message must answer it.
    assert response.tool_calls == [ToolCall("toolu_1_2", "get_time", '{"timezone": "UTC"}')]


async def test_empty_content_is_an_empty_reply(
    server: MessagesServer, model: AnthropicChat
) -> None:
    server.enqueue(message(stop_reason="max_tokens"))

    response = await model.respond(ask())

    assert response.content is None and response.tool_calls == []
    assert response.finish_reason == "max_tokens"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"<html>502 Bad Gateway</html>", r"not JSON: '<html>502 Bad Gateway</html>'"),
        (b"", "empty body"),
        ({"id": "x", "type": "message"}, r"without 'content'.*\"message\""),
        ({"id": "x", "type": "message", "content": "hello"}, "'content' that is not a list"),
        (error_body("Overloaded", "overloaded_error"), "200 with an error: Overloaded"),
        ([1, 2, 3], "JSON that is not an object"),
    ],
)
async def test_malformed_bodies(
    server: MessagesServer, model: AnthropicChat, body: Any, expected: str
) -> None:
    server.enqueue(Reply(200, body))

    with pytest.raises(ModelResponseError, match=expected):
        await model.respond(ask())

    assert len(server.requests) == 1


async def test_long_bodies_are_cut_in_messages(
    server: MessagesServer, model: AnthropicChat
) -> None:
    server.enqueue(Reply(200, b"x" * 5000))

    with pytest.raises(ModelResponseError) as caught:
        await model.respond(ask())

    assert len(str(caught.value)) < 400


# --- retries ---------------------------------------------------------------------------


@pytest.fixture
async def patient(server: MessagesServer) -> AsyncIterator[AnthropicChat]:
    """A model whose backoff is short but whose cap leaves room for Retry-After."""
    backend = connect(server.base_url, max_backoff=30)
    yield backend
    await backend.aclose()


async def test_429_then_success_honours_retry_after(
    server: MessagesServer, patient: AnthropicChat
) -> None:
    server.enqueue(
        Reply(
            429, error_body("Number of requests exceeded", "rate_limit_error"), {"retry-after": "1"}
        ),
        message(text("ok")),
    )

    response = await patient.respond(ask())

    assert response.content == "ok"
    first, second = server.requests
    # The backoff alone would have waited at most 0.01 s.
    assert second.at - first.at >= 0.9
    assert second.json == first.json


async def test_529_overloaded_is_retried(server: MessagesServer, model: AnthropicChat) -> None:
    server.enqueue(
        Reply(529, error_body("Overloaded", "overloaded_error")),
        Reply(529, error_body("Overloaded", "overloaded_error")),
        message(text("ok")),
    )

    assert (await model.respond(ask())).content == "ok"
    assert len(server.requests) == 3


async def test_529_repeatedly_is_a_server_error(server: MessagesServer) -> None:
    server.fallback = Reply(529, error_body("Overloaded", "overloaded_error"))
    backend = connect(server.base_url, max_retries=2)

    with pytest.raises(ModelServerError) as caught:
        await backend.respond(ask())
    await backend.aclose()

    assert len(server.requests) == 3
    message_ = str(caught.value)
    assert "is overloaded (HTTP 529: Overloaded)" in message_
    assert "3 attempts" in message_
    import anthropic

    assert isinstance(caught.value.__cause__, anthropic.InternalServerError)


async def test_429_repeatedly_is_a_rate_limit_error(server: MessagesServer) -> None:
    server.fallback = Reply(429, error_body("Number of requests exceeded", "rate_limit_error"))
    backend = connect(server.base_url, max_retries=1)

    with pytest.raises(ModelRateLimitError) as caught:
        await backend.respond(ask())
    await backend.aclose()

    assert len(server.requests) == 2
    assert "429 Too Many Requests: Number of requests exceeded" in str(caught.value)
    import anthropic

    assert isinstance(caught.value.__cause__, anthropic.RateLimitError)


async def test_500_then_success(server: MessagesServer, model: AnthropicChat) -> None:
    server.enqueue(
        Reply(500, error_body("Internal server error", "api_error")), message(text("ok"))
    )

    assert (await model.respond(ask())).content == "ok"
    assert len(server.requests) == 2


async def test_no_retries_when_max_retries_is_zero(server: MessagesServer) -> None:
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
    server: MessagesServer, model: AnthropicChat, status: int
) -> None:
    server.fallback = Reply(status, error_body("invalid x-api-key", "authentication_error"))

    with pytest.raises(ModelAuthError) as caught:
        await model.respond(ask())

    assert len(server.requests) == 1
    message_ = str(caught.value)
    assert f"refused the key (HTTP {status}: invalid x-api-key)" in message_
    assert "ANTHROPIC_API_KEY" in message_


@pytest.mark.parametrize("status", [400, 404, 413])
async def test_rejected_request_is_a_bad_request_error_without_retry(
    server: MessagesServer, model: AnthropicChat, status: int
) -> None:
    server.fallback = Reply(status, error_body("messages.1.content: Input should be a list"))

    with pytest.raises(ModelBadRequestError) as caught:
        await model.respond(ask())

    assert len(server.requests) == 1
    assert f"HTTP {status}: messages.1.content: Input should be a list" in str(caught.value)


async def test_slow_answer_is_a_timeout_error(server: MessagesServer) -> None:
    server.fallback = Reply(body=message(text("too late")), delay=2.0)
    backend = connect(server.base_url, timeout=0.3, max_retries=1)

    with pytest.raises(ModelTimeoutError) as caught:
        await backend.respond(ask())
    await backend.aclose()

    assert len(server.requests) == 2
    assert "did not answer within 0.3 s" in str(caught.value)
    assert "2 attempts" in str(caught.value)


async def test_timeout_then_success(server: MessagesServer) -> None:
    server.enqueue(Reply(body=message(text("too late")), delay=2.0), message(text("in time")))
    backend = connect(server.base_url, timeout=0.3)

    response = await backend.respond(ask())
    await backend.aclose()

    assert response.content == "in time"


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_connection_refused_is_a_connection_error() -> None:
    base_url = f"http://127.0.0.1:{_unused_port()}"
    backend = connect(base_url, max_retries=1)

    with pytest.raises(ModelConnectionError) as caught:
        await backend.respond(ask())
    await backend.aclose()

    message_ = str(caught.value)
    assert f"could not reach {base_url}" in message_
    assert "is the server running" in message_
    assert "2 attempts" in message_


async def test_retry_after_is_capped(server: MessagesServer, model: AnthropicChat) -> None:
    server.enqueue(
        Reply(429, error_body("come back in an hour", "rate_limit_error"), {"retry-after": "3600"}),
        message(text("ok")),
    )

    # The guard only keeps a regression from hanging the suite for an hour.
    response = await asyncio.wait_for(model.respond(ask()), timeout=10)

    assert response.content == "ok"


# --- keys, clients, specs --------------------------------------------------------------


@pytest.fixture
def no_key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_key_env")
def test_no_key_anywhere_is_an_auth_error() -> None:
    with pytest.raises(ModelAuthError, match=r"No API key found — pass api_key=\.\.\."):
        AnthropicChat("claude-test")


@pytest.mark.usefixtures("no_key_env")
async def test_gateway_without_key_gets_a_placeholder(server: MessagesServer) -> None:
    server.enqueue(message(text("ok")))
    backend = AnthropicChat("claude-test", base_url=server.base_url)

    await backend.respond(ask())
    await backend.aclose()

    assert sent_key(server.requests[0])


async def test_key_from_environment(
    server: MessagesServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    server.enqueue(message(text("ok")))
    backend = AnthropicChat("claude-test", base_url=server.base_url)

    await backend.respond(ask())
    await backend.aclose()

    assert sent_key(server.requests[0]) == "sk-ant-from-env"


async def test_passed_client_is_used_without_its_retries_and_left_open(
    server: MessagesServer,
) -> None:
    server.fallback = Reply(500, error_body("boom", "api_error"))
    import anthropic

    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-client", base_url=server.base_url, max_retries=5
    )
    backend = AnthropicChat("claude-test", client=client, max_retries=1, backoff=0.01)

    with pytest.raises(ModelServerError):
        await backend.respond(ask())
    await backend.aclose()

    assert len(server.requests) == 2
    assert sent_key(server.requests[0]) == "sk-ant-client"
    assert not client.is_closed()
    await client.close()


async def test_aclose_closes_its_own_client(server: MessagesServer) -> None:
    server.enqueue(message(text("ok")))
    backend = connect(server.base_url)
    await backend.respond(ask())

    await backend.aclose()

    assert backend.client.is_closed()
    with pytest.raises(UsageError, match="was closed"):
        await backend.respond(ask())


async def test_model_spec() -> None:
    backend = resolve_model("anthropic:claude-x", base_url="http://127.0.0.1:9", api_key="k")
    assert isinstance(backend, AnthropicChat) and backend.name == "anthropic:claude-x"
    await backend.aclose()
    with pytest.raises(UsageError, match="anthropic needs a model name"):
        resolve_model("anthropic:")
    with pytest.raises(UsageError, match="anthropic:MODEL"):
        resolve_model("claude:x")


# --- the agent over the wire -----------------------------------------------------------


async def test_agent_runs_over_the_wire(server: MessagesServer) -> None:
    server.enqueue(
        message(
            tool_use("toolu_a", "get_exchange_rate", {"base": "USD", "traget": "EUR"}),
            usage={"input_tokens": 410, "output_tokens": 21},
        ),
        message(
            text("Let me fix that and compute."),
            tool_use("toolu_b", "get_exchange_rate", {"base": "USD", "target": "EUR"}),
            tool_use("toolu_c", "calculator", {"expression": "100 * 0.92 - 85"}),
            usage={"input_tokens": 470, "output_tokens": 40},
        ),
        message(
            text("Yes: 92 EUR, 7 EUR to spare."), usage={"input_tokens": 530, "output_tokens": 9}
        ),
    )
    backend = connect(server.base_url)

    result = await Agent(backend, seed_tools).arun("Convert 100 USD to EUR; enough for 85?")
    await backend.aclose()

    assert result.status == "completed" and result.answer == "Yes: 92 EUR, 7 EUR to spare."
    assert [c.result for c in result.calls] == [0.92, 7.0]
    assert result.usage.source == "provider" and result.usage.input_tokens == 1410
    second = server.requests[1].json
    assert [t["name"] for t in second["tools"]] == seed_tools.names
    [refused] = second["messages"][-1]["content"]
    assert refused["tool_use_id"] == "toolu_a" and refused["is_error"] is True
    assert "did you mean 'target'" in refused["content"]
    third = server.requests[2].json["messages"]
    assert [m["role"] for m in third] == ["user", "assistant", "user", "assistant", "user"]
    assert [b["tool_use_id"] for b in third[-1]["content"]] == ["toolu_b", "toolu_c"]
    assert [b["content"] for b in third[-1]["content"]] == ["0.92", "7.0"]
    assert not any(b.get("is_error") for b in third[-1]["content"])


@tool
def read_log(line: int) -> str:
    """Return one line of the service log.

    Args:
        line: the line number, from 1
    """
    if line > 2:
        raise IndexError(f"the log has 2 lines, not {line}")
    return ["Error: disk full at 03:12", "recovered at 03:15"][line - 1]


async def test_error_flag_follows_the_call_not_the_text(server: MessagesServer) -> None:
    server.enqueue(
        message(
            tool_use("toolu_a", "read_log", {"line": 1}),
            tool_use("toolu_b", "read_log", {"line": 9}),
        ),
        message(text("The disk filled up at 03:12.")),
    )
    backend = connect(server.base_url)

    result = await Agent(backend, [read_log]).arun("What went wrong last night?")
    await backend.aclose()

    assert result.status == "completed"
    results = server.requests[1].json["messages"][-1]["content"]
    succeeded, failed = results
    assert succeeded["tool_use_id"] == "toolu_a"
    assert succeeded["content"] == "Error: disk full at 03:12"
    assert "is_error" not in succeeded
    assert failed["tool_use_id"] == "toolu_b"
    assert failed["content"].startswith("Error: read_log failed: IndexError")
    assert failed["is_error"] is True


async def test_agent_with_the_text_convention_over_the_wire(server: MessagesServer) -> None:
    server.enqueue(
        message(text("[lookup_capital(country='Kenya'), lookup_capital(country='Japan')]")),
        message(text("Nairobi and Tokyo.")),
    )
    backend = connect(server.base_url)

    result = await Agent(backend, seed_tools, convention="text").arun("Capitals of Kenya, Japan?")
    await backend.aclose()

    assert result.status == "completed" and [c.result for c in result.calls] == [
        "Nairobi",
        "Tokyo",
    ]
    second = server.requests[1].json
    assert "tools" not in second
    assert "lookup_capital(country: str)" in second["system"]
    assert second["messages"][1:] == [
        {
            "role": "assistant",
            "content": "[lookup_capital(country='Kenya'), lookup_capital(country='Japan')]",
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Output of lookup_capital:\nNairobi"},
                {"type": "text", "text": "Output of lookup_capital:\nTokyo"},
            ],
        },
    ]


async def test_server_failure_mid_run_keeps_what_was_done(server: MessagesServer) -> None:
    server.enqueue(
        message(tool_use("toolu_a", "lookup_capital", {"country": "Kenya"})),
        Reply(400, error_body("prompt is too long: 210000 tokens > 200000 maximum")),
    )
    backend = connect(server.base_url, max_retries=0)

    result = await Agent(backend, seed_tools).arun("capital of Kenya")
    await backend.aclose()

    assert result.status == "error" and "prompt is too long" in (result.error or "")
    assert [c.result for c in result.calls] == ["Nairobi"]


async def test_dotted_tool_names_are_mapped_on_the_wire_and_back(server: MessagesServer) -> None:
    seen: list[int] = []
    server.enqueue(
        message(tool_use("toolu_a", "math_factorial", {"number": 5})),
        message(text("120")),
    )
    backend = connect(server.base_url)
    agent = Agent(backend, [dotted_factorial(seen)], tool_choice="math.factorial")
    result = await agent.arun("5!")
    await backend.aclose()
    assert server.violations == []
    assert result.status == "completed" and seen == [5]
    assert [c.name for c in result.calls] == ["math.factorial"]
    first, second = (r.json for r in server.requests)
    assert [t["name"] for t in first["tools"]] == ["math_factorial"]
    assert first["tool_choice"] == {"type": "tool", "name": "math_factorial"}
    [history_call] = [b for b in second["messages"][1]["content"] if b["type"] == "tool_use"]
    assert history_call["name"] == "math_factorial"


async def test_the_test_server_refuses_a_name_the_api_refuses(server: MessagesServer) -> None:
    import anthropic

    client = anthropic.AsyncAnthropic(api_key="k", base_url=server.base_url, max_retries=0)
    tool = {"name": "math.factorial", "input_schema": {"type": "object"}}
    with pytest.raises(anthropic.BadRequestError, match="should match pattern"):
        await client.messages.create(
            model="m",
            max_tokens=8,
            messages=[{"role": "user", "content": "Hi"}],
            tools=[tool],  # type: ignore[list-item]
        )
    await client.close()
    server.violations.clear()
