"""The pre-commit hooks run the same checks as `make lint` and `make typecheck`.

A hook that drifts from CI lets a commit pass locally and fail there. (CI itself runs
those make targets, so whether the commands pass is checked there.)
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _make_commands(target: str) -> list[str]:
    """The commands of one Makefile target, with $(BIN) written as .venv/bin."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = lines.index(f"{target}:")
    commands = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        commands.append(line.strip().replace("$(BIN)", ".venv/bin"))
    return commands


def _hook_entries() -> list[str]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    return [hook["entry"] for repo in config["repos"] for hook in repo["hooks"]]


def test_the_hooks_are_the_lint_and_typecheck_commands() -> None:
    expected = _make_commands("lint") + _make_commands("typecheck")
    assert expected and _hook_entries() == expected
