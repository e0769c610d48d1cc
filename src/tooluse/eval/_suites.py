"""The suites by name, built from plain options (so a worker process can rebuild them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import UsageError
from ._dataset import Dataset, load_dataset
from ._multimodal import MULTIMODAL_TASKS, multimodal_tasks
from ._rot import ROT_LEVELS, rot_tasks
from ._synthetic import (
    CHAIN_LENGTHS,
    FANOUT_VARIANTS,
    FANOUT_WIDTHS,
    chain_tasks,
    fanout_tasks,
)
from ._task import Task
from .bfcl import (
    MULTI_TURN_CATEGORIES,
    PAPER_CATEGORIES,
    SINGLE_TURN_CATEGORIES,
    bfcl_tasks,
    multi_turn_tasks,
    paper_subset,
)

__all__ = [
    "COSTMODEL_WIDTHS",
    "EVERYDAY_TASKS",
    "MULTIMODAL_TASKS",
    "SUITES",
    "USER_SUITE",
    "SuiteOptions",
    "build_tasks",
    "suite_categories",
]

SUITES = ("bfcl", "fanout", "chain", "rot", "costmodel", "tasks", "multimodal")
#: The suite of a task file of your own (`SuiteOptions.task_file`); its rows are
#: labelled with the file's name.
USER_SUITE = "eval"
#: The task file of ``tooluse bench tasks``: everyday tools, 1 to 4 steps a task.
EVERYDAY_TASKS = Path(__file__).parent / "data" / "tasks.yaml"
COSTMODEL_WIDTHS = (1, 2, 5, 10, 15, 20, 30, 40, 50, 60, 80, 100)

_BFCL_GROUPS = {
    "all": (*SINGLE_TURN_CATEGORIES, *MULTI_TURN_CATEGORIES),
    "single_turn": SINGLE_TURN_CATEGORIES,
    "multi_turn": MULTI_TURN_CATEGORIES,
}


@dataclass(frozen=True, slots=True)
class SuiteOptions:
    """What to build. Empty `categories` and `widths` mean the suite's defaults.

    `limit` keeps the first N entries of each category; `data_dir` points the
    BFCL suites at a copy of BFCL's data directory. `task_file` is the YAML or
    JSONL file of the ``eval`` suite, and `tools` (``MODULE:ATTR``) its tools
    when the file does not name them or to override them; `deps` likewise for
    its ``deps``.
    """

    categories: tuple[str, ...] = ()
    limit: int | None = None
    widths: tuple[int, ...] = ()
    seed: int = 0
    data_dir: str | None = None
    task_file: str | None = None
    tools: str | None = None
    deps: str | None = None


def suite_categories(suite: str) -> tuple[str, ...]:
    """The category names a suite accepts (BFCL also takes all, single_turn, multi_turn, paper)."""
    if suite == "bfcl":
        return (*_BFCL_GROUPS, "paper", *SINGLE_TURN_CATEGORIES, *MULTI_TURN_CATEGORIES)
    if suite in ("fanout", "costmodel"):
        return FANOUT_VARIANTS
    if suite == "chain":
        return ("manager_chain",)
    if suite == "rot":
        return tuple(level.name for level in ROT_LEVELS)
    if suite == "tasks":
        return load_dataset(EVERYDAY_TASKS).categories()
    if suite == "multimodal":
        return load_dataset(MULTIMODAL_TASKS).categories()
    raise UsageError(f"unknown suite {suite!r}; choose one of: {', '.join(SUITES)}")


def _check(suite: str, categories: Sequence[str]) -> None:
    known = suite_categories(suite)
    unknown = [c for c in categories if c not in known]
    if unknown:
        raise UsageError(
            f"unknown {suite} categories: {', '.join(unknown)}; choose from: {', '.join(known)}"
        )


def _first(tasks: list[Task], limit: int | None) -> list[Task]:
    if limit is None:
        return tasks
    counts: dict[str, int] = {}
    kept = []
    for task in tasks:
        counts[task.category] = counts.get(task.category, 0) + 1
        if counts[task.category] <= limit:
            kept.append(task)
    return kept


def build_tasks(suite: str, options: SuiteOptions) -> list[Task]:
    """Every task of `suite` that `options` select, in a stable order."""
    if suite == USER_SUITE:
        if options.task_file is None:
            raise UsageError("the eval suite needs a task file")
        return _from_file(
            load_dataset(Path(options.task_file), options.tools, options.deps), options
        )
    if suite == "tasks":
        return _from_file(load_dataset(EVERYDAY_TASKS, options.tools, options.deps), options)
    if suite == "multimodal":
        return _chosen(list(multimodal_tasks(options.tools)), suite, options)
    _check(suite, options.categories)
    widths = options.widths
    if suite == "bfcl":
        return _bfcl(options)
    if suite in ("fanout", "costmodel"):
        variants = options.categories or FANOUT_VARIANTS
        default = FANOUT_WIDTHS if suite == "fanout" else COSTMODEL_WIDTHS
        return _first(fanout_tasks(variants, widths or default, seed=options.seed), options.limit)
    if suite == "chain":
        return _first(chain_tasks(widths or CHAIN_LENGTHS, seed=options.seed), options.limit)
    levels = [level for level in ROT_LEVELS if level.name in (options.categories or ())] or list(
        ROT_LEVELS
    )
    if widths:
        tasks = rot_tasks(levels, widths, widths, seed=options.seed)
    else:
        tasks = rot_tasks(levels, seed=options.seed)
    return _first(tasks, options.limit)


def _from_file(dataset: Dataset, options: SuiteOptions) -> list[Task]:
    return _chosen(dataset.tasks(), dataset.name, options)


def _chosen(tasks: list[Task], name: str, options: SuiteOptions) -> list[Task]:
    if options.categories:
        known = tuple(dict.fromkeys(t.category for t in tasks if t.category))
        unknown = [c for c in options.categories if c not in known]
        if unknown:
            raise UsageError(
                f"unknown {name} categories: {', '.join(unknown)}; "
                f"choose from: {', '.join(known) or '(the tasks name none)'}"
            )
        tasks = [t for t in tasks if t.category in options.categories]
    return _first(tasks, options.limit)


def _bfcl(options: SuiteOptions) -> list[Task]:
    directory = Path(options.data_dir) if options.data_dir else None
    requested = options.categories or ("all",)
    tasks: list[Task] = []
    seen: set[str] = set()

    def add(new: list[Task]) -> None:
        for task in new:
            if task.id not in seen:
                seen.add(task.id)
                tasks.append(task)

    for name in requested:
        if name == "paper":
            subset = paper_subset(
                seed=options.seed, categories=PAPER_CATEGORIES, directory=directory
            )
            add(_first(subset, options.limit))
            continue
        for category in _BFCL_GROUPS.get(name, (name,)):
            if category in MULTI_TURN_CATEGORIES:
                add(multi_turn_tasks([category], directory=directory, limit=options.limit))
            else:
                add(bfcl_tasks([category], directory=directory, limit=options.limit))
    return tasks
