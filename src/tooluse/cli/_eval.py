"""``tooluse eval TASKS``: run a file of your own tasks, scored like the built-in suites."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._bench import (
    BaseUrlOption,
    ConventionsOption,
    Executor,
    ExecutorOption,
    LimitOption,
    ModelOption,
    RateLimitOption,
    RayAddressOption,
    RayCpusOption,
    RetryOption,
    TracesOption,
    WorkersOption,
    _bench,
)

__all__ = ["eval_command"]


def eval_command(  # noqa: PLR0917 - typer maps parameters to options
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
    categories: Annotated[
        str | None,
        typer.Option("--categories", help="Comma-separated task categories (default: all)."),
    ] = None,
    limit: LimitOption = None,
    workers: WorkersOption = None,
    base_url: BaseUrlOption = None,
    retry_errors: RetryOption = False,
    traces: TracesOption = False,
    executor: Executor = ExecutorOption.local,
    ray_address: RayAddressOption = None,
    ray_cpus: RayCpusOption = 1.0,
    rate_limit: RateLimitOption = None,
) -> None:
    """Run a file of your own tasks in each convention: results, summary, plots, traces."""
    _bench(
        "eval",
        model=model,
        conventions=conventions,
        out=out if out is not None else Path("runs") / tasks.stem,
        categories=categories,
        limit=limit,
        workers=workers,
        seed=0,
        base_url=base_url,
        retry_errors=retry_errors,
        traces=traces,
        executor=executor,
        ray_address=ray_address,
        ray_cpus=ray_cpus,
        rate_limit=rate_limit,
        task_file=tasks.resolve(),
        tools=tools,
        deps=deps,
        command="tooluse eval",
    )
