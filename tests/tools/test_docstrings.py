"""Docstring parsing: prose and parameter descriptions, quietly."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from tooluse.tools._docstrings import parse_docstring

UNTYPED = """Convert an amount.

Args:
    amount: how much
    currency: ISO code
    unknown: a parameter the function does not have
"""


def test_untyped_parameters_are_read_without_logging(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="griffe")
    parsed = parse_docstring(UNTYPED)
    assert parsed.params == {
        "amount": "how much",
        "currency": "ISO code",
        "unknown": "a parameter the function does not have",
    }
    assert [r for r in caplog.records if r.name.startswith("griffe")] == []


def test_importing_tooluse_leaves_griffe_logging_alone() -> None:
    code = (
        "import logging, tooluse\n"
        "from tooluse import tool\n"
        "def f(x: int) -> int:\n"
        "    '''Do.\n\n    Args:\n        x: a number\n    '''\n"
        "    return x\n"
        "tool(f)\n"
        "print(logging.getLogger('griffe').level)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(logging.NOTSET)
