"""Running a task's turns through the agent.

Every turn is one `Agent.arun` over the conversation so far (its `history`), so
tokens, validation and records are those of any run. Each turn gets an agent
over that turn's tools: in BFCL's ``miss_func`` entries functions arrive late.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .. import Agent, Expect, Limits, Message, RunResult
from ..conventions import Convention, Interpretation, Prepared, Retry, get_convention
from ..conventions._text import describe_tools
from ..models import Model, ModelResponse
from ..sandbox import Sandbox
from ..search import SearchMode
from ..tools import Toolbox
from ._task import Setup, Task, Turn

__all__ = ["Transcript", "run_setup"]

_ADDED_STUBS_NOTE = "New functions are now available in module `tools`:"
_ADDED_TOOLS_NOTE = "New tools are now available:"
# A turn that ends like this leaves the conversation unfinished; BFCL fails the
# entry there too (it force-quits after its step limit).
_STOPS = ("cancelled", "error", "max_rounds", "cycle")


@dataclass(slots=True)
class Transcript:
    """What one run of a task produced.

    `runs` holds a `RunResult` per turn reached; `unparsed` counts the replies
    the convention could not use at all and sent back for another try (a text
    reply whose calls do not parse, a script with a syntax error, an empty
    reply): they made no call, so `RunResult.calls` and `rejected` miss them.
    """

    runs: list[RunResult]
    unparsed: int = 0


class _Counting(Convention):
    """A convention that counts the replies it answers with `Retry`."""

    def __init__(self, inner: Convention) -> None:
        self.inner = inner
        self.name = inner.name
        self.native_tools = inner.native_tools
        self.caller = inner.caller
        self.chosen_by = inner.chosen_by
        self._retries = 0
        #: What a choosing convention chose, run after run.
        self.chosen: list[_Counting] = []

    @property
    def retries(self) -> int:
        return self._retries + sum(c.retries for c in self.chosen)

    def for_run(self, task: str, expect: Sequence[Expect], *, model: str = "") -> Convention:
        chosen = self.inner.for_run(task, expect, model=model)
        if chosen is self.inner:
            return self
        counting = _Counting(chosen)
        self.chosen.append(counting)
        return counting

    def prepare(self, tools: Toolbox, system_prompt: str | None) -> Prepared:
        return self.inner.prepare(tools, system_prompt)

    def interpret(self, response: ModelResponse) -> Interpretation:
        action = self.inner.interpret(response)
        if isinstance(action, Retry):
            self._retries += 1
        return action


@dataclass(frozen=True, slots=True)
class CallPolicy:
    """How the agent is asked to work: the json convention's calls (tool choice, parallel
    calls), rounds, tool search, answer checks; see `Agent`'s arguments of the same names."""

    tool_choice: str | None = None
    parallel_tool_calls: bool | None = None
    #: Model requests per turn, instead of the task's own limit (1: BFCL's
    #: single-response scoring, where what the model does after its calls is
    #: not counted).
    max_rounds: int | None = None
    #: Tool search for searchable tasks (``auto``, ``always``, ``never``; None: never).
    tool_search: SearchMode | None = None
    #: Pad a searchable task's toolbox with distractor BFCL functions up to this size.
    toolbox_size: int | None = None
    #: Check final answers against the run's results (``Agent(check_answers=...)``);
    #: None leaves it to the model, as an agent built with the defaults does.
    check_answers: bool | None = None

    @property
    def label(self) -> str:
        """What rows add to the model's name; empty for the default policy."""
        parts = []
        if self.tool_choice not in (None, "auto"):
            parts.append(f"tool_choice={self.tool_choice}")
        if self.parallel_tool_calls is not None:
            parts.append(f"parallel_tool_calls={str(self.parallel_tool_calls).lower()}")
        if self.max_rounds is not None:
            parts.append(f"max_rounds={self.max_rounds}")
        if self.tool_search not in (None, "never"):
            parts.append(f"tool_search={self.tool_search}")
        if self.toolbox_size is not None:
            parts.append(f"toolbox={self.toolbox_size}")
        if self.check_answers is not None:
            parts.append("check_answers" if self.check_answers else "check_answers=false")
        return " ".join(parts)


def _agent(
    task: Task,
    turn: Turn,
    setup: Setup,
    *,
    model: Model,
    convention: Convention,
    sandbox: Sandbox | None,
    calls: CallPolicy,
    trace: Path | None,
) -> Agent:
    return Agent(
        model,
        turn.tools,
        convention=convention,
        max_rounds=calls.max_rounds or task.max_rounds,
        system_prompt=setup.system_prompt,
        limits=Limits(max_calls_per_turn=task.max_calls_per_turn, result_limit=task.result_limit),
        sandbox=sandbox,
        tool_choice=calls.tool_choice,
        parallel_tool_calls=calls.parallel_tool_calls,
        check_answers=calls.check_answers,
        tool_search=(calls.tool_search or "never") if task.searchable else "never",
        trace=trace,
    )


def _only(tools: Toolbox, names: Sequence[str]) -> Toolbox:
    return Toolbox([t for t in tools if t.name in names])


def _turn_text(turn: Turn, convention: str) -> str:
    """The turn's message; tools added at this turn are described in it where needed.

    The code and text conventions list the tools in the system prompt, which
    was written at the first turn; JSON sends every turn's tools with the request.
    """
    if not turn.added:
        return turn.text
    if convention == "code":
        stubs = _only(turn.tools, turn.added).stub_module(module="tools")
        return f"{_ADDED_STUBS_NOTE}\n```python\n{stubs}```\n\n{turn.text}"
    if convention == "text":
        listing = describe_tools(_only(turn.tools, turn.added))
        return f"{_ADDED_TOOLS_NOTE}\n{listing}\n{turn.text}"
    return turn.text


async def run_setup(
    task: Task,
    setup: Setup,
    model: Model,
    convention: str,
    sandbox: Sandbox | None,
    *,
    calls: CallPolicy | None = None,
    trace: Path | None = None,
) -> Transcript:
    """Run the turns in order; a turn that fails or hits its round limit ends the run.

    `calls` applies to the json convention only (see `Agent`), but for
    its `max_rounds`, which applies to every convention. With `trace`, each
    turn's run appends its events to that file.
    """
    policy = calls or CallPolicy()
    if convention != "json":  # tool choice and parallel calls are the json convention's
        policy = replace(policy, tool_choice=None, parallel_tool_calls=None)
    counting = _Counting(get_convention(convention))
    transcript = Transcript(runs=[])
    history: list[Message] = list(setup.history)
    for index, turn in enumerate(setup.turns):
        last = index == len(setup.turns) - 1
        agent = _agent(
            task,
            turn,
            setup,
            model=model,
            convention=counting,
            sandbox=sandbox,
            calls=policy,
            trace=trace,
        )
        with agent:
            result = await agent.arun(
                _turn_text(turn, convention),
                expect=setup.expect if last else (),
                history=history,
                deps=setup.deps,
            )
        transcript.runs.append(result)
        history = list(result.messages)
        if result.status in _STOPS:
            break
    transcript.unparsed = counting.retries
    return transcript
