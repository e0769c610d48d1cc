"""``tooluse models …``: the named local models, pulled into the cache and verified."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from .._exceptions import UsageError
from ..models._registry import Registry, pull_url

models_app = typer.Typer(
    help="Named local models for --model local:NAME: list, pull, locate and verify them.",
    no_args_is_help=True,
)
err = Console(stderr=True)


@models_app.command("list")
def list_models() -> None:
    """Show each model's name, size, whether it is installed, and its path."""
    registry = Registry()
    rows = [("NAME", "SIZE", "INSTALLED", "PATH")]
    for model in registry:
        path = registry.find(model.name)
        if path is None:
            state, where = "no", f"(tooluse models pull {model.name})"
        else:
            state = "yes" if path.stat().st_size == model.size else "damaged"
            where = str(path)
        rows.append((model.name, f"{model.size / 1e6:,.0f} MB", state, where))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for *padded, last in rows:
        cells = [cell.ljust(width) for cell, width in zip(padded, widths, strict=True)]
        print("  ".join([*cells, last]))


@models_app.command("pull")
def pull(
    source: Annotated[
        str, typer.Argument(help="A model name from `tooluse models list`, or a URL.")
    ],
    sha256: Annotated[
        str | None,
        typer.Option(help="A URL's pinned sha256; required with a URL, refused with a name."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(help="Where a URL's file goes (default: the cache, under its own name)."),
    ] = None,
) -> None:
    """Fetch a model into the cache, verify its sha256, and print its path.

    A URL download resumes where an interrupted one stopped; a file whose hash
    is wrong is deleted, never used.
    """
    if "://" not in source:
        if sha256 is not None or output is not None:
            raise UsageError(f"--sha256 and --output are for URLs; {source}'s hash is pinned")
        err.print(f"[dim]pulling {source} …[/]")
        print(Registry().pull(source))
        return
    if sha256 is None:
        raise UsageError(
            "a URL needs its hash: tooluse models pull URL --sha256 HEX "
            "(a file that is not pinned is never used)"
        )
    # Imported here: every command's start would pay for it, and only a download shows it.
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    with Progress(
        "{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=err,
        transient=True,
    ) as progress:
        task = progress.add_task(source.rsplit("/", 1)[-1], total=None)

        def advance(done: int, total: int | None) -> None:
            progress.update(task, completed=done, total=total)

        path = pull_url(source, sha256, output, on_progress=advance)
    print(path)


@models_app.command("path")
def path(name: Annotated[str, typer.Argument(help="A model name.")]) -> None:
    """Print where a model's file is, or say how to pull it."""
    print(Registry().locate(name))


@models_app.command("verify")
def verify(name: Annotated[str, typer.Argument(help="A model name.")]) -> None:
    """Hash a model's file again and report whether it is the pinned one."""
    registry = Registry()
    found = registry.verify(name)
    print(f"{name}: ok, sha256 {registry[name].sha256}, {found}")
