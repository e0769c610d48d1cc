"""Docstring parsing: prose and parameter descriptions, quietly."""

from __future__ import annotations

import ast
import inspect
import json
import logging
import subprocess
import sys
from pathlib import Path

import griffe
import pytest

from tooluse.tools._docstrings import (
    ParsedDocstring,
    _style,
    parse_docstring,
    parse_google,
    parse_with_griffe,
)

UNTYPED = """Convert an amount.

Args:
    amount: how much
    currency: ISO code
    unknown: a parameter the function does not have
"""


def test_untyped_parameters_are_read_without_logging(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="griffe")
    for parsed in (parse_docstring(UNTYPED), parse_with_griffe(inspect.cleandoc(UNTYPED))):
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


# --- Google docstrings read without griffe --------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def _docstrings(folder: Path) -> list[str]:
    """Every docstring of a module, class or function under `folder`, cleaned."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node, clean=False)
                if doc and doc.strip():
                    found.append(inspect.cleandoc(doc))
    return found


def _corpus() -> list[str]:
    """griffe's own source (written in Google style), tooluse's, and some of the stdlib's."""
    stdlib = Path(inspect.getfile(json)).parents[1]
    folders = [
        Path(inspect.getfile(griffe)).parent,
        ROOT / "src",
        ROOT / "tests",
        ROOT / "examples",
    ]
    folders += [stdlib / name for name in ("asyncio", "email", "json", "logging", "unittest")]
    return [text for folder in folders for text in _docstrings(folder) if _style(text) == "google"]


def test_google_docstrings_read_here_come_out_as_griffe_reads_them() -> None:
    corpus = _corpus()
    read = [(text, parsed) for text in corpus if (parsed := parse_google(text)) is not None]
    assert len(corpus) > 1500
    # Only docstrings with sections griffe reads its own way are left to it.
    assert len(read) > 0.95 * len(corpus)
    differ = [text for text, parsed in read if parsed != parse_with_griffe(text)]
    assert differ == []


@pytest.mark.parametrize(
    ("doc", "description", "params", "returns"),
    [
        ("Add two numbers.", "Add two numbers.", {}, ""),
        (
            "Convert.\n\nArgs:\n    amount (float): how much,\n        in the source currency\n"
            "    to: ISO code\n\nReturns:\n    float: the converted amount",
            "Convert.",
            {"amount": "how much, in the source currency", "to": "ISO code"},
            "the converted amount",  # "float" is read as the returned value's name
        ),
        (
            "Look up.\nArgs:\n    city: a city\n",  # no blank line above: prose
            "Look up.\nArgs:\n    city: a city",
            {},
            "",
        ),
        (
            "Book it.\n\nNote:\n    Charges the card.\n\nArgs:\n    room: the room\n\nRaises:\n"
            "    KeyError: no such room\n\nAfter the sections.",
            "Book it.\n\nAfter the sections.",
            {"room": "the room"},
            "",
        ),
        (
            "Run.\n\n```\nArgs:\n    x: inside a fence\n```",
            "Run.\n\n```\nArgs:\n    x: inside a fence\n```",
            {},
            "",
        ),
    ],
)
def test_google_sections_are_read_as_griffe_reads_them(
    doc: str, description: str, params: dict[str, str], returns: str
) -> None:
    parsed = parse_google(doc)
    assert parsed == ParsedDocstring(description=description, params=params, returns=returns)
    assert parsed == parse_with_griffe(doc)


def test_a_section_griffe_reads_its_own_way_is_left_to_griffe() -> None:
    doc = "Count.\n\nExamples:\n    >>> count()\n    3\n\nArgs:\n    x: a number"
    assert parse_google(doc) is None
    assert parse_docstring(doc) == parse_with_griffe(doc)
    assert parse_docstring(doc).params == {"x": "a number"}


def test_a_tool_with_a_google_docstring_is_built_without_griffe() -> None:
    code = (
        "import sys\n"
        "from tooluse import tool\n"
        "def f(x: int) -> int:\n"
        "    '''Do.\n\n    Args:\n        x: a number\n\n    Returns:\n        twice x\n    '''\n"
        "    return x\n"
        "t = tool(f)\n"
        "assert t.parameters['properties']['x']['description'] == 'a number', t.parameters\n"
        "print('griffe' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
