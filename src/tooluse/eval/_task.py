"""What a benchmark entry is: tools and turns to run, the truth to answer with, a scorer.

A `Task` builds a fresh `Setup` for every run (tools may hold state, as BFCL's
multi-turn backends do), tells the oracle what the ground truth is in each
convention, and scores the runs it produced.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import Expect, Message, RunResult, Toolbox, UsageError

__all__ = ["BenchDataError", "Call", "OracleTurn", "Score", "Setup", "Task", "Turn"]


class BenchDataError(UsageError):
    """A suite's data is missing or malformed (recorded in the row of the entry it spoils)."""


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call by name, with arguments under the schema's parameter names."""

    tool: str
    arguments: Mapping[str, Any]


@dataclass(slots=True)
class Turn:
    """One user turn: what the user says and the tools available while answering it.

    `added` names tools that became available at this turn; the code convention's
    system prompt was written before they existed, so their stubs travel with the
    turn's message.
    """

    text: str
    tools: Toolbox
    added: Sequence[str] = ()


@dataclass(slots=True)
class Setup:
    """Everything one run of a task needs, built fresh for that run.

    `history` holds messages that precede the first turn (BFCL questions that
    replay an earlier exchange); `state` is the task's own handle on whatever
    its tools act on; `deps` is given to every run of the task (``deps=``), for
    the tools that take a `RunContext`.
    """

    turns: list[Turn]
    system_prompt: str | None = None
    history: list[Message] = field(default_factory=list)
    expect: list[Expect] = field(default_factory=list)
    state: Any = None
    deps: Any = None


@dataclass(frozen=True, slots=True)
class OracleTurn:
    """The ground-truth answer to one turn.

    `steps` are the assistant messages of the JSON and text conventions, each a
    list of calls made at once; `script` is the code convention's one script
    (None when the turn needs no tool); `plan` is the plan convention's (None:
    the steps written as a plan of literal calls); `answer` is the final text
    in every convention.
    """

    steps: Sequence[Sequence[Call]]
    script: str | None
    answer: str
    plan: str | None = None


@dataclass(slots=True)
class Score:
    """A scorer's verdict on one run of one task.

    `precision`: share of the calls made that name a tool the truth needs;
    `recall`: share of the needed calls that were made (by tool name);
    `argument_accuracy`: share of argument fields right over the calls paired
    with a needed call. None where the ratio has no denominator.
    """

    correct: bool
    detail: str | None = None
    precision: float | None = None
    recall: float | None = None
    argument_accuracy: float | None = None
    expected_calls: int = 0


class Task(ABC):
    """One benchmark entry."""

    suite: str = ""
    id: str = ""
    category: str = ""
    #: The task's size where it has one: fan-out width N, chain length.
    width: int | None = None
    #: Model requests allowed per turn.
    max_rounds: int = 10
    max_calls_per_turn: int = 128
    #: A call's result longer than this many characters is shown by handle
    #: (`Limits.result_limit`); None shows every result whole.
    result_limit: int | None = 6_000
    #: Whether a run may pad the toolbox with distractors and defer it behind tool
    #: search (`CallPolicy.tool_search`); single-turn tasks whose score ignores it.
    searchable: bool = False

    @abstractmethod
    def setup(self) -> Setup:
        """Fresh tools, turns and expectations for one run."""

    @abstractmethod
    def oracle(self, setup: Setup, convention: str) -> list[OracleTurn]:
        """The ground truth as answers, one per turn, for ``json``, ``text`` or ``code``."""

    @abstractmethod
    def score(self, setup: Setup, runs: Sequence[RunResult]) -> Score:
        """Judge the runs (one per turn that was reached)."""

    def teardown(self, setup: Setup) -> None:  # noqa: B027 - most tasks hold nothing
        """Release what `setup` built."""
