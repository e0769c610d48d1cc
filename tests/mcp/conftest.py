"""Fixtures of the client's tests; the servers and helpers are in ``client_helpers.py``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from client_helpers import HttpServer, children, wait_for


@pytest.fixture
def no_children_left() -> Iterator[None]:
    """Fails the test if a process it started is still running once it ends."""
    before = children()
    yield
    wait_for(lambda: not (children() - before), "the test's child processes to end")


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HttpServer]:
    server = HttpServer(tmp_path)
    server.start()
    yield server
    server.kill()
