"""`OpenAIChat` end to end against llama-cpp-python's real OpenAI-compatible server.

The server runs the embedded SmolLM2-135M on 127.0.0.1 with the
``chatml-function-calling`` chat format, at temperature 0 so runs repeat.
Under ``tool_choice="auto"`` that format lets the model pick a tool by name
only (without a system message it never shows the schemas); asked about the
weather in Paris, it picks ``get_current_weather`` with ``"Paris"``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import jsonschema
import pytest

from examples.seed_tools import toolbox
from tooluse import Agent, Message, ToolCall
from tooluse._exceptions import ModelConnectionError
from tooluse.models import ModelRequest, OpenAIChat
from tooluse.tools import Tool, Toolbox

from ._llama_server import LlamaServer, free_port
from ._relay import Relay

MODEL = "smollm2-135m"
# greedy decoding, so the same request gets the same reply
DETERMINISTIC = {"temperature": 0, "seed": 0}


def connect(base_url: str, **options: Any) -> OpenAIChat:
    """A backend for the local server; `options` override the retry settings."""
    settings: dict[str, Any] = {
        "api_key": "x",
        "timeout": 120.0,
        "max_retries": 0,
        "backoff": 0.05,
        "max_backoff": 1.0,
        "extra_body": DETERMINISTIC,
    }
    return OpenAIChat(MODEL, base_url=base_url, **(settings | options))


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaServer]:
    with LlamaServer() as running:
        yield running


@pytest.fixture
def fresh_server() -> Iterator[LlamaServer]:
    """A server of the test's own, for tests that take it down."""
    with LlamaServer() as running:
        yield running


@pytest.fixture
async def model(server: LlamaServer) -> AsyncIterator[OpenAIChat]:
    backend = connect(server.base_url)
    yield backend
    await backend.aclose()


def ask(text: str, **kwargs: Any) -> ModelRequest:
    return ModelRequest(messages=[Message("user", text)], **kwargs)


# --- one request -----------------------------------------------------------------------


async def test_named_tool_choice_returns_one_valid_call(model: OpenAIChat) -> None:
    weather = toolbox.get("get_current_weather")
    assert weather is not None

    response = await model.respond(
        ask(
            "What is the weather in Paris?",
            tools=list(toolbox),
            tool_choice="get_current_weather",
            max_output_tokens=64,
        )
    )

    [call] = response.tool_calls
    assert call.name == "get_current_weather"
    arguments = json.loads(call.arguments)
    jsonschema.validate(arguments, weather.parameters)
    assert "paris" in arguments["location"].lower()
    assert isinstance(call.id, str) and call.id
    assert response.finish_reason == "tool_calls"
    assert response.content is None
    assert response.problems == []
    assert response.model_name == MODEL
    assert str(response.raw["id"]).startswith("chatcmpl-")


async def test_usage_is_reported_by_the_server(model: OpenAIChat) -> None:
    cap = 8

    response = await model.respond(ask("Write a long story about a dragon.", max_output_tokens=cap))

    usage = response.usage
    assert usage is not None
    assert usage.source == "provider"
    assert usage.input_tokens > 0
    assert 0 < usage.output_tokens <= cap
    # the story needs more than the cap, so the server stopped at it
    assert response.finish_reason == "length"
    assert response.content


async def test_conversation_after_a_tool_call_is_accepted(model: OpenAIChat) -> None:
    call = ToolCall("call_1", "get_current_weather", '{"location": "Paris"}')
    messages = [
        Message("user", "What is the weather in Paris?"),
        Message("assistant", None, tool_calls=(call,)),
        Message("tool", '{"temperature": 18.0}', tool_call_id="call_1", name=call.name),
    ]

    response = await model.respond(
        ModelRequest(messages, list(toolbox), tool_choice="none", max_output_tokens=16)
    )

    assert response.content


# --- an agent run ----------------------------------------------------------------------


async def test_agent_executes_the_call_the_server_makes(model: OpenAIChat) -> None:
    # Two rounds: the server accepts the conversation after the call. It leaves
    # tool results out of its prompt, so at temperature 0 it asks for the same
    # call again, which is run too, and the run ends at its round limit.
    agent = Agent(model, toolbox, max_rounds=2)

    result = await agent.arun("What is the weather in Paris?")

    assert result.status == "max_rounds", result.error
    assert result.rounds == 2 and result.answer is None
    assert [c.name for c in result.calls] == ["get_current_weather"] * 2
    assert result.calls[1].arguments == result.calls[0].arguments
    assert result.calls[1].result == result.calls[0].result
    record = result.calls[0]
    assert record.name == "get_current_weather"
    assert record.error is None
    assert "paris" in record.arguments["location"].lower()
    assert record.result["temperature"] == 18.0
    assert record.result["conditions"] == "partly cloudy"
    user, assistant, answer = result.messages[:3]
    assert (user.role, user.content) == ("user", "What is the weather in Paris?")
    [asked] = assistant.tool_calls
    assert asked.id == record.id
    assert json.loads(asked.arguments) == record.arguments
    assert answer.role == "tool"
    assert answer.tool_call_id == record.id
    assert answer.content == record.content
    assert result.usage.source == "provider"
    assert result.usage.output_tokens > 0


# --- the server goes away --------------------------------------------------------------


def stopping_weather(server: LlamaServer, stops: list[str]) -> Tool:
    """The seed weather tool, stopping `server` before it answers."""
    weather = toolbox.get("get_current_weather")
    assert weather is not None

    def stop_then_answer(**arguments: Any) -> Any:
        server.stop()
        stops.append(server.base_url)
        return weather.function(**arguments)

    return dataclasses.replace(weather, function=stop_then_answer)


async def test_server_stopped_by_a_tool_ends_the_run_with_an_error(
    fresh_server: LlamaServer,
) -> None:
    stops: list[str] = []
    # The same tools in the same order as the seed toolbox, so the model picks the same call.
    tools = Toolbox(
        stopping_weather(fresh_server, stops) if t.name == "get_current_weather" else t
        for t in toolbox
    )
    backend = connect(fresh_server.base_url, max_retries=2, backoff=0.2)
    agent = Agent(backend, tools, max_rounds=3)

    result = await agent.arun("What is the weather in Paris?")
    await backend.aclose()

    # The run came back as a result, so the host survived the lost server.
    assert not fresh_server.running
    assert result.status == "error"
    assert result.rounds == 2
    error = result.error or ""
    assert error.startswith("ModelConnectionError: ")
    assert f"could not reach {fresh_server.base_url}" in error
    assert "is the server running" in error
    # the first request after the stop and both retries were refused
    assert "gave up after 3 attempts" in error
    assert stops == [fresh_server.base_url]
    # What was done before the server went is kept.
    [record] = result.calls
    assert record.name == "get_current_weather"
    assert record.error is None
    assert record.result["conditions"] == "partly cloudy"
    answer = result.messages[-1]
    assert answer.role == "tool"
    assert answer.tool_call_id == record.id
    assert answer.content == record.content


async def test_server_killed_while_generating_is_a_connection_error(
    fresh_server: LlamaServer,
) -> None:
    relay = Relay(fresh_server.port)
    backend = connect(
        relay.base_url,
        max_retries=2,
        # Banning <|endoftext|> (0) and <|im_end|> (2) keeps the model writing until killed.
        extra_body=DETERMINISTIC | {"logit_bias": {"0": -100, "2": -100}},
    )

    attempt = asyncio.create_task(
        backend.respond(ask("Count from 1 to 1000.", max_output_tokens=1500))
    )
    assert await asyncio.to_thread(relay.requested.wait, 120)
    fresh_server.kill()
    with pytest.raises(ModelConnectionError) as caught:
        await attempt
    await backend.aclose()
    relay.close()

    # The first attempt reached the server and was waiting for its answer when the
    # server died; the two retries found nothing listening.
    assert relay.connections == 3
    assert relay.replied[0] == 0
    message = str(caught.value)
    assert f"could not reach {relay.base_url}" in message
    assert "gave up after 3 attempts" in message


async def test_server_down_from_the_start_fails_fast() -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    backend = connect(base_url, max_retries=2, backoff=0.1, timeout=30.0)

    with pytest.raises(ModelConnectionError) as caught:
        await backend.respond(ask("Hi"))
    await backend.aclose()

    message = str(caught.value)
    assert f"could not reach {base_url}" in message
    assert "gave up after 3 attempts" in message
    assert "is the server running" in message
    # Refused each time, not left waiting: a wait would have ended as a timeout.
    assert type(caught.value) is ModelConnectionError
    assert "all connection attempts failed" in message.lower()


async def test_same_backend_answers_after_the_server_restarts(fresh_server: LlamaServer) -> None:
    # No retries: a connection pooled from the old process must not cost the request.
    backend = connect(fresh_server.base_url, max_retries=0)
    request = ask("Say hello.", max_output_tokens=4)
    before = await backend.respond(request)

    fresh_server.stop()
    fresh_server.start()
    after = await backend.respond(request)
    await backend.aclose()

    assert after.content == before.content
    assert after.raw["id"] != before.raw["id"]
