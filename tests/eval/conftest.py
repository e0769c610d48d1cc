"""Shared fixtures for the evaluation tests: one sandbox for every code-convention run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tooluse.sandbox import Sandbox


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox() as box:
        yield box
