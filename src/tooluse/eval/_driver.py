"""Running a task's turns through the agent loop.

A one-turn task with no prior messages is exactly `Agent.arun`. A task with
several turns (BFCL multi-turn) or with messages before its question needs a
conversation that survives between runs, which `Agent` does not keep; each turn
then runs the same loop (`agent_flow`, driven by the agent's own driver) over
the conversation so far, so tokens, validation and records are identical.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence

from .. import Agent, Dispatcher, Message, RunResult
from .._expect import check_expectations
from .._loop import RunState, agent_flow
from ..conventions import Prepared
from ..models import Model
from ..sandbox import Sandbox
from ..tools import Toolbox
from ._task import Setup, Task, Turn

__all__ = ["run_setup"]

_ADDED_TOOLS_NOTE = "New functions are now available in module `tools`:"


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


async def run_setup(
    task: Task, setup: Setup, model: Model, convention: str, sandbox: Sandbox | None
) -> list[RunResult]:
    """One `RunResult` per turn reached; a turn that fails or hits its round limit ends the run."""
    if len(setup.turns) == 1 and not setup.history:
        turn = setup.turns[0]
        with _agent(
            task, turn, setup, model=model, convention=convention, sandbox=sandbox
        ) as agent:
            return [await agent.arun(turn.text, expect=setup.expect)]
    results: list[RunResult] = []
    conversation: list[Message] = []
    for index, turn in enumerate(setup.turns):
        with _agent(
            task, turn, setup, model=model, convention=convention, sandbox=sandbox
        ) as agent:
            last = index == len(setup.turns) - 1
            result = await _run_turn(agent, setup, turn, conversation, last=last)
        results.append(result)
        conversation = list(result.messages)
        if result.status in ("error", "max_rounds", "cycle"):
            break
    return results


def _stubs(tools: Toolbox, names: Sequence[str]) -> str:
    return Toolbox([t for t in tools if t.name in names]).stub_module()


async def _run_turn(
    agent: Agent, setup: Setup, turn: Turn, conversation: list[Message], *, last: bool
) -> RunResult:
    state = RunState(emit=lambda event: None, tracing=False, count_tokens=agent.config.count_tokens)
    prepared = agent.convention.prepare(agent.tools, agent.system_prompt)
    if not conversation:
        if prepared.system_prompt:
            state.add(Message("system", prepared.system_prompt))
        conversation = list(setup.history)
    for message in conversation:
        state.add(
            Message(
                message.role,
                message.content,
                message.tool_calls,
                message.tool_call_id,
                message.name,
            )
        )
        state.call_ids.update(call.id for call in message.tool_calls)
    text = turn.text
    if turn.added and agent.convention.name == "code":
        text = f"{_ADDED_TOOLS_NOTE}\n```python\n{_stubs(agent.tools, turn.added)}```\n\n{text}"
    # The system message is already part of the conversation.
    flow = agent_flow(
        state,
        text,
        Prepared(None, prepared.tools, prepared.tool_choice),
        agent.convention,
        agent.config,
    )
    dispatcher = Dispatcher(
        agent.tools,
        timeout=agent.tool_timeout,
        max_concurrency=agent.max_concurrency,
        max_calls_per_turn=agent.max_calls_per_turn,
        ledger=agent.ledger,
    )
    start = time.perf_counter()
    try:
        await agent._drive(flow, dispatcher)
    except Exception as exc:
        # As in Agent.arun: whatever broke, the turn's record so far is kept.
        state.status = "error"
        state.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
    finally:
        dispatcher.close()
    if last and state.status == "completed" and setup.expect:
        shortfall = check_expectations(setup.expect, state.calls)
        if shortfall is not None:
            state.status, state.error = "truncated", shortfall
    return RunResult(
        answer=state.answer,
        status=state.status,
        calls=state.calls,
        rejected=state.rejected,
        scripts=state.scripts,
        messages=state.messages,
        usage=state.usage,
        rounds=state.rounds,
        error=state.error,
        duration_s=time.perf_counter() - start,
        model=agent.model.name,
        convention=agent.convention.name,
    )
