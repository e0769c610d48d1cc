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

The classes live in `tooluse.media`, where every tool can use them; they are named
here too. Each value serializes to its MCP content block (binary data base64-encoded),
so the dispatcher records it as JSON like any other result; a model reads a short
description of it instead (`tooluse.media.render`).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

from ..media import Audio, Image, Resource

__all__ = ["Audio", "Image", "Resource", "returns_content"]

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
