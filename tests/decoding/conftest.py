"""The embedded model's grammar compiler, built once for the decoding tests."""

from __future__ import annotations

import pytest

from tooluse.decoding import GrammarCompiler
from tooluse.models import LocalModel


@pytest.fixture(scope="session")
def compiler() -> GrammarCompiler:
    return LocalModel().compiler()
