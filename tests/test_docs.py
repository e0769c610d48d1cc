"""docs/cli.md is generated from the CLI's own --help and must match it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_cli_docs_are_current() -> None:
    spec = importlib.util.spec_from_file_location(
        "gen_cli_docs", ROOT / "scripts" / "gen_cli_docs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = (ROOT / "docs" / "cli.md").read_text()
    assert committed == module.render(), "docs/cli.md is stale: run `make docs`"
