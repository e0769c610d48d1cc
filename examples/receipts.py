"""A model that cannot see reads a receipt's total through OCR and converts its currency.

    python -m examples.receipts                              # scripted replies
    python -m examples.receipts --model local                # the local model
    python -m examples.receipts --model openai:gpt-4.1-mini

The receipt is drawn here with Pillow, so its contents are known and nothing is
downloaded. The model works in the code convention: its script takes the photo
(`receipt_photo`), passes it to `ocr` (from `tooluse.vision`, offline), finds the
total and converts it with `exchange_rate`. The image's bytes never enter the
model's context: it is passed from tool to tool by the script. Needs the ``vision``
extra.
"""

from __future__ import annotations

import argparse
import io
import json

from PIL import Image as Picture
from PIL import ImageDraw, ImageFont

from tooluse import Agent, Image, RunResult, Toolbox, tool
from tooluse.media import render_value
from tooluse.models import Model, ScriptedModel, resolve_model
from tooluse.vision import ocr

LINES = ["CAFE LUMIERE", "Croissant     3.50", "Cafe au lait  4.20", "TOTAL EUR     7.70"]
RATES = {("EUR", "USD"): 1.08, ("EUR", "GBP"): 0.85, ("USD", "EUR"): 0.93}

TASK = (
    "The photo of a receipt is available from receipt_photo(). Read its total with ocr "
    "and convert it to USD with exchange_rate. Answer with both amounts."
)

SCRIPT = """```python
import re
import tools

read = tools.ocr(image=tools.receipt_photo())
total = next(row for row in read["text"].splitlines() if row.upper().startswith("TOTAL"))
amount = float(re.findall(r"\\d+\\.\\d\\d", total)[-1])
rate = tools.exchange_rate(base="EUR", target="USD")
print(f"total line: {total}; {amount:.2f} EUR = {amount * rate:.2f} USD")
```"""

ANSWER = "The receipt's total is 7.70 EUR, which is 8.32 USD."


def draw_receipt() -> bytes:
    """A receipt as a PNG, drawn with Pillow's own font."""
    picture = Picture.new("RGB", (440, 300), "white")
    pen = ImageDraw.Draw(picture)
    font = ImageFont.load_default(size=24)
    for row, line in enumerate(LINES):
        pen.text((20, 20 + row * 65), line, fill="black", font=font)
    out = io.BytesIO()
    picture.save(out, format="PNG")
    return out.getvalue()


@tool
def receipt_photo() -> Image:
    """The photo of the receipt the user attached."""
    return Image(draw_receipt(), "image/png")


@tool
def exchange_rate(base: str, target: str) -> float:
    """How many units of `target` one unit of `base` buys.

    Args:
        base: the currency to convert from, e.g. EUR
        target: the currency to convert to, e.g. USD
    """
    rate = RATES.get((base.upper(), target.upper()))
    if rate is None:
        raise ValueError(f"no rate from {base} to {target}")
    return rate


toolbox = Toolbox([receipt_photo, ocr, exchange_rate])


def run(model: Model) -> RunResult:
    with Agent(model, toolbox, convention="code", max_rounds=6) as agent:
        result = agent.run(TASK)
    for record in result.calls:
        # A media result shown as the model reads it: its description, not base64.
        shown = record.error or json.dumps(render_value(record.result), ensure_ascii=False)
        given = json.dumps(render_value(record.arguments), ensure_ascii=False)
        print(f"  call  {record.name}({given[:60]}) -> {shown[:120]}")
    for script in result.scripts:
        print(f"  script output: {script.stdout.strip() or script.error}")
    print(f"[{result.status}] {result.answer}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.receipts")
    parser.add_argument("--model", default=None, help="a model spec; scripted replies if none")
    args = parser.parse_args(argv)
    model = (
        resolve_model(args.model)
        if args.model
        else ScriptedModel([{"content": SCRIPT}, {"content": ANSWER}])
    )
    return 0 if run(model).status == "completed" else 1


if __name__ == "__main__":
    raise SystemExit(main())
