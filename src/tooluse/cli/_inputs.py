"""What commands take in: a toolbox named as ``MODULE:ATTR``, ``--mcp`` servers, a trace file.

Shared by the commands of every module here, so none imports another command's module.
"""

from __future__ import annotations

import logging
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape

from .._exceptions import UsageError
from .._imports import import_target
from ._extras import need

# The runtime's modules are imported where a command uses them, so that a command
# that needs none of them starts without loading them.
if TYPE_CHECKING:
    from ..mcp import MCPClient
    from ..run._trace import JsonlTrace
    from ..tools import Toolbox

__all__ = ["gather_tools", "load_attribute", "load_toolbox", "open_servers", "open_trace"]

err = Console(stderr=True)


def load_toolbox(target: str, *, given_as: str = "--tools") -> Toolbox:
    """Import ``MODULE:ATTR`` and turn what it names into a toolbox.

    `given_as` is how the command takes it (``--tools``, or an argument such as
    ``TARGET``), so that an error names what the user typed.
    """
    from ..tools import Tool, Toolbox

    value = load_attribute(target, given_as=given_as)
    if isinstance(value, Toolbox):
        return value
    if isinstance(value, Tool) or callable(value):
        return Toolbox([value])
    if isinstance(value, list | tuple):
        return Toolbox(value)
    raise UsageError(f"{target} is a {type(value).__name__}, not a toolbox, tool or list of tools")


def load_attribute(target: str, *, given_as: str) -> Any:
    """What ``MODULE:ATTR`` names, imported from the working directory or the path."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise UsageError(
            f"{given_as} takes MODULE:ATTR, e.g. examples.seed_tools:toolbox; got {target!r}"
        )
    try:
        return import_target(target)
    except ValueError as exc:
        # The module is the user's code: whatever importing it raised is a mistake in
        # what was named, not a failure of tooluse.
        raise UsageError(str(exc)) from None


class _WarningLine(logging.Handler):
    """A library's logged warning, as one of the command's own warning lines."""

    def emit(self, record: logging.LogRecord) -> None:
        err.print(f"[yellow]warning:[/] {escape(record.getMessage())}", soft_wrap=True)


def open_servers(ctx: typer.Context, servers: list[str]) -> list[MCPClient]:
    """Open each ``--mcp`` server (a URL, or a command) until the command ends.

    Tools a server lists but that cannot be used are warned of, and so is what a
    server says of itself (on the ``tooluse.mcp`` logger), such as text on its stdout.
    """
    if not servers:
        return []
    need("mcp", "--mcp")
    from ..mcp import MCPClient

    said = logging.getLogger("tooluse.mcp")
    if not any(isinstance(h, _WarningLine) for h in said.handlers):
        said.addHandler(_WarningLine(logging.WARNING))
        said.propagate = False  # said here, once

    clients = []
    for server in servers:
        if server.startswith(("http://", "https://")):
            client = MCPClient.http(server)
        else:
            argv = shlex.split(server)
            if argv and argv[0] in ("python", "python3"):
                argv[0] = sys.executable  # the Python tooluse runs on, with its packages
            client = MCPClient.stdio(argv)
        clients.append(ctx.with_resource(client))
        for reason in client.refused.values():
            err.print(
                f"[yellow]warning:[/] MCP server {escape(server)}: {escape(reason)}; "
                "the tool is left out",
                soft_wrap=True,
            )
    return clients


def gather_tools(
    ctx: typer.Context, target: str | None, servers: list[str], *, given_as: str = "--tools"
) -> Toolbox:
    """The toolbox `target` names and the ``--mcp`` servers' tools, as one toolbox.

    `given_as` is how the command takes `target`: ``--tools``, or an argument.
    """
    if target is None and not servers:
        named = (
            f"{given_as} MODULE:ATTR" if given_as.startswith("-") else f"{given_as} as MODULE:ATTR"
        )
        raise UsageError(f"give the tools: {named}, --mcp CMD|URL, or both")
    from ..tools import Toolbox

    local = load_toolbox(target, given_as=given_as) if target is not None else Toolbox()
    clients = open_servers(ctx, servers)
    if not clients:
        return local
    from ..mcp import combine

    return combine(local, *clients)


def open_trace(path: Path) -> JsonlTrace:
    # Opened here rather than by the agent so that a path that cannot be written
    # is refused before the run starts, as one line naming the path.
    from ..run._trace import JsonlTrace

    try:
        return JsonlTrace(path)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.filename is not None and str(exc.filename) != str(path):
            reason = f"{reason}: {exc.filename}"  # the parent the directory could not be made in
        raise UsageError(f"cannot write the trace to {path}: {reason}") from exc
