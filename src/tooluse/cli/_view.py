"""``tooluse view``: browse trace files and bench results in a local web page."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from .._exceptions import UsageError
from ._extras import need

err = Console(stderr=True)


def view(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Trace files (*.jsonl), bench output directories, or folders of them."),
    ],
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free port).")] = 8765,
    static: Annotated[
        Path | None,
        typer.Option("--static", help="Write a self-contained HTML bundle to this folder instead."),
    ] = None,
) -> None:
    """Show runs round by round, and bench tables, plots and diffs, in the browser."""
    need("view", "tooluse view")
    import uvicorn

    from ..view import Catalog, create_app, write_static

    catalog = Catalog.of(paths)
    if catalog.missing and len(catalog.missing) == len(paths):
        raise UsageError(f"no such file or directory: {', '.join(map(str, catalog.missing))}")
    if static is not None:
        written = write_static(catalog, static)
        err.print(f"wrote {len(written)} files to {static}; open {static / 'index.html'}")
        return
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as exc:
        listener.close()
        raise UsageError(f"cannot listen on 127.0.0.1:{port} ({exc}); pick another --port") from exc
    listener.listen(64)  # connections wait from now on, before the server has started
    bound = listener.getsockname()[1]
    runs = len(catalog.runs())
    err.print(
        f"{runs} runs, {len(catalog.benches)} bench directories: "
        f"http://127.0.0.1:{bound}/ (Ctrl-C stops)",
        soft_wrap=True,
    )
    config = uvicorn.Config(create_app(catalog, port=bound), log_level="warning")
    uvicorn.Server(config).run(sockets=[listener])
