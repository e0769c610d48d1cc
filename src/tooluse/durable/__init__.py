"""Durable runs: each run of an agent made with ``durable=`` is a DBOS workflow.

Model requests and tool calls are recorded steps, so a run that a crash stopped
is finished by the next process that starts the agent (or by another worker
sharing a Postgres database), with nothing that ended asked or run again. A
write call caught mid-way is in doubt and goes to the approval policy, and a
deferred decision waits in the database for `approve`. Needs the ``durable``
extra; importing this package does not import DBOS. See docs/durable.md.
"""

from __future__ import annotations

from .._exceptions import (
    DurableError,
    DurableStoreError,
    NotPendingError,
    RunDivergedError,
    RunVersionError,
    UnknownRunError,
)
from ._config import Durable, default_url
from ._runs import RunInfo, StepInfo, approve, list_runs, recover, show_run

__all__ = [
    "Durable",
    "DurableError",
    "DurableStoreError",
    "NotPendingError",
    "RunDivergedError",
    "RunInfo",
    "RunVersionError",
    "StepInfo",
    "UnknownRunError",
    "approve",
    "default_url",
    "list_runs",
    "recover",
    "show_run",
]
