"""Bad media in a whole run: each is one clear error for that call, and the run goes on.

Each run is the real loop over real tools; a scripted model sends the bad input, then
a good call, then its answer. What holds already elsewhere: a bad image argument in
json (tests/tools/test_media.py), another run's handle (tests/core/test_handles.py), a
vision backend refusing an image (tests/models/test_vision.py). Here: the same inputs
in the plan and code conventions, an image over the configured limit, a handle or a
description where an image is wanted, and a vision tool given bytes that do not decode.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from typing import Any

import pytest

from tools.test_media import png
from tooluse import Agent, Image, Limits, Message, Toolbox, tool
from tooluse.models import ScriptedModel

HANDLE = re.compile(r"@r[0-9]+-[0-9a-f]{6}")
MEDIA = re.compile(r"\[image/png [^\]]*media:[0-9a-f]{16}\]")


def block(data: bytes, mime: str = "image/png") -> dict[str, str]:
    return {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": mime}


def call(name: str, arguments: dict[str, Any], id_: str = "c1") -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"tool_calls": [{"id": id_, "type": "function", "function": function}]}


@tool
def width(image: Image) -> int:
    """The width of an image in pixels."""
    return image.size[0]


@tool
def square(side: int) -> Image:
    """A grey square."""
    return Image(png(side, side), "image/png")


@tool
def rows(n: int) -> list[dict[str, int]]:
    """n numbered rows."""
    return [{"row": i, "value": i * i} for i in range(n)]


TOOLS = Toolbox([width, square, rows])


def test_an_image_over_the_configured_limit_is_a_refused_call_and_the_run_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    big, small = png(64, 64), png(7, 3)
    monkeypatch.setattr(Image, "max_bytes", len(big) - 1)
    model = ScriptedModel(
        [
            call("width", {"image": block(big)}),
            call("width", {"image": block(small)}),
            {"content": "7"},
        ]
    )
    result = Agent(model, TOOLS).run("how wide?")
    assert result.status == "completed", result.error
    (refused,) = result.rejected
    assert "over the limit of" in refused.error
    (made,) = result.calls
    assert made.result == 7


def test_a_handle_to_rows_where_an_image_is_wanted_is_refused_and_the_run_goes_on() -> None:
    def respond(messages: Sequence[Message]) -> dict[str, Any] | str:
        replies = sum(1 for m in messages if m.role == "assistant")
        shown = [h for m in messages if m.role == "tool" for h in HANDLE.findall(m.content or "")]
        steps = [
            lambda: call("rows", {"n": 500}),
            lambda: call("width", {"image": shown[-1]}, "c2"),
            lambda: call("square", {"side": 5}, "c3"),
            lambda: "done",
        ]
        return steps[replies]()

    result = Agent(ScriptedModel(respond), TOOLS, limits=Limits(result_limit=1_000)).run("go")
    assert result.status == "completed", result.error
    (refused,) = result.rejected
    assert refused.name == "width"
    # The handle was resolved, and the rows it named are not an image: the schema says so.
    assert "argument 'image' must be object, got array" in refused.error
    assert [c.name for c in result.calls] == ["rows", "square"]


def test_the_description_of_an_image_is_not_an_image_and_the_run_goes_on() -> None:
    def respond(messages: Sequence[Message]) -> dict[str, Any] | str:
        replies = sum(1 for m in messages if m.role == "assistant")
        shown = [t for m in messages if m.role == "tool" for t in MEDIA.findall(m.content or "")]
        steps = [
            lambda: call("square", {"side": 9}),
            # What a text model was shown, written back as the image: not the bytes.
            lambda: call("width", {"image": shown[-1]}, "c2"),
            lambda: "I cannot pass the image itself.",
        ]
        return steps[replies]()

    result = Agent(ScriptedModel(respond), TOOLS).run("how wide is a square of 9?")
    assert result.status == "completed", result.error
    (refused,) = result.rejected
    assert refused.name == "width"
    assert "argument 'image' must be object, got string" in refused.error
    assert "an image argument is the image itself" in refused.error
    assert [c.name for c in result.calls] == ["square"]


@pytest.mark.parametrize(
    ("argument", "error"),
    [
        (block(b"plain text, not a picture"), "not a PNG image"),
        (block(png(5, 5)[:-30]), "truncated"),
        (block(png(5, 5), "image/x-unheard-of"), "unknown image MIME type"),
    ],
    ids=["not-an-image", "truncated", "unknown-mime"],
)
def test_bad_image_arguments_in_a_plan_fail_that_step_and_the_run_goes_on(
    argument: dict[str, str], error: str
) -> None:
    good = block(png(7, 3))
    plan = f"bad = width(image={argument!r})\n"
    model = ScriptedModel(
        [
            {"content": f"```plan\n{plan}```"},
            {"content": f"```plan\nw = width(image={good!r})\n```"},
            {"content": "7"},
        ]
    )
    result = Agent(model, TOOLS, convention="plan").run("how wide?")
    assert result.status == "completed", result.error
    assert error in " ".join(r.error for r in result.rejected) + " ".join(
        m.content or "" for m in result.messages
    )
    assert [c.result for c in result.calls if c.ok] == [7]


def test_a_bad_image_made_in_a_script_fails_that_call_and_the_run_goes_on() -> None:
    script = (
        "import tools\n"
        "try:\n"
        "    tools.width(image={'type': 'image', 'data': 'bm90IGFuIGltYWdl', "
        "'mimeType': 'image/png'})\n"
        "except Exception as exc:\n"
        "    print('refused:', exc)\n"
        "print(tools.width(image=tools.square(side=6)))\n"
    )
    model = ScriptedModel([{"content": f"```python\n{script}```"}, {"content": "6"}])
    result = Agent(model, TOOLS, convention="code").run("how wide?")
    assert result.status == "completed", result.error
    (out,) = result.scripts
    assert "refused:" in out.stdout and "not a PNG image" in out.stdout
    assert out.stdout.strip().endswith("6")


def test_a_vision_tool_given_pixels_that_do_not_decode_fails_its_call_and_the_run_goes_on() -> None:
    pytest.importorskip("PIL")
    from tooluse.vision import image_info

    # A valid PNG header and end, with pixel data that does not inflate.
    good = png(4, 4)
    broken = good[:33] + good[33:41] + b"\x00" * 20 + good[-12:]
    model = ScriptedModel(
        [
            call("image_info", {"image": block(broken)}),
            call("image_info", {"image": block(good)}, "c2"),
            {"content": "4×4"},
        ]
    )
    result = Agent(model, Toolbox([image_info])).run("what is it?")
    assert result.status == "completed", result.error
    outcomes = [c.error or "" for c in result.calls] + [r.error for r in result.rejected]
    assert any("MediaError" in e or "cannot be decoded" in e or "truncated" in e for e in outcomes)
    assert any(c.ok and c.result["width"] == 4 for c in result.calls)
