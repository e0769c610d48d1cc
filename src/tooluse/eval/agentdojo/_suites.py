"""AgentDojo's task suites, loaded from the installed package.

The suites (``workspace``, ``travel``, ``banking``, ``slack``) ship with the
``agentdojo`` package (Debenedetti et al. 2024); the extra ``tooluse[agentdojo]``
installs it. Nothing here changes a suite: tasks, environments, injection
vectors and checks are AgentDojo's own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..._exceptions import UsageError

__all__ = ["DEFAULT_VERSION", "SUITE_NAMES", "Suite", "load_suite", "load_suites"]

SUITE_NAMES = ("banking", "slack", "travel", "workspace")
#: The newest benchmark version agentdojo 0.1.35 ships.
DEFAULT_VERSION = "v1.2.2"


def _registry() -> Any:
    try:
        from agentdojo.task_suite import load_suites
    except ImportError as exc:
        raise UsageError(
            "AgentDojo is not installed: pip install 'tooluse[agentdojo]' "
            f"(importing it failed: {exc})"
        ) from exc
    return load_suites


def _number(task_id: str) -> int:
    match = re.search(r"(\d+)$", task_id)
    return int(match.group(1)) if match else -1


@dataclass(frozen=True, slots=True)
class Suite:
    """One AgentDojo suite at one benchmark version; `raw` is AgentDojo's `TaskSuite`."""

    name: str
    version: str
    raw: Any

    @property
    def tools(self) -> list[Any]:
        return list(self.raw.tools)

    def user_tasks(self, limit: int | None = None) -> list[Any]:
        """The user tasks in numeric order (``user_task_2`` before ``user_task_10``)."""
        tasks = sorted(self.raw.user_tasks.values(), key=lambda t: _number(t.ID))
        return tasks[:limit] if limit is not None else tasks

    def injection_tasks(self) -> list[Any]:
        return sorted(self.raw.injection_tasks.values(), key=lambda t: _number(t.ID))

    def all_tasks(self) -> list[Any]:
        return [*self.user_tasks(), *self.injection_tasks()]

    def siblings(self) -> list[Suite]:
        """Every suite of this benchmark version, this one included."""
        return load_suites(SUITE_NAMES, self.version)


def load_suite(name: str, version: str = DEFAULT_VERSION) -> Suite:
    """One suite by name, or `UsageError` naming the suites and versions there are."""
    registry = _registry()
    try:
        suites = registry.get_suites(version)
    except (KeyError, ValueError):
        suites = {}
    if not suites:
        known = ", ".join(sorted(registry._SUITES))
        raise UsageError(f"unknown AgentDojo benchmark version {version!r}; have {known}")
    if name not in suites:
        raise UsageError(f"unknown AgentDojo suite {name!r}; use some of {', '.join(SUITE_NAMES)}")
    return Suite(name=name, version=version, raw=suites[name])


def load_suites(names: Sequence[str], version: str = DEFAULT_VERSION) -> list[Suite]:
    return [load_suite(name, version) for name in names]
