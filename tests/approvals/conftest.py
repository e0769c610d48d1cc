"""Fixtures of the approval tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tooluse import Agent


@pytest.fixture
def agents() -> Iterator[list[Agent]]:
    """Agents a test made, closed when it ends (their sandboxes stopped)."""
    made: list[Agent] = []
    yield made
    for agent in made:
        agent.close()
