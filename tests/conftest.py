"""Shared test setup: the repository root on sys.path so `examples` imports, and fixtures."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from tooluse import Agent


@pytest.fixture
def agents() -> Iterator[list[Agent]]:
    """Agents a test made, closed when it ends (their sandboxes stopped)."""
    made: list[Agent] = []
    yield made
    for agent in made:
        agent.close()
