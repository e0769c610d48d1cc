"""`RunContext`: what a tool is given by the run that calls it, never by the model.

A tool that needs a database handle, the user's id or an HTTP client takes a
parameter annotated ``RunContext[Deps]``. It is not a parameter the model sees:
no schema, stub or grammar shows it. Each call gets a `RunContext` whose `deps`
is what the run was given (``agent.run(task, deps=...)``), so two runs with
different dependencies never see each other's, as module globals would.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["RunContext", "is_run_context"]

DepsT = TypeVar("DepsT")


@dataclass(frozen=True, slots=True)
class RunContext(Generic[DepsT]):
    """The run's dependencies, given to a tool that asks for them.

    Attributes:
        deps: what the run was given as ``deps`` (None if nothing).
        call_id: the id of the call being answered.
        tool: the name of the tool called.
    """

    deps: DepsT
    call_id: str = ""
    tool: str = ""


def is_run_context(annotation: Any) -> bool:
    """Whether a parameter annotated so asks for the `RunContext`."""
    return annotation is RunContext or typing.get_origin(annotation) is RunContext
