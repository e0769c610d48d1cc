"""A run's scope: the tools with side effects it may call, fixed before it reads anything.

Argument provenance (`tooluse.policy._provenance`) sees the values of a call, not why
it was made: an injected "reserve the most expensive hotel" names no value the
policy could trace. The scope closes that gap for whole tools. Before the
first round, while the model has seen the task and nothing a tool returned, the
run fixes which tools with side effects it may call; later, a call to any other
one is denied, whatever the text the run read since asks for. This is the
control-flow half of CaMeL (Debenedetti et al. 2025) at the granularity of tool
names, and AgentDojo's tool filter, enforced by the dispatcher for JSON calls,
plan steps and script calls alike.

The scope comes from the developer (``Agent(scope=["send_money"])``) or from
the model (``scope="ask"``): one extra request, holding only the system prompt,
the task and the tools with side effects, whose forced reply is a call to
`SCOPE_TOOL` naming the tools the task needs. Tools without side effects are
never limited; reading stays free.

What it cannot stop: an injected action that uses a tool the task needed anyway
(a second payment when the task pays a bill), which is provenance's part, and
an answer that repeats injected text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._messages import Message, Usage
from .._tokens import count_tokens
from ..models._base import Model, ModelRequest, ModelResponse
from ..tools import Tool
from ._approval import Approval, ApprovalPolicy, ApprovalRequest

__all__ = ["SCOPE_TOOL", "AllowInScope", "Asked", "ask_scope", "read_scope"]

#: The tool the model calls to say which tools with side effects the task needs.
SCOPE_TOOL = "declare_needed_tools"

_QUESTION = (
    "Before the task starts, say which of the tools below that change something "
    "(send, book, pay, write, delete) the task needs. Name only tools the task asks "
    "for, and none if it only reads. Calls to tools you do not name will be refused "
    "for the rest of the task, whatever later text asks for."
)


class AllowInScope(ApprovalPolicy):
    """The policy of a run with a scope and no approval policy: the scope decides alone."""

    inline = True

    def __init__(self) -> None:
        super().__init__(timeout=None)

    def __call__(self, request: ApprovalRequest) -> Approval:
        return Approval.allow()


@dataclass(frozen=True, slots=True)
class Asked:
    """The model's answer to the scope question."""

    scope: frozenset[str]
    usage: Usage
    problem: str | None
    """What was wrong with the reply (the scope is then what could be read, maybe none)."""


async def ask_scope(
    model: Model, task: str, tools: Sequence[Tool], system_prompt: str | None, *, count: bool
) -> Asked:
    """Put the scope question to `model`; `count` estimates tokens a backend does not report."""
    if not any(t.side_effects for t in tools):
        return Asked(frozenset(), Usage(), None)
    request = scope_request(task, tools, system_prompt)
    response = await model.respond(request)
    scope, problem = read_scope(response, tools)
    usage = response.usage
    if usage is None:
        usage = Usage()
        if count:
            sent = "\n".join(m.content or "" for m in request.messages)
            sent += json.dumps([t.parameters for t in request.tools])
            said = "".join(c.arguments for c in response.tool_calls) + (response.content or "")
            usage = Usage(count_tokens(sent), count_tokens(said), "o200k")
    return Asked(scope, usage, problem)


def scope_request(task: str, tools: Sequence[Tool], system_prompt: str | None) -> ModelRequest:
    """The question put to the model: the task and the tools with side effects, nothing else."""
    acting = [t for t in tools if t.side_effects]
    listed = "\n".join(f"- {t.name}: {_first_line(t.description)}" for t in acting)
    declare = Tool.from_schema(
        SCOPE_TOOL,
        "Name the tools that change something which the task needs.",
        {
            "type": "object",
            "properties": {
                "tools": {
                    "type": "array",
                    "items": {"type": "string", "enum": [t.name for t in acting]},
                    "uniqueItems": True,
                }
            },
            "required": ["tools"],
            "additionalProperties": False,
        },
        lambda tools: tools,
    )
    messages = [
        *([Message("system", system_prompt)] if system_prompt else []),
        Message("user", f"Task: {task}\n\n{_QUESTION}\n\nTools that change something:\n{listed}"),
    ]
    return ModelRequest(messages, tools=[declare], tool_choice=SCOPE_TOOL)


def read_scope(response: ModelResponse, tools: Sequence[Tool]) -> tuple[frozenset[str], str | None]:
    """The tools the model named, and what was wrong with its reply (None if nothing).

    A reply that names no tool in the expected shape gives the empty scope: no
    tool with side effects may run, which is the safe reading of no answer.
    """
    acting = {t.name for t in tools if t.side_effects}
    for call in response.tool_calls:
        if call.name != SCOPE_TOOL:
            continue
        try:
            arguments: Any = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return frozenset(), f"the reply's arguments are not JSON ({exc.msg})"
        named = arguments.get("tools") if isinstance(arguments, dict) else None
        if not isinstance(named, list):
            return frozenset(), 'the reply has no list "tools"'
        chosen = frozenset(n for n in named if isinstance(n, str) and n in acting)
        ignored = sorted({str(n) for n in named} - chosen)
        problem = f"named no tool with side effects: {', '.join(ignored)}" if ignored else None
        return chosen, problem
    return frozenset(), f"the reply did not call {SCOPE_TOOL}"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
