"""One AgentDojo results row: a user task, with or without an attack, run once."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._row import row_from_json, row_to_json

__all__ = ["AgentDojoRow"]

_IDENTITY = ("suite", "user_task", "convention", "model", "defense")


@dataclass(slots=True, kw_only=True)
class AgentDojoRow:
    """One run of `user_task`, attacked with `injection_task` (None: no attack).

    `utility` is AgentDojo's verdict on the user task; `attacked` its verdict
    that the injection task was achieved (always False without an attack).
    `calls` were executed, `failed_calls` of them returned an error,
    `rejected` were refused before execution, `denied` lists the calls a
    defense refused, each as ``tool: reason``; `untrusted_in_answer` what the
    answer repeats that only untrusted results held (under a provenance
    defense; `RunResult.untrusted_in_answer`). `error` says why a run could
    not be scored (``harness: …``), and `traceback` where; `status` and
    `run_error` are the run's own ending (``max_rounds``, a model error), which
    is scored like any other.
    """

    suite: str
    user_task: str
    injection_task: str | None = None
    convention: str
    model: str
    defense: str
    attack: str | None = None
    version: str = ""
    utility: bool = False
    attacked: bool = False
    status: str = "error"
    error: str | None = None
    run_error: str | None = None
    calls: int = 0
    failed_calls: int = 0
    rejected: int = 0
    denied: list[str] = dataclasses.field(default_factory=list)
    rounds: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    wall_s: float = 0.0
    answer: str | None = None
    untrusted_in_answer: list[str] = dataclasses.field(default_factory=list)
    traceback: str | None = None

    @property
    def key(self) -> tuple[Any, ...]:
        return (
            self.version,
            self.suite,
            self.user_task,
            self.injection_task,
            self.attack,
            self.convention,
            self.model,
            self.defense,
        )

    @property
    def group(self) -> tuple[str, str, str]:
        """What a summary line compares: model, defense, convention."""
        return (self.model, self.defense, self.convention)

    def to_json(self) -> dict[str, Any]:
        return row_to_json(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AgentDojoRow:
        """A row from a decoded ``results.jsonl`` line; ValueError when it is not one."""
        return row_from_json(cls, data, _IDENTITY, "an AgentDojo row")
