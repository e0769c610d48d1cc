"""``tooluse tools lint``: a toolbox checked against the tool-design principles."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Annotated, get_args

import typer
from rich.console import Console

from ..lint import DEFAULT_MAX_SCHEMA_TOKENS, Principle, lint

err = Console(stderr=True)


def lint_command(
    ctx: typer.Context,
    target: Annotated[str | None, typer.Argument(help="Toolbox as MODULE:ATTR.")] = None,
    mcp: Annotated[
        list[str] | None,
        typer.Option(
            "--mcp", help="An MCP server whose tools to lint: a command (stdio) or an http(s) URL."
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 when there are findings.")
    ] = False,
    max_schema_tokens: Annotated[
        int,
        typer.Option(
            min=1, help="Flag a tool whose schema, as a model sees it, takes more o200k tokens."
        ),
    ] = DEFAULT_MAX_SCHEMA_TOKENS,
) -> None:
    """Check tools for reliability, documentation, atomicity and parseable outputs.

    One finding per line: the tool, the principle in brackets, where, what is wrong, the fix.
    With --strict, any finding makes the exit code 1.
    """
    # Imported here: the command module is imported by the app, which holds these.
    from ._inputs import gather_tools

    toolbox = gather_tools(ctx, target, mcp or [], given_as="TARGET")
    findings = lint(toolbox, max_schema_tokens=max_schema_tokens)
    sys.stdout.writelines(f"{finding}\n" for finding in findings)
    counts = Counter(f.principle for f in findings)
    shown = ", ".join(f"{p} {counts[p]}" for p in get_args(Principle) if counts[p])
    flagged = len({f.tool for f in findings})
    err.print(
        f"[dim]{len(toolbox)} tools, {flagged} with findings"
        + (f": {shown}" if shown else "")
        + "[/]",
        soft_wrap=True,
    )
    if strict and findings:
        raise typer.Exit(1)
