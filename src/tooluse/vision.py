"""Vision tools that run here, offline: OCR, crop, rotate, resize and image metadata.

A model that cannot see composes these on an image it holds only by reference
(the MM-ReAct pattern): it reads the text of a receipt, crops a region, turns a
photo upright, and reasons over what they return::

    from tooluse import Agent
    from tooluse.vision import toolbox as vision

    agent = Agent(model, vision + my_tools)

Needs the ``vision`` extra (``pip install 'tooluse[vision]'``): RapidOCR on
onnxruntime, whose detection and recognition models ship inside its wheel, so
nothing is downloaded when it runs, and Pillow for the image operations. Both are
imported on first use, not when this module is: ``import tooluse`` stays light.

Every tool takes an `Image` and the new images they make are `Image` values of the
same MIME type, so they pass from tool to tool; a model reads their descriptions.
"""

from __future__ import annotations

import io
import threading
from typing import TYPE_CHECKING, Any

from typing_extensions import TypedDict

from ._exceptions import MediaError, UsageError
from .media import Image
from .tools import Toolbox, tool

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

__all__ = [
    "ImageInfo",
    "OcrLine",
    "OcrResult",
    "crop",
    "image_info",
    "ocr",
    "resize",
    "rotate",
    "toolbox",
]

_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WEBP"}
_MISSING = "the vision tools need the vision extra: pip install 'tooluse[vision]'"


class OcrLine(TypedDict):
    """One line of text found: its text, its box (left, top, right, bottom) and confidence."""

    text: str
    box: list[int]
    score: float


class OcrResult(TypedDict):
    """All the text found, top to bottom, and each line with its box."""

    text: str
    lines: list[OcrLine]


class ImageInfo(TypedDict):
    """What an image is: its MIME type, size in pixels and bytes, and colour mode."""

    mime_type: str
    width: int
    height: int
    bytes: int
    mode: str


def _pil() -> Any:
    try:
        import PIL.Image
    except ImportError as exc:  # pragma: no cover - the extra is installed in tests
        raise UsageError(_MISSING) from exc
    return PIL.Image


def _open(image: Image) -> PILImage:
    """The image decoded by Pillow; `MediaError` if its bytes do not decode."""
    pil = _pil()
    try:
        opened: PILImage = pil.open(io.BytesIO(image.data))
        opened.load()
    except Exception as exc:
        raise MediaError(f"the {image.mime_type} image cannot be decoded: {exc}") from None
    return opened


def _save(picture: PILImage, mime_type: str) -> Image:
    kind = _FORMATS[mime_type]
    if kind == "JPEG" and picture.mode not in ("RGB", "L"):
        picture = picture.convert("RGB")
    out = io.BytesIO()
    picture.save(out, format=kind)
    return Image(out.getvalue(), mime_type)


class _Engine:
    """The OCR engine, loaded once per process on first use (its models take a moment)."""

    lock = threading.Lock()
    engine: Any = None

    @classmethod
    def get(cls) -> Any:
        with cls.lock:
            if cls.engine is None:
                try:
                    from rapidocr_onnxruntime import RapidOCR
                except ImportError as exc:  # pragma: no cover - the extra is installed in tests
                    raise UsageError(_MISSING) from exc
                cls.engine = RapidOCR()
            return cls.engine


@tool
def ocr(image: Image) -> OcrResult:
    """Read the text in an image (OCR).

    Args:
        image: the image to read

    Returns:
        the text, one row per line, top to bottom, and each piece found with its box
        in pixels (left, top, right, bottom) and a confidence from 0 to 1
    """
    import numpy

    picture = _open(image).convert("RGB")
    found, _ = _Engine.get()(numpy.asarray(picture))
    lines: list[OcrLine] = []
    for points, text, score in found or []:
        xs = [round(float(p[0])) for p in points]
        ys = [round(float(p[1])) for p in points]
        box = [min(xs), min(ys), max(xs), max(ys)]
        lines.append(OcrLine(text=str(text), box=box, score=round(float(score), 3)))
    rows = _rows(lines)
    ordered = [line for row in rows for line in row]
    text = "\n".join(" ".join(line["text"] for line in row) for row in rows)
    return OcrResult(text=text, lines=ordered)


def _rows(lines: list[OcrLine]) -> list[list[OcrLine]]:
    """Boxes grouped into rows of text, top to bottom, each row left to right.

    A box joins a row when its vertical middle lies within the row's first box: the
    detector often splits one printed line in two ("TOTAL EUR" and "7.70" far apart).
    """
    rows: list[list[OcrLine]] = []
    for line in sorted(lines, key=lambda found: (found["box"][1] + found["box"][3]) / 2):
        middle = (line["box"][1] + line["box"][3]) / 2
        if rows and rows[-1][0]["box"][1] <= middle <= rows[-1][0]["box"][3]:
            rows[-1].append(line)
        else:
            rows.append([line])
    return [sorted(row, key=lambda found: found["box"][0]) for row in rows]


@tool
def crop(image: Image, left: int, top: int, right: int, bottom: int) -> Image:
    """Cut out a rectangle of an image, in pixels from its top left corner.

    Args:
        image: the image to crop
        left: the rectangle's left edge
        top: its top edge
        right: its right edge (exclusive)
        bottom: its bottom edge (exclusive)
    """
    picture = _open(image)
    width, height = picture.size
    if not (0 <= left < right <= width and 0 <= top < bottom <= height):
        raise MediaError(
            f"the box ({left}, {top}, {right}, {bottom}) is not inside the {width}×{height} image"
        )
    return _save(picture.crop((left, top, right, bottom)), image.mime_type)


@tool
def rotate(image: Image, degrees: float) -> Image:
    """Turn an image counter-clockwise by some degrees; the canvas grows to hold it all.

    Args:
        image: the image to turn
        degrees: the angle, counter-clockwise (use a negative angle for clockwise)
    """
    picture = _open(image)
    fill = "white" if picture.mode in ("RGB", "RGBA", "L") else None
    return _save(picture.rotate(degrees, expand=True, fillcolor=fill), image.mime_type)


@tool
def resize(image: Image, width: int, height: int) -> Image:
    """Scale an image to a width and height in pixels.

    Args:
        image: the image to scale
        width: the new width, 1 to 10000
        height: the new height, 1 to 10000
    """
    if not (1 <= width <= 10_000 and 1 <= height <= 10_000):
        raise MediaError(f"{width}×{height} is not a size from 1×1 to 10000×10000")
    return _save(_open(image).resize((width, height)), image.mime_type)


@tool
def image_info(image: Image) -> ImageInfo:
    """What an image is: its MIME type, width and height in pixels, size in bytes, colour mode.

    Args:
        image: the image to describe
    """
    picture = _open(image)
    width, height = picture.size
    return ImageInfo(
        mime_type=image.mime_type,
        width=width,
        height=height,
        bytes=len(image.data),
        mode=str(picture.mode),
    )


#: The vision tools as one toolbox.
toolbox = Toolbox([ocr, crop, rotate, resize, image_info])
