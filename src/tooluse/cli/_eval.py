"""``tooluse eval TASKS``: run a file of your own tasks, scored like the built-in suites."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ._bench import (
    ConventionsOption,
    LimitOption,
    ModelOption,
    _bench,
    options_of,
    run_options,
    with_options,
)

__all__ = ["eval_command"]

TaskCategoriesOption = Annotated[
    str | None,
    typer.Option("--categories", help="Comma-separated task categories (default: all)."),
]


def _eval_options(  # noqa: PLR0917 - only its signature counts: typer reads it
    tasks: Annotated[
        Path,
        typer.Argument(
            help="The tasks: a .yaml/.yml or .jsonl file, each task with its prompt, the "
            "calls it needs and checks on the answer (docs/evaluation.md).",
            show_default=False,
        ),
    ],
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools",
            help="MODULE:ATTR of the tools: a Toolbox, a list of tools, or a function "
            "without parameters that builds fresh ones for each run (default: the "
            "file's `tools:`).",
        ),
    ] = None,
    deps: Annotated[
        str | None,
        typer.Option(
            "--deps",
            help="MODULE:ATTR of a class or function without parameters that makes each "
            "run's dependencies, for the tools that take a RunContext (default: the "
            "file's `deps:`).",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Directory for results.jsonl, summary.md and plots (default: runs/NAME, "
            "NAME being the file's stem).",
        ),
    ] = None,
    model: ModelOption = "oracle",
    conventions: ConventionsOption = "json,code",
    categories: TaskCategoriesOption = None,
    limit: LimitOption = None,
) -> None:
    """Run a file of your own tasks in each convention: results, summary, plots, traces."""


def _run(*, tasks: Path, out: Path | None, **options: Any) -> None:
    _bench(
        "eval",
        out=out if out is not None else Path("runs") / tasks.stem,
        seed=0,  # a task file's tasks are fixed: nothing is generated
        task_file=tasks.resolve(),
        command="tooluse eval",
        **options,
    )


# The task file's own options, then those every suite command shares but --seed.
eval_command = with_options(
    _eval_options,
    [*options_of(_eval_options), *(p for p in run_options() if p.name != "seed")],
    _run,
)
