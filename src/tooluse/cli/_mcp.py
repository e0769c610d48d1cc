"""``tooluse mcp …``: a toolbox served to MCP clients."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from .._exceptions import UsageError
from ._extras import need
from ._inputs import load_attribute

if TYPE_CHECKING:
    from ..policy import ApprovalPolicy

mcp_app = typer.Typer(help="Serve toolboxes over the Model Context Protocol.", no_args_is_help=True)
err = Console(stderr=True)


@mcp_app.command("serve")
def serve_command(
    target: Annotated[str, typer.Argument(help="Toolbox to serve, as MODULE:ATTR.")],
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio; "
            "a bare PORT binds 127.0.0.1, and port 0 takes a free one.",
        ),
    ] = None,
    name: Annotated[str, typer.Option(help="The server's name, as clients show it.")] = "tooluse",
    trace: Annotated[
        Path | None, typer.Option(help="Append a JSON Lines event for every call to this file.")
    ] = None,
    approve: Annotated[
        str,
        typer.Option(
            "--approve",
            metavar="MODE",
            help="Before calls run: none (run every valid call), ask (ask the client's user, "
            "through MCP elicitation, before each call to a tool with side effects), ask-all "
            "(before every call), deny (refuse every call to a tool with side effects), or "
            "MODULE:ATTR naming an approval policy or function.",
        ),
    ] = "none",
) -> None:
    """Serve TARGET's tools over stdio, or over HTTP with --http.

    Every call is validated, run and recorded by the same dispatcher as in an agent run;
    a call refused or failed is an error result the client's model can read.
    """
    need("mcp", "tooluse mcp serve")
    # Imported here: the command module is imported by the app, which holds these.
    from ..mcp import serve
    from ._inputs import load_toolbox, open_trace

    toolbox = load_toolbox(target, given_as="TARGET")
    policy = server_policy(approve)
    writer = open_trace(trace) if trace is not None else None

    def ready(where: str) -> None:
        # Printed on stderr: on stdio, stdout carries the protocol.
        err.print(f"serving {len(toolbox)} tools at {escape(where)}", soft_wrap=True)

    if http is None:
        ready("stdin and stdout")
    try:
        serve(toolbox, http=http, name=name, on_event=writer, ready=ready, approval=policy)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how an HTTP server is stopped
    finally:
        if writer is not None:
            writer.close()


def server_policy(mode: str) -> ApprovalPolicy | None:
    """What ``--approve`` names, as the server's approval policy."""
    from ..policy import Approval, ApprovalPolicy

    if mode == "none":
        return None
    if mode in ("ask", "ask-all"):
        # Deferred: the server puts each such call to the calling client's user.
        defer = lambda request: Approval.defer()  # noqa: E731
        return ApprovalPolicy(defer, asks="all" if mode == "ask-all" else "side_effects")
    if mode == "deny":
        refuse = lambda request: Approval.deny(  # noqa: E731
            "this server refuses every call to a tool with side effects"
        )
        return ApprovalPolicy(refuse)
    if ":" not in mode:
        raise UsageError(f"--approve takes none, ask, ask-all, deny or MODULE:ATTR; got {mode!r}")
    named = load_attribute(mode, given_as="--approve")
    if isinstance(named, ApprovalPolicy):
        return named
    if callable(named):
        return ApprovalPolicy(named)
    raise UsageError(f"{mode} is a {type(named).__name__}, not an approval policy or function")
