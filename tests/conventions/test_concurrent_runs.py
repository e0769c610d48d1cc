"""Runs at the same time, in every convention: each sees only its own calls and answer."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tooluse import Agent, Limits, RunResult, Toolbox, UsageError, tool
from tooluse.conventions import (
    CodeConvention,
    Convention,
    JsonConvention,
    Prepared,
    TextConvention,
)
from tooluse.models import Model, ModelRequest, ModelResponse, ScriptedModel

Reply = Mapping[str, Any] | str


class Interleaved(Model):
    """Answers each task from a script of its own, once every task has asked once.

    Runs started together therefore all prepare before any reply is read: a
    convention that kept one run's state where another could overwrite it
    reads one run's reply with the other run's tools.
    """

    name = "interleaved"

    def __init__(self, scripts: Mapping[str, Sequence[Reply]]) -> None:
        self.models = {task: ScriptedModel(replies) for task, replies in scripts.items()}
        self.asked = {task: asyncio.Event() for task in scripts}

    async def respond(self, request: ModelRequest) -> ModelResponse:
        task = next(m.content for m in request.messages if m.role == "user")
        assert task is not None
        self.asked[task].set()
        async with asyncio.timeout(60):
            for event in self.asked.values():
                await event.wait()
        return await self.models[task].respond(request)


@tool
def echo(text: str) -> str:
    """Return the text."""
    return text


@tool
def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper()


def json_call(name: str, text: str) -> dict[str, Any]:
    arguments = f'{{"text": "{text}"}}'
    return {"tool_calls": [{"id": "c1", "function": {"name": name, "arguments": arguments}}]}


def fenced(name: str, text: str) -> str:
    return f"```python\nimport tools\nprint(tools.{name}(text='{text}'))\n```"


CALLS = {
    "json": json_call,
    "code": fenced,
    "text": lambda name, text: f"[{name}(text='{text}')]",
    "react": lambda name, text: f'Thought: go.\nAction: {name}[{{"text": "{text}"}}]',
}
ANSWERS = {"react": "Final Answer: {}"}


def convention(name: str) -> str | Convention:
    return TextConvention("react") if name == "react" else name


async def gather(runs: Sequence[tuple[Agent, str]]) -> list[RunResult]:
    return list(await asyncio.gather(*(agent.arun(task) for agent, task in runs)))


@pytest.mark.parametrize("name", list(CALLS))
def test_two_runs_on_one_agent(name: str, agents: list[Agent]) -> None:
    write, answer = CALLS[name], ANSWERS.get(name, "{}")
    model = Interleaved(
        {
            "first": [write("echo", "alpha"), answer.format("alpha done")],
            "second": [write("echo", "beta"), answer.format("beta done")],
        }
    )
    agent = Agent(model, [echo], convention=convention(name), limits=Limits(script_timeout=20))
    agents.append(agent)

    first, second = asyncio.run(gather([(agent, "first"), (agent, "second")]))

    assert (first.status, first.answer) == ("completed", "alpha done")
    assert (second.status, second.answer) == ("completed", "beta done")
    assert [(c.name, c.arguments, c.result) for c in first.calls] == [
        ("echo", {"text": "alpha"}, "alpha")
    ]
    assert [(c.name, c.arguments, c.result) for c in second.calls] == [
        ("echo", {"text": "beta"}, "beta")
    ]
    assert "beta" not in str(first.messages) and "alpha" not in str(second.messages)


def test_a_text_convention_shared_by_agents_reads_each_run_with_its_own_tools() -> None:
    # A lone call without brackets, with its argument by position, is read only
    # by a convention that knows the tool and its parameters.
    model = Interleaved(
        {
            "first": ["echo('alpha')", "alpha done"],
            "second": ["shout('beta')", "BETA done"],
        }
    )
    shared = TextConvention()
    runs = [
        (Agent(model, [echo], convention=shared), "first"),
        (Agent(model, [shout], convention=shared), "second"),
    ]

    first, second = asyncio.run(gather(runs))

    assert [(c.name, c.result) for c in first.calls] == [("echo", "alpha")]
    assert [(c.name, c.result) for c in second.calls] == [("shout", "BETA")]
    assert (first.answer, second.answer) == ("alpha done", "BETA done")


def test_a_code_convention_shared_by_agents_reads_each_run_with_its_own_tools(
    agents: list[Agent],
) -> None:
    # An unfenced reply is a script only when it calls one of the run's tools;
    # otherwise it would be the final answer.
    model = Interleaved(
        {
            "first": ["echo(text='alpha')", "alpha done"],
            "second": ["shout(text='beta')", "BETA done"],
        }
    )
    shared = CodeConvention()
    agents.extend(
        [
            Agent(model, [echo], convention=shared, limits=Limits(script_timeout=20)),
            Agent(model, [shout], convention=shared, limits=Limits(script_timeout=20)),
        ]
    )

    first, second = asyncio.run(gather(list(zip(agents, ["first", "second"], strict=True))))

    assert [s.code for s in first.scripts] == ["echo(text='alpha')\n"]
    assert [s.code for s in second.scripts] == ["shout(text='beta')\n"]
    assert (first.answer, second.answer) == ("alpha done", "BETA done")


@pytest.mark.parametrize("shared", [TextConvention(), CodeConvention()], ids=["text", "code"])
def test_reading_a_reply_before_preparing_a_run_is_a_usage_error(shared: Convention) -> None:
    shared.prepare(Toolbox([echo]), None)
    # A context of its own, as another run has: what this one prepared is not there.
    elsewhere = contextvars.Context()
    with pytest.raises(UsageError, match=r"interpret\(\) was called before prepare\(\)"):
        elsewhere.run(shared.interpret, ModelResponse(content="[echo(text='x')]"))


class Counted(JsonConvention):
    def __init__(self) -> None:
        self.prepared = 0

    def prepare(self, tools: Toolbox, system_prompt: str | None) -> Prepared:
        self.prepared += 1
        return super().prepare(tools, system_prompt)


def test_making_an_agent_prepares_no_run() -> None:
    counted = Counted()
    agent = Agent(ScriptedModel(["done"]), [echo], convention=counted, tool_choice="required")
    assert counted.prepared == 0
    assert agent.run("go").answer == "done" and counted.prepared == 1
    with pytest.raises(UsageError, match="passes tools natively"):
        Agent(ScriptedModel([]), [echo], convention="text", tool_choice="required")
