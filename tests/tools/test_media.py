"""Media values as typed tools' parameters and results: schema, stub, checks, what a model reads."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any

import pytest

import tooluse
import tooluse.mcp
from tooluse import Agent, Image, MediaError, Toolbox, tool
from tooluse._records import render_result
from tooluse.media import Audio, describe, recall
from tooluse.models import ScriptedModel
from tooluse.tools._render import render_stub_module


def png(width: int, height: int) -> bytes:
    """A real PNG of `width`×`height` grey pixels, made with zlib alone."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def block(data: bytes, mime: str = "image/png") -> dict[str, str]:
    return {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": mime}


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


@tool
def width(image: Image) -> int:
    """The width of an image in pixels."""
    return image.size[0]


@tool
def thumbnail(side: int) -> Image:
    """A grey square."""
    return Image(png(side, side), "image/png")


@tool
def broken() -> Image:
    """An image that is not one."""
    return Image(b"GIF89a and then nothing", "image/gif")


def test_the_names_are_public_and_the_mcp_ones_are_the_same() -> None:
    assert tooluse.Image is tooluse.mcp.Image is Image
    assert tooluse.Audio is tooluse.mcp.Audio is Audio
    assert tooluse.Resource is tooluse.mcp.Resource


def test_the_schema_and_the_stub_say_an_argument_or_result_is_an_image() -> None:
    image = width.parameters["$defs"]["Image"]
    assert image["properties"]["type"] == {"const": "image"}
    assert image["properties"]["data"] == {"type": "string", "contentEncoding": "base64"}
    assert image["description"].startswith("An image (PNG, JPEG, GIF or WebP)")
    assert thumbnail.returns is not None
    assert thumbnail.returns["description"].startswith("An image")
    stub = render_stub_module([width, thumbnail])
    assert "def width(image: Image) -> int:" in stub
    assert "class Image(TypedDict):" in stub
    assert "An image (PNG, JPEG, GIF or WebP)" in stub


def test_an_image_is_described_by_type_size_and_bytes() -> None:
    data = png(640, 480)
    assert describe(Image(data, "image/png")) == f"image/png 640×480, {round(len(data) / 1024)} KB"
    assert describe(block(png(3, 2))).startswith("image/png 3×2, ")
    assert describe(tooluse.Resource("r://x", text="abc", mime_type="text/csv")) == (
        "resource r://x (text/csv, 3 B)"
    )


@pytest.mark.parametrize(
    ("data", "mime", "error"),
    [
        (b"hello, not an image", "image/png", "not a PNG image"),
        (png(4, 4)[:-20], "image/png", "truncated"),
        (png(4, 4), "image/x-unheard-of", "unknown image MIME type 'image/x-unheard-of'"),
        (b"GIF89a\x01\x00\x01\x00", "image/gif", "truncated"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg", "truncated"),
    ],
    ids=["not-an-image", "truncated-png", "unknown-mime", "truncated-gif", "truncated-jpeg"],
)
def test_a_bad_image_cannot_be_made(data: bytes, mime: str, error: str) -> None:
    with pytest.raises(MediaError, match=error):
        Image(data, mime)


def test_an_image_over_the_limit_cannot_be_made(monkeypatch: pytest.MonkeyPatch) -> None:
    data = png(64, 64)
    monkeypatch.setattr(Image, "max_bytes", len(data) - 1)
    with pytest.raises(MediaError, match=r"over the limit of"):
        Image(data, "image/png")


def test_a_fifty_megabyte_image_is_over_the_default_limit() -> None:
    big = png(8, 8)
    big = big[:-12] + b"\x00" * (50 * 1024 * 1024) + big[-12:]
    with pytest.raises(MediaError, match=r"image of 50\.0 MB is over the limit of 20\.0 MB"):
        Image(big, "image/png")


@pytest.mark.parametrize(
    ("argument", "error"),
    [
        (block(b"not an image at all"), "not a PNG image"),
        (block(png(5, 5)[:-30]), "truncated"),
        (block(png(5, 5), "image/tiff"), "unknown image MIME type 'image/tiff'"),
        ({"type": "image", "data": "***", "mimeType": "image/png"}, "not valid base64"),
    ],
    ids=["not-an-image", "truncated", "unknown-mime", "not-base64"],
)
async def test_a_bad_image_argument_is_a_refused_call_and_the_run_goes_on(
    argument: dict[str, str], error: str
) -> None:
    good = block(png(7, 3))
    model = ScriptedModel(
        [call("width", {"image": argument}), call("width", {"image": good}), {"content": "7"}]
    )
    result = await Agent(model, Toolbox([width])).arun("how wide?")
    assert result.status == "completed", result.error
    (refused,) = result.rejected
    assert error in refused.error
    (made,) = result.calls
    assert made.result == 7


async def test_a_result_image_reaches_the_model_as_a_description_and_the_record_keeps_it() -> None:
    model = ScriptedModel([call("thumbnail", {"side": 32}), {"content": "done"}])
    result = await Agent(model, Toolbox([thumbnail])).arun("draw")
    assert result.status == "completed", result.error
    (made,) = result.calls
    assert base64.b64decode(made.result["data"]) == png(32, 32)
    seen = next(m for m in result.messages if m.role == "tool").content or ""
    assert seen.startswith("[image/png 32×32, ")
    assert made.result["data"] not in seen
    (image,) = recall(seen)
    assert image.data == png(32, 32)


async def test_a_tool_making_a_bad_image_fails_its_call_and_the_run_goes_on() -> None:
    model = ScriptedModel([call("broken", {}), {"content": "sorry"}])
    result = await Agent(model, Toolbox([broken])).arun("draw")
    assert result.status == "completed", result.error
    (made,) = result.calls
    assert made.error is not None and "MediaError" in made.error and "truncated" in made.error


def test_media_inside_a_larger_result_is_described_in_place() -> None:
    text = render_result({"page": 1, "images": [block(png(2, 2)), block(png(3, 3))]})
    assert "base64" not in text and "iVBOR" not in text
    assert "image/png 2×2" in text and "image/png 3×3" in text
    assert text.startswith('{"page":1,"images":["[image/png 2×2')
