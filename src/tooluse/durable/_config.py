"""Where durable runs are recorded, and which agent may recover them: no DBOS import here,
so that an agent without ``durable`` never loads it."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from .._exceptions import UsageError
from ..tools import Toolbox

__all__ = ["Durable", "as_durable", "default_url", "fingerprint", "require_dbos"]


def default_url() -> str:
    """The SQLite file durable runs go to by default, beside `tooluse chat`'s conversations."""
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return f"sqlite:///{data / 'tooluse' / 'runs.sqlite'}"


@dataclass(frozen=True, slots=True)
class Durable:
    """Where an agent's runs are recorded, and as which worker.

    Args:
        url: ``sqlite:///path`` (one machine) or ``postgresql://…`` (workers sharing
            one database).
        worker: the name this process records its runs under. A process started
            again under the same name recovers that worker's pending runs when it
            starts; another worker takes them over with `tooluse.durable.recover`.
            Give each of several live workers sharing a database its own name.
    """

    url: str
    worker: str = "local"

    def __post_init__(self) -> None:
        if not self.url.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise UsageError(
                f"durable={self.url!r} is not a database URL: give True (the default SQLite "
                "file), 'sqlite:///path' or 'postgresql://…'"
            )
        if not self.worker:
            raise UsageError("a durable worker needs a name")


def as_durable(value: bool | str | Durable | None) -> Durable | None:
    """What ``Agent(durable=...)`` accepts, as a `Durable` (None for a plain agent)."""
    if value is None or value is False:
        return None
    if value is True:
        return Durable(default_url())
    if isinstance(value, Durable):
        return value
    if isinstance(value, str):
        return Durable(value)
    raise UsageError(
        f"durable must be True, a database URL or a Durable, not {type(value).__name__}"
    )


def require_dbos(what: str) -> None:
    """Raise `UsageError` naming the extra to install, if DBOS is not importable."""
    try:
        importlib.import_module("dbos")
    except ImportError as exc:
        raise UsageError(
            f"{what} needs the durable extra ({exc.name or 'dbos'} is missing): "
            "pip install 'tooluse[durable]'"
        ) from exc


def _release() -> str:
    try:
        return version("tooluse")
    except PackageNotFoundError:  # a source tree on the path, not installed
        return "source"


def fingerprint(tools: Toolbox, convention: str) -> str:
    """What a recorded run depends on: the tools as the model and the record see them
    (names, schemas, effects), the convention and the release. A run is recovered only
    by an agent with the same fingerprint."""
    described = [[t.name, t.parameters, t.effects] for t in sorted(tools, key=lambda t: t.name)]
    text = json.dumps([_release(), convention, described], sort_keys=True, default=str)
    return "tooluse-" + hashlib.sha256(text.encode()).hexdigest()[:16]
