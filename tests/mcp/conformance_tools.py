"""The tools the MCP conformance suite's server scenarios call, as tooluse tools.

Served by `tooluse mcp serve tests.mcp.conformance_tools:toolbox --http ...` in
`test_conformance_server.py`; each tool's name and behaviour are the ones its
scenario prescribes.
"""

from __future__ import annotations

import asyncio
import base64

from tooluse import Toolbox, tool
from tooluse.mcp import Image, Resource, current_request
from tooluse.tools import Tool

# A 1x1 red PNG, as the image scenario suggests.
RED_PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
# The scenarios ask for pauses between notifications, so that a client sees them
# arrive while the call is still running.
PAUSE_S = 0.05


@tool
def test_simple_text() -> str:
    """Return a fixed line of text."""
    return "This is a simple text response for testing."


@tool
def test_image_content() -> Image:
    """Return a one-pixel PNG image."""
    return Image(RED_PIXEL, "image/png")


@tool
def test_embedded_resource() -> Resource:
    """Return a text resource embedded in the result."""
    return Resource(
        "test://embedded-resource",
        text="This is an embedded resource content.",
        mime_type="text/plain",
    )


@tool
def test_multiple_content_types() -> list[str | Image | Resource]:
    """Return text, an image and an embedded resource together."""
    return [
        "Multiple content types test:",
        Image(RED_PIXEL, "image/png"),
        Resource(
            "test://mixed-content-resource",
            text='{"test":"data","value":123}',
            mime_type="application/json",
        ),
    ]


@tool
def test_error_handling() -> str:
    """Always fail."""
    raise RuntimeError("This tool intentionally returns an error for testing")


@tool
async def test_tool_with_logging() -> str:
    """Send three log messages while running."""
    request = current_request()
    for step, message in enumerate(
        ["Tool execution started", "Tool processing data", "Tool execution completed"]
    ):
        if step:
            await asyncio.sleep(PAUSE_S)
        if request is not None:
            await request.log(message)
    return "Logging test completed"


@tool
async def test_tool_with_progress() -> str:
    """Report progress at 0, 50 and 100 of 100 while running."""
    request = current_request()
    for step, done in enumerate([0, 50, 100]):
        if step:
            await asyncio.sleep(PAUSE_S)
        if request is not None:
            await request.progress(done, 100)
    return "Progress test completed"


json_schema_2020_12_tool = Tool.from_schema(
    "json_schema_2020_12_tool",
    "Tool with JSON Schema 2020-12 features",
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    },
    lambda **arguments: f"received {sorted(arguments)}",
)

toolbox = Toolbox(
    [
        test_simple_text,
        test_image_content,
        test_embedded_resource,
        test_multiple_content_types,
        test_error_handling,
        test_tool_with_logging,
        test_tool_with_progress,
        json_schema_2020_12_tool,
    ]
)
