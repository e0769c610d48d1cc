"""Running a task's turns through the agent.

Every turn is one `Agent.arun` over the conversation so far (its `history`), so
tokens, validation and records are those of any run. Each turn gets an agent
over that turn's tools: in BFCL's ``miss_func`` entries functions arrive late.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import Agent, Message, RunResult
from ..models import Model
from ..sandbox import Sandbox
from ..tools import Toolbox
from ._task import Setup, Task, Turn

__all__ = ["run_setup"]

_ADDED_TOOLS_NOTE = "New functions are now available in module `tools`:"
# A turn that ends like this leaves the conversation unfinished; BFCL fails the
# entry there too (it force-quits after its step limit).
_STOPS = ("error", "max_rounds", "cycle")


def _agent(
    task: Task, turn: Turn, setup: Setup, *, model: Model, convention: str, sandbox: Sandbox | None
) -> Agent:
    return Agent(
        model,
        turn.tools,
        convention=convention,
        max_rounds=task.max_rounds,
        system_prompt=setup.system_prompt,
        max_calls_per_turn=task.max_calls_per_turn,
        sandbox=sandbox,
    )


def _stubs(tools: Toolbox, names: Sequence[str]) -> str:
    return Toolbox([t for t in tools if t.name in names]).stub_module()


async def run_setup(
    task: Task, setup: Setup, model: Model, convention: str, sandbox: Sandbox | None
) -> list[RunResult]:
    """One `RunResult` per turn reached; a turn that fails or hits its round limit ends the run."""
    results: list[RunResult] = []
    history: list[Message] = list(setup.history)
    for index, turn in enumerate(setup.turns):
        last = index == len(setup.turns) - 1
        text = turn.text
        if turn.added and convention == "code":
            # The stub module in the system prompt predates these functions.
            text = f"{_ADDED_TOOLS_NOTE}\n```python\n{_stubs(turn.tools, turn.added)}```\n\n{text}"
        agent = _agent(task, turn, setup, model=model, convention=convention, sandbox=sandbox)
        with agent:
            result = await agent.arun(text, expect=setup.expect if last else (), history=history)
        results.append(result)
        history = list(result.messages)
        if result.status in _STOPS:
            break
    return results
