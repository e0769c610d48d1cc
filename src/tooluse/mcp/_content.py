"""What a tool returns when its answer is more than JSON: images, audio, embedded resources.

A tool says so in its return annotation, and an MCP client then receives content
blocks instead of text::

    @tool
    def chart(city: str) -> Image:
        return Image(render_png(city), "image/png")

    @tool
    def report(day: str) -> list[str | Image | Resource]:
        return ["Sales for the day:", Image(png, "image/png"),
                Resource("report://2026-01-05", text=csv_text, mime_type="text/csv")]

Each value serializes to its MCP content block (binary data base64-encoded), so the
dispatcher records it as JSON like any other result, and a model that calls the tool
outside MCP reads that JSON.
"""

from __future__ import annotations

import base64
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pydantic
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from .._exceptions import UsageError

__all__ = ["Audio", "Image", "Resource", "returns_content"]


class _Media(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True)
    kind: ClassVar[str]

    data: bytes
    mime_type: str

    def __init__(self, data: bytes, mime_type: str) -> None:
        super().__init__(data=data, mime_type=mime_type)

    @pydantic.model_serializer
    def _serialize(self) -> dict[str, str]:
        return {
            "type": self.kind,
            "data": base64.b64encode(self.data).decode("ascii"),
            "mimeType": self.mime_type,
        }

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: pydantic.GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # The schema of what is sent (a tool's `returns`), not of the constructor's arguments.
        return _block_schema(
            cls.kind, data={"type": "string", "contentEncoding": "base64"}, mimeType=_TEXT
        )


class Image(_Media):
    """An image: its bytes (not base64) and its MIME type, e.g. ``image/png``."""

    kind = "image"


class Audio(_Media):
    """A sound: its bytes (not base64) and its MIME type, e.g. ``audio/wav``."""

    kind = "audio"


class Resource(pydantic.BaseModel):
    """A resource embedded in the result: a URI with its contents, text or bytes.

    Exactly one of ``text`` and ``blob`` is given.
    """

    model_config = pydantic.ConfigDict(frozen=True)

    uri: str
    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None

    def __init__(
        self,
        uri: str,
        *,
        text: str | None = None,
        blob: bytes | None = None,
        mime_type: str | None = None,
    ) -> None:
        if (text is None) == (blob is None):
            raise UsageError(f"Resource({uri!r}) takes exactly one of text= and blob=")
        super().__init__(uri=uri, text=text, blob=blob, mime_type=mime_type)

    @pydantic.model_serializer
    def _serialize(self) -> dict[str, Any]:
        contents: dict[str, str] = {"uri": self.uri}
        if self.mime_type is not None:
            contents["mimeType"] = self.mime_type
        if self.blob is not None:
            contents["blob"] = base64.b64encode(self.blob).decode("ascii")
        else:
            contents["text"] = self.text or ""
        return {"type": "resource", "resource": contents}

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: pydantic.GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        contents = {
            "type": "object",
            "properties": {"uri": _TEXT, "mimeType": _TEXT, "text": _TEXT, "blob": _TEXT},
            "required": ["uri"],
        }
        return _block_schema("resource", resource=contents)


_TEXT = {"type": "string"}


def _block_schema(kind: str, **fields: dict[str, Any]) -> JsonSchemaValue:
    return {
        "type": "object",
        "properties": {"type": {"const": kind}, **fields},
        "required": ["type", *fields],
    }


_CONTENT = (Image, Audio, Resource)


def returns_content(function: Callable[..., Any]) -> bool:
    """Whether ``function`` is annotated to return content blocks rather than JSON data.

    True for a content type (`Image`, `Audio`, `Resource`), a union of them, and a
    list, tuple or sequence of them mixed with text (``list[str | Image]``). Text
    alone is not content: ``str`` and ``list[str]`` are served as JSON values.
    """
    try:
        annotation = typing.get_type_hints(function).get("return")
    except Exception:
        return False  # an annotation that cannot be resolved declares nothing
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, Sequence):
        annotation = typing.Union[tuple(a for a in typing.get_args(annotation) if a is not ...)]  # noqa: UP007
    leaves = _leaves(annotation)
    if leaves is None or not leaves - {str}:
        return False
    return origin is not None or str not in leaves


def _leaves(annotation: Any) -> set[type] | None:
    """The types a union is made of, if every one is a content type or text."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        found: set[type] = set()
        for member in typing.get_args(annotation):
            leaves = _leaves(member)
            if leaves is None:
                return None
            found |= leaves
        return found
    if annotation is str or (isinstance(annotation, type) and issubclass(annotation, _CONTENT)):
        return {annotation}
    return None
