"""The photos and tools of ``tooluse bench multimodal``: a text model reads images through tools.

The MM-ReAct pattern (Yang et al. 2023): a model that cannot see composes vision
experts (OCR, rotation, cropping) and ordinary tools (exchange rates, a calculator, a
store directory) to answer questions about photos of receipts, price tables and signs.

Every photo is drawn here with Pillow, from fixed text, so its contents are known and
nothing is downloaded; some are turned sideways or upside down, some carry speckle
noise drawn from a fixed pseudo-random sequence, so the same name always gives the same
bytes. ``data/multimodal.yaml`` holds the tasks; `NEEDS` names the strings each task
must find in the OCR text, so OCR's share of the errors is measured on its own
(`ocr_accuracy`).

A model reads a photo in either of two ways, so every task is solvable in every
convention: ``read_photo(name, degrees)`` (OCR of a photo by name, turned first if
asked: a JSON call needs nothing but names and numbers), or ``photo(name)`` and the
vision tools on the `Image` it returns, which a script or a plan passes from tool to
tool (``ocr(image=rotate(image=photo(name="sign-bakery"), degrees=180))``).

Needs the ``vision`` extra (Pillow and RapidOCR).
"""

from __future__ import annotations

import copy
import functools
import io
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from typing_extensions import TypedDict

from .. import RunResult, Toolbox, tool
from ..media import Image
from ..vision import OcrResult, crop, image_info, ocr, resize, rotate
from ._dataset import CaseTask, Dataset, load_dataset
from ._everyday import calculate
from ._oracle import MODULE, call_expression, python_calls, signatures
from ._task import Call, OracleTurn, Setup

__all__ = [
    "MULTIMODAL_TASKS",
    "NEEDS",
    "PHOTOS",
    "MultimodalTask",
    "OcrCheck",
    "Photo",
    "draw",
    "multimodal_tasks",
    "normalize",
    "ocr_accuracy",
    "ocr_table",
    "read",
    "toolbox",
]

#: The task file of ``tooluse bench multimodal``.
MULTIMODAL_TASKS = Path(__file__).parent / "data" / "multimodal.yaml"

Currency = Literal["USD", "EUR", "GBP", "CHF", "JPY"]


@dataclass(frozen=True, slots=True)
class Photo:
    """A photo the suite draws: its lines of text, how it is turned, whether it is noisy.

    `turned` is counter-clockwise degrees (0, 90, 180 or 270): the photo shows the
    drawn card turned that way, so ``rotate(degrees=-turned)`` sets it upright.
    """

    lines: tuple[str, ...]
    turned: int = 0
    noise: bool = False
    width: int = 460


PHOTOS: dict[str, Photo] = {
    "receipt-cafe": Photo(
        ("CAFE LUMIERE", "Croissant     3.50", "Cafe au lait  4.20", "TOTAL EUR     7.70")
    ),
    "receipt-market": Photo(
        (
            "GREEN MARKET",
            "Apples        2.40",
            "Bread         3.10",
            "Cheese        6.75",
            "TOTAL GBP    12.25",
        ),
        noise=True,
    ),
    "receipt-books": Photo(
        ("PAGE TURNER BOOKS", "Novel        18.00", "Atlas        32.50", "TOTAL CHF    50.50"),
        turned=180,
    ),
    "receipt-ramen": Photo(
        ("RAMEN KOJI", "Shoyu ramen   1200", "Gyoza          450", "TOTAL JPY     1650"),
        turned=90,
    ),
    "prices-hardware": Photo(
        (
            "HARDWARE PRICES USD",
            "Hammer       12.90",
            "Screwdriver   6.40",
            "Wrench        9.75",
            "Pliers        7.20",
        )
    ),
    "prices-fruit": Photo(
        (
            "FRUIT STAND USD",
            "Mango         1.80",
            "Banana        0.45",
            "Kiwi          0.60",
            "Pineapple     3.20",
        ),
        noise=True,
    ),
    "sign-bakery": Photo(
        ("BAKERY ROSE", "OPEN 07:30 - 18:00", "CLOSED SUNDAY"), turned=180, width=420
    ),
    "sign-pharmacy": Photo(("PHARMACY", "OPEN 09:00 - 20:00"), noise=True, width=420),
    "sign-street": Photo(("ELM STREET 42",), turned=270, width=360),
}

# Units of the target currency one unit of the base buys, both ways.
_RATES: dict[tuple[str, str], float] = {
    ("EUR", "USD"): 1.08,
    ("GBP", "USD"): 1.27,
    ("CHF", "USD"): 1.13,
    ("JPY", "USD"): 0.0068,
    ("GBP", "EUR"): 1.17,
    ("USD", "EUR"): 0.92,
}
_ONLINE: dict[str, float] = {
    "hammer": 11.5,
    "screwdriver": 7.1,
    "wrench": 11.5,
    "pliers": 6.8,
    "mango": 2.1,
    "banana": 0.4,
    "kiwi": 0.55,
    "pineapple": 2.9,
}


class Store(TypedDict):
    name: str
    address: str
    phone: str


_STORES = (
    Store(name="Bakery Rose", address="Market Square 3", phone="555-0142"),
    Store(name="Luna Florist", address="Elm Street 42", phone="555-0177"),
    Store(name="Page Turner Books", address="Elm Street 7", phone="555-0190"),
    Store(name="Green Market", address="Harbor Road 12", phone="555-0113"),
)


@functools.cache
def draw(name: str) -> bytes:
    """The photo called `name`, as PNG bytes: the same bytes every time."""
    from PIL import Image as Picture
    from PIL import ImageDraw, ImageFont

    photo = PHOTOS[name]
    height = 40 + 62 * len(photo.lines)
    picture = Picture.new("RGB", (photo.width, height), "white")
    pen = ImageDraw.Draw(picture)
    font = ImageFont.load_default(size=26)
    for row, line in enumerate(photo.lines):
        pen.text((22, 24 + row * 62), line, fill="black", font=font)
    if photo.noise:
        speckle = random.Random(name)  # a fixed sequence per photo: same bytes every time
        for _ in range(photo.width * height // 90):
            x, y = speckle.randrange(photo.width), speckle.randrange(height)
            shade = speckle.choice((90, 140, 190))
            pen.point((x, y), fill=(shade, shade, shade))
    if photo.turned:
        picture = picture.rotate(photo.turned, expand=True)
    out = io.BytesIO()
    picture.save(out, format="PNG")
    return out.getvalue()


def _photo_named(name: str) -> str:
    key = name.strip().lower()
    if key not in PHOTOS:
        raise ValueError(f"no photo named {name!r}; the photos: {', '.join(PHOTOS)}")
    return key


@tool
def photo(name: str) -> Image:
    """The photo the user attached under this name, as an image.

    Args:
        name: the photo's name, e.g. receipt-cafe
    """
    return Image(draw(_photo_named(name)), "image/png")


@functools.cache
def _read(name: str, degrees: int) -> OcrResult:
    image = Image(draw(name), "image/png")
    if degrees % 360:
        image = rotate.function(image, degrees)
    result: OcrResult = ocr.function(image)
    return result


def read(name: str, degrees: float = 0) -> OcrResult:
    """What OCR reads in photo `name` turned `degrees` counter-clockwise (kept per process)."""
    # A copy: the kept reading is shared by every run in the process.
    return copy.deepcopy(_read(_photo_named(name), round(degrees) % 360))


@tool
def read_photo(name: str, degrees: float = 0) -> OcrResult:
    """Read the text in a photo by name (OCR), turning it first if it is not upright.

    Args:
        name: the photo's name, e.g. receipt-cafe
        degrees: turn the photo this many degrees counter-clockwise before reading
            (180 for one upside down, -90 or 90 for one on its side); 0 reads it as it is

    Returns:
        the text, one row per printed line, and each piece found with its box and score
    """
    return read(name, degrees)


@tool
def exchange_rate(base: Currency, target: Currency) -> float:
    """How many units of `target` one unit of `base` buys.

    Args:
        base: the currency to convert from, e.g. EUR
        target: the currency to convert to, e.g. USD
    """
    if base == target:
        return 1.0
    rate = _RATES.get((base, target))
    if rate is None:
        back = _RATES.get((target, base))
        if back is None:
            raise ValueError(f"no rate from {base} to {target}")
        rate = round(1 / back, 6)
    return rate


@tool
def online_price(product: str) -> float:
    """What a product costs in the online shop, in USD.

    Args:
        product: the product's name, e.g. Hammer
    """
    price = _ONLINE.get(product.strip().lower())
    if price is None:
        raise ValueError(f"the online shop has no {product!r}; it sells: {', '.join(_ONLINE)}")
    return price


@tool
def find_store(name: str = "", address: str = "") -> list[Store]:
    """Look up stores in the town's directory by name or address (any part, any case).

    Args:
        name: part of the store's name, e.g. Bakery
        address: part of its address, e.g. Elm Street 42
    """
    wanted_name, wanted_address = _squash(name), _squash(address)
    if not wanted_name and not wanted_address:
        raise ValueError("give a name or an address to look up")
    return [
        store
        for store in _STORES
        if (not wanted_name or wanted_name in _squash(store["name"]))
        and (not wanted_address or wanted_address in _squash(store["address"]))
    ]


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


#: The suite's tools: the photos, OCR by name, the vision tools, and the lookups.
toolbox = Toolbox(
    [
        photo,
        read_photo,
        ocr,
        rotate,
        crop,
        resize,
        image_info,
        exchange_rate,
        calculate,
        online_price,
        find_store,
    ]
)

#: What each task must find in its photos' OCR text: the task's photo, how far the
#: oracle turns it, and the printed lines (or parts of one) its answer needs.
NEEDS: dict[str, tuple[tuple[str, int, tuple[str, ...]], ...]] = {
    "receipt-total-usd": (("receipt-cafe", 0, ("TOTAL EUR 7.70",)),),
    "receipt-total-eur": (("receipt-market", 0, ("TOTAL GBP 12.25",)),),
    "receipt-upside-down": (("receipt-books", 180, ("TOTAL CHF 50.50",)),),
    "receipt-sideways": (("receipt-ramen", -90, ("TOTAL JPY 1650",)),),
    "receipt-difference": (("receipt-market", 0, ("Cheese 6.75", "Apples 2.40")),),
    "receipt-adds-up": (
        ("receipt-cafe", 0, ("Croissant 3.50", "Cafe au lait 4.20", "TOTAL EUR 7.70")),
    ),
    "receipt-split": (("receipt-market", 0, ("TOTAL GBP 12.25",)),),
    "receipts-larger": (
        ("receipt-cafe", 0, ("TOTAL EUR 7.70",)),
        ("receipt-market", 0, ("TOTAL GBP 12.25",)),
    ),
    "prices-cheapest": (
        (
            "prices-hardware",
            0,
            ("Hammer 12.90", "Screwdriver 6.40", "Wrench 9.75", "Pliers 7.20"),
        ),
    ),
    "prices-basket": (("prices-fruit", 0, ("Mango 1.80", "Kiwi 0.60")),),
    "prices-online": (("prices-hardware", 0, ("Wrench 9.75",)),),
    "prices-dearest-online": (
        ("prices-fruit", 0, ("Mango 1.80", "Banana 0.45", "Kiwi 0.60", "Pineapple 3.20")),
    ),
    "sign-opens": (("sign-bakery", 180, ("OPEN 07:30 - 18:00",)),),
    "sign-hours": (("sign-pharmacy", 0, ("OPEN 09:00 - 20:00",)),),
    "sign-street-store": (("sign-street", 90, ("ELM STREET 42",)),),
    "sign-bakery-phone": (("sign-bakery", 180, ("BAKERY ROSE",)),),
}


def normalize(text: str) -> str:
    """Text as OCR is compared: upper case, without spaces (OCR often drops them)."""
    return re.sub(r"\s+", "", text).upper()


@dataclass(frozen=True, slots=True)
class OcrCheck:
    """Whether OCR found what one task needs, in its photos turned upright and as taken.

    `missing` lists the needed strings OCR did not read in the photos turned as the
    oracle turns them; `missing_as_taken`, those it did not read in the photos as they
    were taken (the same for a photo that is upright).
    """

    task: str
    photos: tuple[str, ...]
    needed: tuple[str, ...]
    missing: tuple[str, ...]
    missing_as_taken: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.missing


def ocr_accuracy(tasks: Sequence[str] | None = None) -> list[OcrCheck]:
    """For each task (all of `NEEDS` by default), whether RapidOCR reads the strings it needs.

    A string counts as found when one row of the OCR text holds it, both upper-cased
    and without spaces: a price read apart from its item's name is not read.
    """
    checks: list[OcrCheck] = []
    for task in tasks if tasks is not None else list(NEEDS):
        needed: list[str] = []
        missing: list[str] = []
        missing_as_taken: list[str] = []
        for name, degrees, strings in NEEDS[task]:
            upright = _rows_of(read(name, degrees))
            as_taken = _rows_of(read(name))
            needed += strings
            missing += [s for s in strings if not any(normalize(s) in r for r in upright)]
            missing_as_taken += [s for s in strings if not any(normalize(s) in r for r in as_taken)]
        photos = tuple(name for name, _, _ in NEEDS[task])
        checks.append(
            OcrCheck(task, photos, tuple(needed), tuple(missing), tuple(missing_as_taken))
        )
    return checks


def _rows_of(result: OcrResult) -> list[str]:
    return [normalize(row) for row in result["text"].splitlines()]


def ocr_table(checks: Sequence[OcrCheck]) -> list[str]:
    """The checks as a Markdown table, a line of totals first."""

    def missed(strings: tuple[str, ...]) -> str:
        return "all read" if not strings else "missed " + ", ".join(f"`{s}`" for s in strings)

    upright = sum(check.ok for check in checks)
    as_taken = sum(not check.missing_as_taken for check in checks)
    lines = [
        f"OCR (RapidOCR) read every string a task needs in {upright}/{len(checks)} tasks "
        f"with the photos upright, {as_taken}/{len(checks)} with the photos as taken.",
        "",
        "| task | photos | strings needed | upright | as taken |",
        "| --- | --- | ---: | --- | --- |",
    ]
    lines += [
        f"| {c.task} | {', '.join(c.photos)} | {len(c.needed)} | {missed(c.missing)} "
        f"| {missed(c.missing_as_taken)} |"
        for c in checks
    ]
    return lines


#: The vision tools: calls to them count as part of reading a photo with `photo`.
_READING = frozenset({"ocr", "rotate", "crop", "resize", "image_info"})


class MultimodalTask(CaseTask):
    """A task of the suite: reading a photo with `photo` and `ocr` counts as `read_photo`.

    The oracle reads each photo with ``read_photo`` in the JSON convention (a JSON call
    cannot hold an image it was only shown a description of) and composes
    ``photo``, ``rotate`` and ``ocr`` in a script or a plan, which pass the image on.
    """

    def made_calls(self, runs: Sequence[RunResult]) -> list[Call]:
        made = super().made_calls(runs)
        if not any(call.tool == "ocr" for call in made):
            return made
        # A photo fetched and read with ocr is that photo read, however it was turned:
        # one read_photo, the vision calls on the way being part of it.
        return [
            Call("read_photo", {"name": call.arguments.get("name")})
            if call.tool == "photo"
            else call
            for call in made
            if call.tool not in _READING
        ]

    def oracle(self, setup: Setup, convention: str) -> list[OracleTurn]:
        (turn,) = super().oracle(setup, convention)
        calls = [expected.call for expected in self.case.calls]
        return [
            OracleTurn(
                steps=turn.steps,
                script=_script(calls, setup.turns[0].tools),
                plan=_plan(calls),
                answer=turn.answer,
            )
        ]


def _script(calls: list[Call], tools: Toolbox) -> str:
    """A script reading each photo with photo, rotate and ocr, and making the other calls."""
    by_name = signatures(tools)
    lines = [f"import {MODULE}", ""]
    for call in calls:
        if call.tool != "read_photo":
            lines.append(f"print({call_expression(call, by_name[call.tool])})")
            continue
        lines.append(f"image = {MODULE}.photo(name={call.arguments['name']!r})")
        if call.arguments.get("degrees"):
            lines.append(
                f"image = {MODULE}.rotate(image=image, degrees={call.arguments['degrees']!r})"
            )
        lines.append(f"print({MODULE}.ocr(image=image)['text'])")
    return "\n".join(lines) + "\n"


def _plan(calls: list[Call]) -> str:
    """A plan of the same calls, each photo passed from step to step as an image."""
    lines: list[str] = []
    results: list[str] = []
    for n, call in enumerate(calls, 1):
        if call.tool != "read_photo":
            lines.append(f"s{n} = {python_calls([call])[1:-1]}")
            results.append(f"s{n}")
            continue
        lines.append(f"photo{n} = photo(name={call.arguments['name']!r})")
        image = f"photo{n}"
        if call.arguments.get("degrees"):
            degrees = call.arguments["degrees"]
            lines.append(f"turned{n} = rotate(image=photo{n}, degrees={degrees!r})")
            image = f"turned{n}"
        lines.append(f"s{n} = ocr(image={image})")
        results.append(f"s{n}")
    lines.append(f"result = [{', '.join(results)}]")
    return "\n".join(lines) + "\n"


def multimodal_tasks(tools: str | None = None) -> list[MultimodalTask]:
    """Every task of ``data/multimodal.yaml``, in order (`tools` overrides the file's)."""
    dataset: Dataset = load_dataset(MULTIMODAL_TASKS, tools)
    return [MultimodalTask(dataset, case) for case in dataset.cases]
