"""How tools are presented to a model and how its replies are read."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._messages import ToolCall
from ..models import ModelResponse, ReplyFormat, ToolChoice
from ..tools import Caller, Tool, Toolbox
from ..tools._output import output_of
from ._plan_program import PlanProgram

if TYPE_CHECKING:
    from .._expect import Expect

__all__ = [
    "Answer",
    "Calls",
    "Convention",
    "Interpretation",
    "Plan",
    "Prepared",
    "Retry",
    "Script",
    "system_text",
]


@dataclass(frozen=True, slots=True)
class Prepared:
    """What a convention adds to every request of a run."""

    system_prompt: str | None
    tools: Sequence[Tool] = ()
    tool_choice: ToolChoice = "auto"
    reply_format: ReplyFormat = "text"
    #: The tools the system prompt describes, for a reply format that writes calls as text.
    described_tools: Sequence[Tool] = ()
    #: With an output type: what a reply in plain text is told (how this convention
    #: ends a run with the result); None for the loop's own wording.
    output_note: str | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """The model gave its final answer."""

    text: str


@dataclass(frozen=True, slots=True)
class Calls:
    """The model asked for tool calls; `notes` are shape problems to tell it about."""

    calls: Sequence[ToolCall]
    notes: Sequence[str] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class Retry:
    """The reply could not be used; `feedback` tells the model why."""

    feedback: str


@dataclass(frozen=True, slots=True)
class Script:
    """The model wrote a script to run; `repairs` name what was fixed to read it."""

    code: str
    repairs: Sequence[str] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class Plan:
    """The model sent a plan: every call at once, later ones using earlier results."""

    program: PlanProgram


Interpretation = Answer | Calls | Retry | Script | Plan


class Convention(ABC):
    """A calling convention: `prepare` once per run, `interpret` every reply.

    One convention may serve several runs at once; what `prepare` learns
    about a run belongs in a `PerRun`, not on the convention.
    """

    name: str = "convention"
    #: Whether `prepare` hands the tools to the model's API, where a tool choice applies.
    native_tools: bool = False
    #: Who calls the tools under this convention: the model, or a script it writes.
    #: Tools whose ``callers`` leave it out are not shown.
    caller: Caller = "model"
    #: Why this convention runs, when another chose it (`AutoConvention`).
    chosen_by: str | None = None

    def for_run(self, task: str, expect: Sequence[Expect], *, model: str = "") -> Convention:
        """The convention that runs `task`: this one, unless it chooses per run."""
        return self

    @abstractmethod
    def prepare(self, tools: Toolbox, system_prompt: str | None) -> Prepared:
        """The system prompt and API tools for a run over `tools`."""

    @abstractmethod
    def interpret(self, response: ModelResponse) -> Interpretation:
        """Read one model reply."""


def system_text(given: str | None, prompt: str) -> str:
    """A run's system prompt: the caller's own, then the convention's `prompt`."""
    return f"{given}\n\n{prompt}" if given else prompt


def example_and_finish(tools: Toolbox, finish: str, output_finish: str) -> tuple[str, str]:
    """What a prompt for written code shows: the function its example calls, and how a run
    ends: `finish`, or with an output type `output_finish` (with ``{name}``)."""
    output = output_of(tools)
    # The example calls a tool that looks something up, never the output tool.
    ending = output.name if output is not None else None
    example = next((s.function for s in tools.stub_signatures() if s.tool != ending), "tool")
    return example, finish if output is None else output_finish.format(name=output.name)


def written_reply(prompt: str, tools: Toolbox, output_note: str) -> Prepared:
    """What a convention whose replies are written code asks for: no native tools.

    `output_note` (with ``{name}``) is what a plain-text reply is told when the run
    has an output type: how this convention hands its value over.
    """
    output = output_of(tools)
    return Prepared(
        system_prompt=prompt,
        tools=(),
        tool_choice="none",
        reply_format="code",
        output_note=output_note.format(name=output.name) if output is not None else None,
    )
