"""Every example runs as documented and finishes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("examples.hotel", "refused get_exchange_rate"),
        ("examples.weather", "71.6"),
        ("examples.capital_calculator", "1036.0"),
        ("examples.compound_interest", "1157.625"),
        # OCR of a receipt drawn with Pillow, then a currency conversion (the vision extra).
        ("examples.receipts", "7.70 EUR = 8.32 USD"),
    ],
)
def test_example_runs(module: str, expected: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", module],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "[completed]" in proc.stdout and expected in proc.stdout
