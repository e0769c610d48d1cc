"""An MCP server whose tools answer with image, audio and resource content, for the client.

Run as ``python media_server.py``. Written on the SDK's low-level ``Server`` so that
it can also send what a well-made server never would: an image that is not one.

Tools: ``picture`` (text, a PNG, a WAV sound and an embedded text resource),
``only_picture`` (the PNG alone) and ``not_a_picture`` (ImageContent whose bytes are text).
"""

from __future__ import annotations

import base64
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

# A real 1x1 PNG.
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
SOUND = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVE").decode()
NOTHING = {"type": "object"}
TOOLS = [
    types.Tool(name="picture", description="A picture with a caption.", input_schema=NOTHING),
    types.Tool(name="only_picture", description="A picture alone.", input_schema=NOTHING),
    types.Tool(name="not_a_picture", description="Says it is a picture.", input_schema=NOTHING),
]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    image = types.ImageContent(type="image", data=PIXEL, mime_type="image/png")
    if params.name == "picture":
        notes = types.TextResourceContents(uri="notes://1", text="red", mime_type="text/plain")
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text="A red pixel:"),
                image,
                types.AudioContent(type="audio", data=SOUND, mime_type="audio/wav"),
                types.EmbeddedResource(type="resource", resource=notes),
            ]
        )
    if params.name == "only_picture":
        return types.CallToolResult(content=[image])
    if params.name == "not_a_picture":
        fake = base64.b64encode(b"just some text").decode()
        return types.CallToolResult(
            content=[types.ImageContent(type="image", data=fake, mime_type="image/png")]
        )
    raise ValueError(f"no tool {params.name}")


SERVER = Server("media", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio() -> None:
    async with stdio_server() as (read, write):
        await SERVER.run(read, write, SERVER.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve_stdio)
