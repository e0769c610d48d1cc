"""The offline vision toolbox: OCR with boxes, new images from crop/rotate/resize, metadata."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from PIL import Image as Picture
from PIL import ImageDraw, ImageFont

from tooluse import Agent, Image, MediaError
from tooluse.models import ScriptedModel
from tooluse.vision import crop, image_info, ocr, resize, rotate, toolbox


def drawn(lines: list[str], size: tuple[int, int] = (440, 240)) -> Image:
    picture = Picture.new("RGB", size, "white")
    pen = ImageDraw.Draw(picture)
    font = ImageFont.load_default(size=24)
    for row, line in enumerate(lines):
        pen.text((20, 20 + row * 65), line, fill="black", font=font)
    out = io.BytesIO()
    picture.save(out, format="PNG")
    return Image(out.getvalue(), "image/png")


def test_ocr_reads_each_row_with_its_box() -> None:
    read = ocr.function(drawn(["COFFEE 4.20", "TOTAL EUR     7.70"]))
    rows = read["text"].splitlines()
    assert len(rows) == 2
    # Spaces inside a printed word can vanish; the digits and their order stay.
    assert rows[0].replace(" ", "") == "COFFEE4.20"
    assert rows[1].replace(" ", "") == "TOTALEUR7.70"
    for line in read["lines"]:
        left, top, right, bottom = line["box"]
        assert 0 <= left < right <= 440 and 0 <= top < bottom <= 240
        assert 0.5 < line["score"] <= 1
    first_row = [line for line in read["lines"] if line["box"][3] < 70]
    assert first_row and all(
        "COFFEE" in line["text"] or "4.20" in line["text"] for line in first_row
    )


def test_crop_rotate_and_resize_make_new_images_of_the_same_type() -> None:
    image = drawn(["x"], size=(200, 100))
    assert crop.function(image, 10, 20, 60, 50).size == (50, 30)
    assert rotate.function(image, 90).size == (100, 200)
    assert resize.function(image, 40, 20).size == (40, 20)
    assert {crop.function(image, 0, 0, 5, 5).mime_type} == {"image/png"}
    assert image_info.function(image) == {
        "mime_type": "image/png",
        "width": 200,
        "height": 100,
        "bytes": len(image.data),
        "mode": "RGB",
    }


def test_a_box_outside_the_image_fails_the_call_and_the_run_goes_on() -> None:
    image = drawn(["x"], size=(200, 100))
    script = (
        "```python\nimport tools\ntools.crop(image=IMAGE, left=0, top=0, right=500, bottom=50)\n```"
    ).replace("IMAGE", json.dumps(image.model_dump(mode="json")))
    model = ScriptedModel([{"content": script}, {"content": "the box was too big"}])
    with Agent(model, toolbox, convention="code") as agent:
        result = agent.run("crop it")
    assert result.status == "completed", result.error
    (call,) = result.calls
    assert call.error is not None
    assert "the box (0, 0, 500, 50) is not inside the 200×100 image" in call.error


def test_an_image_whose_pixels_do_not_decode_is_a_media_error() -> None:
    good = drawn(["x"], size=(50, 50)).data
    start = good.index(b"IDAT") + 4
    broken = good[:start] + b"\x00" * 40 + good[start + 40 :]
    with pytest.raises(MediaError, match="cannot be decoded"):
        image_info.function(Image(broken, "image/png"))


def test_importing_the_toolbox_loads_no_image_or_ocr_library() -> None:
    code = (
        "import json, sys, tooluse, tooluse.vision\n"
        "heavy = ('PIL', 'rapidocr_onnxruntime', 'onnxruntime', 'cv2')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.partition('.')[0] in heavy)))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
