"""Image, audio and resource content from an MCP server arrives as media values."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from client_helpers import everything_server

from tooluse import Agent, Audio, Image, Resource, Toolbox
from tooluse.mcp import MCPClient
from tooluse.models import ScriptedModel

MEDIA_SERVER = [sys.executable, str(Path(__file__).with_name("media_server.py"))]
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


def tool_message(box: Toolbox, name: str) -> tuple[Any, str]:
    """Run one call of `name` through an agent: the record's result and what the model read."""
    with Agent(ScriptedModel([call(name), {"content": "seen"}]), box) as agent:
        result = agent.run("look")
    assert result.status == "completed", result.error
    seen = next(m.content for m in result.messages if m.role == "tool")
    return result.calls[0], seen or ""


def test_content_blocks_become_media_values() -> None:
    with MCPClient.stdio(MEDIA_SERVER) as client:
        box = client.toolbox()
        picture, only_picture = box.get("picture"), box.get("only_picture")
        assert picture is not None and only_picture is not None
        mixed = asyncio.run(picture.function())
        alone = asyncio.run(only_picture.function())
    caption, image, sound, notes = mixed
    assert caption == "A red pixel:"
    assert image == Image(PIXEL, "image/png")
    assert isinstance(sound, Audio) and sound.mime_type == "audio/wav"
    assert notes == Resource("notes://1", text="red", mime_type="text/plain")
    assert alone == Image(PIXEL, "image/png")


def test_the_model_reads_a_description_and_the_record_keeps_the_bytes() -> None:
    with MCPClient.stdio(MEDIA_SERVER) as client:
        record, seen = tool_message(client.toolbox(), "picture")
    caption, image, _, _ = record.result
    assert caption == "A red pixel:"
    assert base64.b64decode(image["data"]) == PIXEL
    assert "[image/png 1×1, 70 B; media:" in seen
    assert "[resource notes://1 (text/plain, 3 B)]\\nred" in seen
    assert image["data"] not in seen


def test_an_image_that_is_not_one_fails_the_call_and_the_run_goes_on() -> None:
    with MCPClient.stdio(MEDIA_SERVER) as client:
        record, seen = tool_message(client.toolbox(), "not_a_picture")
    assert record.error is not None
    assert "MediaError: the data is not a PNG image" in record.error
    assert seen.startswith("Error: ")


@pytest.mark.npm
def test_the_reference_servers_tiny_image_is_an_image() -> None:
    with MCPClient.stdio(everything_server()) as client:
        box = client.toolbox()
        record, seen = tool_message(box, "get-tiny-image")
    images = [
        item for item in record.result if isinstance(item, dict) and item.get("type") == "image"
    ]
    assert len(images) == 1 and images[0]["mimeType"] == "image/png"
    assert "[image/png " in seen
    assert images[0]["data"] not in seen
