"""The options several benchmarks take, each declared once.

A benchmark runs as ``python bench/NAME.py``, which puts this directory on the
path, so each imports these as ``from _options import …``.
"""

from __future__ import annotations

import argparse

#: The local models the latency and turn benchmarks measure unless told otherwise.
LOCAL_MODELS = "qwen2.5-coder-1.5b,qwen2.5-coder-0.5b"


def add_repeat(parser: argparse.ArgumentParser, default: int = 3) -> None:
    """``--repeat N``: measurements per row; the benchmark reports their best or median."""
    parser.add_argument("--repeat", type=int, default=default, help="measurements per row")


def add_models(parser: argparse.ArgumentParser) -> None:
    """``--models A,B``: the local models to measure, by their registry names."""
    parser.add_argument("--models", default=LOCAL_MODELS, help="comma-separated local model names")


def add_mcp_load(parser: argparse.ArgumentParser, *, tools: bool = True) -> None:
    """``--calls``, ``--repeat`` and (with `tools`) ``--tools``: the MCP benchmarks' load."""
    parser.add_argument("--calls", type=int, default=300, help="calls per measurement")
    add_repeat(parser)
    if tools:
        parser.add_argument("--tools", type=int, default=50, help="tools for the prompt size")
