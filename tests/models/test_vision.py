"""Images from tool results on the wire: image content for a model that can see, the
description alone for one that cannot (OpenAI and Anthropic, against loopback servers)."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from tooluse import Agent, Image, Toolbox, tool
from tooluse.models import AnthropicChat, OpenAIChat

from ._chat_server import ChatServer, Reply, completion, tool_call
from ._chat_server import error_body as chat_error
from ._messages_server import MessagesServer, message, text, tool_use
from ._messages_server import error_body as messages_error


def png(width: int, height: int) -> bytes:
    """A real PNG of `width`×`height` grey pixels, made with zlib alone."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body))
        return struct.pack(">I", len(body)) + kind + body + crc

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    idat = chunk(b"IDAT", zlib.compress(rows))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + idat + chunk(b"IEND", b"")


PICTURE = png(4, 3)
B64 = base64.b64encode(PICTURE).decode()


@tool
def snap() -> Image:
    """Take a picture."""
    return Image(PICTURE, "image/png")


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    srv = ChatServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def messages_server() -> Iterator[MessagesServer]:
    srv = MessagesServer().start()
    yield srv
    srv.stop()


async def openai_round_two(server: ChatServer, vision: bool) -> list[dict[str, Any]]:
    server.enqueue(completion(tool_calls=[tool_call("a", "snap", {})]), completion("grey"))
    model = OpenAIChat("m", base_url=server.base_url, api_key="k", vision=vision)
    result = await Agent(model, Toolbox([snap])).arun("what colour?")
    await model.aclose()
    assert result.status == "completed", result.error
    sent: list[dict[str, Any]] = server.requests[1].json["messages"]
    return sent


async def test_openai_vision_sends_the_image_in_a_user_message_after_the_tool_message(
    chat: ChatServer,
) -> None:
    sent = await openai_round_two(chat, vision=True)
    tool_message, images = sent[-2], sent[-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "a"
    assert tool_message["content"].startswith("[image/png 4×3, ")
    assert B64 not in tool_message["content"]
    assert images["role"] == "user"
    assert images["content"][-1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{B64}"},
    }
    assert images["content"][-2]["text"] == tool_message["content"]


async def test_openai_without_vision_sends_the_description_alone(chat: ChatServer) -> None:
    sent = await openai_round_two(chat, vision=False)
    assert sent[-1]["role"] == "tool"
    assert sent[-1]["content"].startswith("[image/png 4×3, ")
    assert B64 not in json.dumps(sent) and "image_url" not in json.dumps(sent)


async def anthropic_round_two(server: MessagesServer, vision: bool) -> list[dict[str, Any]]:
    server.enqueue(message(tool_use("t1", "snap", {})), message(text("grey")))
    model = AnthropicChat("claude-test", base_url=server.base_url, api_key="k", vision=vision)
    result = await Agent(model, Toolbox([snap])).arun("what colour?")
    await model.aclose()
    assert result.status == "completed", result.error
    assert server.violations == []
    sent: list[dict[str, Any]] = server.requests[1].json["messages"]
    return sent


async def test_anthropic_vision_sends_an_image_block_inside_the_tool_result(
    messages_server: MessagesServer,
) -> None:
    sent = await anthropic_round_two(messages_server, vision=True)
    (result,) = [b for b in sent[-1]["content"] if b["type"] == "tool_result"]
    described, image = result["content"]
    assert described["type"] == "text" and described["text"].startswith("[image/png 4×3, ")
    assert B64 not in described["text"]
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": B64},
    }


async def test_anthropic_without_vision_sends_the_description_alone(
    messages_server: MessagesServer,
) -> None:
    sent = await anthropic_round_two(messages_server, vision=False)
    (result,) = [b for b in sent[-1]["content"] if b["type"] == "tool_result"]
    assert result["content"].startswith("[image/png 4×3, ")
    assert B64 not in json.dumps(sent)


async def test_openai_vision_refusing_an_image_gets_the_descriptions_and_the_run_goes_on(
    chat: ChatServer,
) -> None:
    chat.enqueue(
        completion(tool_calls=[tool_call("a", "snap", {})]),
        Reply(400, chat_error("Invalid image: the image is too large")),
        completion("grey"),
    )
    model = OpenAIChat("m", base_url=chat.base_url, api_key="k", vision=True)
    with pytest.warns(RuntimeWarning, match=r"refused a request with images .*too large"):
        result = await Agent(model, Toolbox([snap])).arun("what colour?")
    await model.aclose()
    assert result.status == "completed" and result.answer == "grey"
    refused, plain = chat.requests[1].json, chat.requests[2].json
    assert "image_url" in json.dumps(refused)
    assert "image_url" not in json.dumps(plain) and B64 not in json.dumps(plain)
    assert plain["messages"][-1]["content"].startswith("[image/png 4×3, ")


async def test_anthropic_vision_refusing_an_image_gets_the_descriptions_and_the_run_goes_on(
    messages_server: MessagesServer,
) -> None:
    messages_server.enqueue(
        message(tool_use("t1", "snap", {})),
        Reply(400, messages_error("messages.2.content.0.image: image exceeds 5 MB")),
        message(text("grey")),
    )
    model = AnthropicChat(
        "claude-test", base_url=messages_server.base_url, api_key="k", vision=True
    )
    with pytest.warns(RuntimeWarning, match=r"refused a request with images"):
        result = await Agent(model, Toolbox([snap])).arun("what colour?")
    await model.aclose()
    assert result.status == "completed" and result.answer == "grey"
    plain = messages_server.requests[2].json
    assert '"image"' not in json.dumps(plain) and B64 not in json.dumps(plain)


async def test_a_bad_request_without_images_is_raised_as_before(chat: ChatServer) -> None:
    chat.enqueue(Reply(400, chat_error("bad temperature")))
    model = OpenAIChat("m", base_url=chat.base_url, api_key="k", vision=True)
    result = await Agent(model, Toolbox([snap])).arun("hello")
    await model.aclose()
    assert result.status == "error" and "bad temperature" in (result.error or "")
    assert len(chat.requests) == 1
