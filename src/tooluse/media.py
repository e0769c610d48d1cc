"""Media values: images, audio and embedded resources, as tool parameters and results.

A tool says so in its annotations, and every part of the runtime then knows what
the value is::

    @tool
    def crop(image: Image, box: tuple[int, int, int, int]) -> Image:
        ...

Each value checks itself when it is made: an `Image` whose bytes are not an image
of its MIME type, or are cut short, an unknown MIME type, or a value over the
class's ``max_bytes`` (20 MB unless set) raises `MediaError`. As a tool's
argument that is a refused call with the reason; as its result, a failed call. The
run goes on either way.

Its JSON form is the MCP content block (binary data base64-encoded): that is what
the dispatcher records and a trace keeps, so the bytes stay on the host. What a
model reads of a result is `describe`'s short text instead (``image/png 640×480,
12 KB``), with a reference a vision backend follows to send the image itself
(`recall`): base64 never enters a model's context as text.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import pydantic
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from ._exceptions import MediaError, UsageError

__all__ = [
    "AUDIO_TYPES",
    "IMAGE_TYPES",
    "Audio",
    "Image",
    "Media",
    "MediaError",
    "Resource",
    "describe",
    "from_block",
    "image_size",
    "is_block",
    "recall",
    "reference",
    "render",
    "render_value",
]

#: The image types every vision API takes, and that `Image` checks the bytes of.
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
#: The audio types `Audio` accepts.
AUDIO_TYPES = frozenset(
    {
        "audio/wav",
        "audio/x-wav",
        "audio/mpeg",
        "audio/mp3",
        "audio/ogg",
        "audio/flac",
        "audio/webm",
        "audio/mp4",
    }
)

_MB = 1024 * 1024


class _Media(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True)
    kind: ClassVar[str]
    types: ClassVar[frozenset[str]]
    #: The largest value accepted, in bytes; set it on the class to change it.
    max_bytes: ClassVar[int] = 20 * _MB

    data: bytes
    mime_type: str

    def __init__(
        self, data: bytes | None = None, mime_type: str | None = None, /, **fields: Any
    ) -> None:
        if data is None:
            # Validation of the JSON form calls this with its fields: pydantic reports.
            super().__init__(**fields)
            return
        try:
            super().__init__(data=data, mime_type=mime_type)
        except pydantic.ValidationError as exc:
            # Made by code (a tool's result): one plain error, not pydantic's report.
            raise MediaError(_reason(exc)) from None

    @pydantic.model_validator(mode="before")
    @classmethod
    def _from_block(cls, value: Any) -> Any:
        """Accept the JSON form too (a model's or a script's argument): base64 ``data``."""
        if isinstance(value, Mapping) and "mimeType" in value:
            kind = value.get("type", cls.kind)
            if kind != cls.kind:
                raise MediaError(f"expected {cls.kind} content, got type {kind!r}")
            data = value.get("data")
            if not isinstance(data, str):
                raise MediaError(f"{cls.kind} data must be base64 text")
            try:
                raw = base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                raise MediaError(f"{cls.kind} data is not valid base64") from None
            return {"data": raw, "mime_type": value["mimeType"]}
        return value

    @pydantic.model_validator(mode="after")
    def _check(self) -> _Media:
        if self.mime_type not in self.types:
            known = ", ".join(sorted(self.types))
            raise MediaError(f"unknown {self.kind} MIME type {self.mime_type!r} (known: {known})")
        if len(self.data) > self.max_bytes:
            raise MediaError(
                f"{self.kind} of {_size(len(self.data))} is over the limit of "
                f"{_size(self.max_bytes)}"
            )
        self._check_bytes()
        return self

    def _check_bytes(self) -> None:
        """Raise `MediaError` if the bytes are not of the MIME type."""

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
        schema = _block_schema(
            cls.kind, data={"type": "string", "contentEncoding": "base64"}, mimeType=_TEXT
        )
        schema["description"] = f"{cls.__doc__}".split("\n")[0]
        return schema

    def __repr__(self) -> str:
        return f"{type(self).__name__}({describe(self)})"

    def __str__(self) -> str:
        return describe(self)


class Image(_Media):
    """An image (PNG, JPEG, GIF or WebP): its bytes and MIME type, e.g. image/png."""

    kind = "image"
    types = IMAGE_TYPES

    if TYPE_CHECKING:
        # Declared for type checkers, which would otherwise give each subclass a
        # keyword-only __init__ made from the fields (pydantic's dataclass transform).
        def __init__(
            self, data: bytes | None = None, mime_type: str | None = None, /, **fields: Any
        ) -> None: ...

    def _check_bytes(self) -> None:
        image_size(self.data, self.mime_type)

    @property
    def size(self) -> tuple[int, int]:
        """Width and height in pixels, read from the header."""
        return image_size(self.data, self.mime_type)


class Audio(_Media):
    """A sound: its bytes and MIME type, e.g. audio/wav."""

    kind = "audio"
    types = AUDIO_TYPES

    if TYPE_CHECKING:
        # Declared for type checkers, which would otherwise give each subclass a
        # keyword-only __init__ made from the fields (pydantic's dataclass transform).
        def __init__(
            self, data: bytes | None = None, mime_type: str | None = None, /, **fields: Any
        ) -> None: ...


Media = Image | Audio


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
        uri: str | None = None,
        /,
        *,
        text: str | None = None,
        blob: bytes | None = None,
        mime_type: str | None = None,
        **fields: Any,
    ) -> None:
        if uri is None:
            # Validation of the JSON form calls this with its fields: pydantic reports.
            super().__init__(text=text, blob=blob, mime_type=mime_type, **fields)
            return
        if (text is None) == (blob is None):
            raise UsageError(f"Resource({uri!r}) takes exactly one of text= and blob=")
        super().__init__(uri=uri, text=text, blob=blob, mime_type=mime_type)

    @pydantic.model_validator(mode="before")
    @classmethod
    def _from_block(cls, value: Any) -> Any:
        if isinstance(value, Mapping) and isinstance(value.get("resource"), Mapping):
            contents = value["resource"]
            blob = contents.get("blob")
            try:
                raw = None if blob is None else base64.b64decode(blob, validate=True)
            except (binascii.Error, ValueError, TypeError):
                raise MediaError("resource blob is not valid base64") from None
            return {
                "uri": contents.get("uri"),
                "text": contents.get("text") if blob is None else None,
                "blob": raw,
                "mime_type": contents.get("mimeType"),
            }
        return value

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
        schema = _block_schema("resource", resource=contents)
        schema["description"] = "An embedded resource: a URI with its text or base64 blob."
        return schema


_TEXT = {"type": "string"}


def _block_schema(kind: str, **fields: dict[str, Any]) -> JsonSchemaValue:
    return {
        "type": "object",
        "properties": {"type": {"const": kind}, **fields},
        "required": ["type", *fields],
    }


# --- reading image headers ------------------------------------------------------------


def image_size(data: bytes, mime_type: str) -> tuple[int, int]:
    """Width and height of an image of `mime_type`, from its header.

    `MediaError` if the bytes are not an image of that type or are cut short (the
    format's end marker is missing). Pure Python: no image library is needed.
    """
    reader = _READERS.get(mime_type)
    if reader is None:
        raise MediaError(f"unknown image MIME type {mime_type!r}")
    try:
        return reader(data)
    except (struct.error, IndexError):
        raise MediaError(f"the {mime_type} image is truncated") from None


def _png(data: bytes) -> tuple[int, int]:
    if not data.startswith(b"\x89PNG\r\n\x1a\n") or data[12:16] != b"IHDR":
        raise MediaError("the data is not a PNG image")
    width, height = struct.unpack(">II", data[16:24])
    if not data.rstrip(b"\x00").endswith(b"IEND\xaeB`\x82"):
        raise MediaError("the image/png image is truncated (no IEND chunk at its end)")
    return width, height


def _jpeg(data: bytes) -> tuple[int, int]:
    if not data.startswith(b"\xff\xd8"):
        raise MediaError("the data is not a JPEG image")
    if not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
        raise MediaError("the image/jpeg image is truncated (no end-of-image marker)")
    at = 2
    while at < len(data):
        if data[at] != 0xFF:
            raise MediaError("the image/jpeg image is corrupt (a segment lost its marker)")
        marker = data[at + 1]
        if marker == 0xFF:
            at += 1
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        # Start-of-frame markers (all but DHT, JPG and DAC) hold the size.
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        at += 2 + length
    raise MediaError("the image/jpeg image is truncated (no frame header)")


def _gif(data: bytes) -> tuple[int, int]:
    if data[:6] not in (b"GIF87a", b"GIF89a"):
        raise MediaError("the data is not a GIF image")
    width, height = struct.unpack("<HH", data[6:10])
    if not data.endswith(b"\x3b"):
        raise MediaError("the image/gif image is truncated (no trailer)")
    return width, height


def _webp(data: bytes) -> tuple[int, int]:
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        raise MediaError("the data is not a WebP image")
    (length,) = struct.unpack("<I", data[4:8])
    if len(data) < length + 8:
        raise MediaError("the image/webp image is truncated (shorter than its RIFF header)")
    chunk = data[12:16]
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return (
            int.from_bytes(data[24:27], "little") + 1,
            int.from_bytes(data[27:30], "little") + 1,
        )
    raise MediaError("the image/webp image has no frame")


_READERS = {"image/png": _png, "image/jpeg": _jpeg, "image/gif": _gif, "image/webp": _webp}


# --- what a model reads -----------------------------------------------------------------


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < _MB:
        return f"{round(n / 1024)} KB"
    return f"{n / _MB:.1f} MB"


def is_block(value: Any) -> bool:
    """Whether `value` is the JSON form of a media value (an MCP content block)."""
    if not isinstance(value, Mapping):
        return False
    kind = value.get("type")
    if kind in ("image", "audio"):
        return isinstance(value.get("data"), str) and isinstance(value.get("mimeType"), str)
    return kind == "resource" and isinstance(value.get("resource"), Mapping)


def from_block(value: Mapping[str, Any]) -> Image | Audio | Resource:
    """The media value a JSON form (`is_block`) writes down; `MediaError` if it is bad."""
    kind = value.get("type")
    models: dict[str, type[Image] | type[Audio] | type[Resource]] = {
        "image": Image,
        "audio": Audio,
        "resource": Resource,
    }
    model = models.get(str(kind))
    if model is None:
        raise MediaError(f"not a media value: type {kind!r}")
    try:
        return model.model_validate(value)
    except pydantic.ValidationError as exc:
        raise MediaError(_reason(exc)) from None


def _reason(exc: pydantic.ValidationError) -> str:
    """A validation error in plain words: the checks' own messages."""
    return "; ".join(str(e.get("ctx", {}).get("error", e["msg"])) for e in exc.errors())


def describe(value: _Media | Resource | Mapping[str, Any]) -> str:
    """A short text for a media value or its JSON form: ``image/png 640×480, 12 KB``.

    What a model reads in place of the bytes. A JSON form that does not hold a valid
    value is described as such, never raised on: a trace can hold anything.
    """
    if isinstance(value, Mapping):
        block = value
        try:
            value = from_block(block)
        except (MediaError, pydantic.ValidationError) as exc:
            return f"invalid {block.get('type', 'media')}: {exc}"
    if isinstance(value, Image):
        width, height = value.size
        return f"{value.mime_type} {width}×{height}, {_size(len(value.data))}"
    if isinstance(value, _Media):
        return f"{value.mime_type}, {_size(len(value.data))}"
    size = len(value.blob) if value.blob is not None else len((value.text or "").encode())
    kind = f"{value.mime_type}, " if value.mime_type else ""
    return f"resource {value.uri} ({kind}{_size(size)})"


# Values a model was shown, by reference, so that a vision backend can send the image
# itself. Content-addressed, so a reference means the same bytes in any run; bounded,
# so a long-lived process does not keep every image: a reference that fell out is
# sent as its description.
class _Recent:
    values: ClassVar[OrderedDict[str, _Media]] = OrderedDict()
    bytes = 0
    limit = 256 * _MB
    lock = threading.Lock()


_REFERENCE = re.compile(r"media:([0-9a-f]{16})")


def reference(value: _Media) -> str:
    """The value's stable reference (``media:`` and a hash of its bytes), remembered so
    that `recall` finds it."""
    key = hashlib.sha256(value.mime_type.encode() + b"\0" + value.data).hexdigest()[:16]
    with _Recent.lock:
        if key in _Recent.values:
            _Recent.values.move_to_end(key)
        else:
            _Recent.values[key] = value
            _Recent.bytes += len(value.data)
            while _Recent.bytes > _Recent.limit and len(_Recent.values) > 1:
                _, old = _Recent.values.popitem(last=False)
                _Recent.bytes -= len(old.data)
    return f"media:{key}"


def recall(text: str) -> list[_Media]:
    """The media values whose references `text` holds and this process still knows, in order."""
    found: list[_Media] = []
    with _Recent.lock:
        for key in _REFERENCE.findall(text):
            value = _Recent.values.get(key)
            if value is not None and value not in found:
                found.append(value)
    return found


def render(value: _Media | Resource | Mapping[str, Any]) -> str:
    """What a model reads for one media value: ``[image/png 640×480, 12 KB; media:…]``.

    A resource with text shows its text: that is what it is for.
    """
    if isinstance(value, Mapping):
        block = value
        try:
            value = from_block(block)
        except (MediaError, pydantic.ValidationError) as exc:
            return f"[invalid {block.get('type', 'media')}: {exc}]"
    if isinstance(value, Resource):
        if value.text is not None:
            return f"[{describe(value)}]\n{value.text}"
        return f"[{describe(value)}]"
    return f"[{describe(value)}; {reference(value)}]"


def render_value(value: Any) -> Any:
    """`value` (JSON data) with every media block in it replaced by its `render` text."""
    if is_block(value):
        return render(value)
    if isinstance(value, list):
        return [render_value(v) for v in value]
    if isinstance(value, dict):
        return {k: render_value(v) for k, v in value.items()}
    return value
