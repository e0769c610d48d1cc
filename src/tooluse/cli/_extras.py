"""Commands that need an optional extra say so in one line, before doing any work.

``pip install tooluse`` is what running an agent needs; evaluation, the viewer and
the MCP client and server each come with an extra (pyproject.toml). A command
checks its extra on entry, so that a bench never runs for an hour to fail at
its plots.
"""

from __future__ import annotations

import importlib

from .._exceptions import UsageError

__all__ = ["EXTRAS", "need"]

#: The modules each extra brings that the commands import.
EXTRAS: dict[str, tuple[str, ...]] = {
    "durable": ("dbos",),
    "eval": ("numpy", "matplotlib"),
    "mcp": ("mcp",),
    "view": ("uvicorn", "starlette", "markdown_it"),
    "vision": ("PIL", "rapidocr_onnxruntime"),
}


def need(extra: str, command: str) -> None:
    """Raise `UsageError` naming `extra` and how to install it, if it is not importable.

    Imported rather than looked up: an install missing a dependency of its own
    (matplotlib without kiwisolver) fails here, naming what is missing.
    """
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise UsageError(
                f"{command} needs the {extra} extra ({exc.name or module} is missing): "
                f"pip install 'tooluse[{extra}]'"
            ) from exc
