"""Content a tool returns (`Image`, `Audio`, `Resource`): how it is declared and recorded."""

from __future__ import annotations

import base64
from collections.abc import Sequence

import jsonschema
import mcp_types as types
import pytest
from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python

from tooluse import Toolbox, UsageError, tool
from tooluse._records import CallRecord
from tooluse.dispatch._dispatch import Dispatcher
from tooluse.mcp import Audio, Image, Resource
from tooluse.mcp._content import returns_content

BLOCKS: TypeAdapter[types.ContentBlock] = TypeAdapter(types.ContentBlock)
# A real 1x1 PNG: an Image checks that its bytes are one.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def test_each_content_value_serializes_to_an_mcp_content_block() -> None:
    values = [
        Image(PIXEL, "image/png"),
        Audio(b"RIFF\x00", "audio/wav"),
        Resource("test://text", text="hello", mime_type="text/plain"),
        Resource("test://blob", blob=PIXEL),
    ]
    blocks = [BLOCKS.validate_python(to_jsonable_python(v)) for v in values]

    image, audio, text, blob = blocks
    assert isinstance(image, types.ImageContent)
    assert (base64.b64decode(image.data), image.mime_type) == (PIXEL, "image/png")
    assert isinstance(audio, types.AudioContent)
    assert audio.mime_type == "audio/wav"
    assert isinstance(text, types.EmbeddedResource)
    assert isinstance(text.resource, types.TextResourceContents)
    assert (text.resource.text, text.resource.mime_type) == ("hello", "text/plain")
    assert isinstance(blob, types.EmbeddedResource)
    assert isinstance(blob.resource, types.BlobResourceContents)
    assert base64.b64decode(blob.resource.blob) == PIXEL


@pytest.mark.parametrize("kwargs", [{}, {"text": "a", "blob": b"b"}], ids=["neither", "both"])
def test_a_resource_takes_text_or_bytes(kwargs: dict[str, str | bytes]) -> None:
    with pytest.raises(UsageError, match=r"exactly one of text= and blob="):
        Resource("test://x", **kwargs)  # type: ignore[arg-type]


def image() -> Image: ...
def images() -> Sequence[Image]: ...
def mixed() -> list[str | Image | Resource]: ...
def either() -> Image | Audio: ...
def pair() -> tuple[str, Image]: ...
def text() -> str: ...
def texts() -> list[str]: ...
def data() -> dict[str, int]: ...
def bare(): ...  # type: ignore[no-untyped-def]
def unresolved() -> NoSuchType: ...  # type: ignore[name-defined]  # noqa: F821


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (image, True),
        (images, True),
        (mixed, True),
        (either, True),
        (pair, True),
        (text, False),
        (texts, False),
        (data, False),
        (bare, False),
        (unresolved, False),
    ],
)
def test_the_return_annotation_says_whether_a_tool_returns_content(
    function: object, expected: bool
) -> None:
    assert returns_content(function) is expected  # type: ignore[arg-type]


async def test_the_dispatcher_records_content_as_json_its_return_schema_describes() -> None:
    @tool
    def chart(title: str) -> list[str | Image | Resource]:
        """Draw a chart."""
        return [title, Image(PIXEL, "image/png"), Resource("chart://1", text="1,2")]

    dispatcher = Dispatcher(Toolbox([chart]))
    try:
        record = await dispatcher.call("chart", {"title": "t"}, call_id="c1")
    finally:
        dispatcher.close()

    assert isinstance(record, CallRecord) and record.ok, record
    assert record.result == [
        "t",
        {"type": "image", "data": base64.b64encode(PIXEL).decode(), "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "chart://1", "text": "1,2"}},
    ]
    assert chart.returns is not None
    jsonschema.validate(record.result, chart.returns)
