"""The oracle: a model that answers every task with its ground truth.

In the JSON convention it sends the truth as native tool calls, one assistant
message per step (independent calls together, dependent ones in turn); in the
text convention it sends the same steps written as BFCL's Python call lists,
``[get_stock(sku='A1'), get_stock(sku='B2')]``; in the code convention it
sends one canonical script per turn, written against the stub module's names;
in the plan convention, one plan per turn (the task's own, with placeholders,
or its steps as literal calls).
A harness whose scorers are right gives it 100%, and its token counts are the
harness's own costs with no model noise in them.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..conventions._text import call_name
from ..models import ScriptedModel
from ..tools import StubSignature, Toolbox
from ..tools._tool import python_identifier
from ._task import Call, OracleTurn, Setup, Task

__all__ = [
    "OracleModel",
    "call_expression",
    "literal_plan",
    "oracle_for",
    "python_calls",
    "python_literal",
    "signatures",
    "statements_script",
    "tool_calls_reply",
]

MODULE = "tools"


class OracleModel(ScriptedModel):
    """Replies with prepared ground-truth answers, turn after turn."""

    def __init__(self, turns: Sequence[OracleTurn], convention: str) -> None:
        super().__init__(_replies(turns, convention), name="oracle")
        self.convention = convention


def oracle_for(task: Task, convention: str, setup: Setup | None = None) -> OracleModel:
    """The oracle for one run of `task` (pass the run's `setup` if it exists already)."""
    return OracleModel(task.oracle(setup or task.setup(), convention), convention)


def _replies(turns: Sequence[OracleTurn], convention: str) -> list[Mapping[str, Any] | str]:
    replies: list[Mapping[str, Any] | str] = []
    for t, turn in enumerate(turns):
        if convention == "code":
            if turn.script is not None:
                replies.append({"content": f"```python\n{turn.script}```"})
        elif convention == "plan":
            plan = turn.plan if turn.plan is not None else literal_plan(turn.steps)
            if plan is not None:
                replies.append({"content": f"```plan\n{plan}```"})
        elif convention == "text":
            replies.extend({"content": python_calls(step)} for step in turn.steps)
        else:
            replies.extend(
                tool_calls_reply(step, f"oracle_{t}_{s}") for s, step in enumerate(turn.steps)
            )
        replies.append({"content": turn.answer})
    return replies


def tool_calls_reply(calls: Sequence[Call], ids: str) -> dict[str, Any]:
    """A scripted reply making `calls` in the JSON convention, their ids ``IDS_0``, ``IDS_1``…"""
    return {
        "tool_calls": [
            {
                "id": f"{ids}_{i}",
                "type": "function",
                "function": {
                    "name": call.tool,
                    "arguments": json.dumps(call.arguments, ensure_ascii=False),
                },
            }
            for i, call in enumerate(calls)
        ]
    }


def literal_plan(steps: Sequence[Sequence[Call]]) -> str | None:
    """The steps as a plan of literal calls, ``s1 = get_stock(sku='A1')``; None if none.

    The plan's result is the last call's value, or the list of every call's.
    """
    calls = [call for step in steps for call in step]
    if not calls:
        return None
    lines = [f"s{i} = {python_calls([call])[1:-1]}" for i, call in enumerate(calls, 1)]
    if len(calls) > 1:
        lines.append(f"result = [{', '.join(f's{i}' for i in range(1, len(calls) + 1))}]")
    return "\n".join(lines) + "\n"


def python_calls(calls: Sequence[Call]) -> str:
    """``[get_stock(sku='A1'), math.factorial(number=5)]``: calls as the text convention reads them.

    Tools and parameters are written under the names the text convention
    shows the model (dotted names kept, others made identifiers), always as
    keywords, so `parse_python_calls` reads back the same calls.
    """
    written = []
    for call in calls:
        arguments = ", ".join(
            f"{python_identifier(k)}={python_literal(v)}" for k, v in call.arguments.items()
        )
        written.append(f"{call_name(call.tool)}({arguments})")
    return f"[{', '.join(written)}]"


# --- canonical scripts ------------------------------------------------------------


def signatures(tools: Toolbox) -> dict[str, StubSignature]:
    """Each tool's stub signature by tool name."""
    return {s.tool: s for s in tools.stub_signatures()}


def python_literal(value: Any) -> str:
    """Python source for a JSON value (``true`` → ``True``, ``null`` → ``None``)."""
    return repr(value)


def _python_names(call: Call, signature: StubSignature) -> list[tuple[str, Any]]:
    names = {schema: python for python, schema in signature.params}
    return [(names.get(key, key), value) for key, value in call.arguments.items()]


def call_expression(call: Call, signature: StubSignature) -> str:
    """``tools.fn(a=1, b='x')`` for one call."""
    arguments = ", ".join(f"{k}={python_literal(v)}" for k, v in _python_names(call, signature))
    return f"{MODULE}.{signature.function}({arguments})"


def _kwargs_literal(call: Call, signature: StubSignature) -> str:
    pairs = ", ".join(f"{k!r}: {python_literal(v)}" for k, v in _python_names(call, signature))
    return "{" + pairs + "}"


def statements_script(
    calls: Sequence[Call], tools: Toolbox, *, group_parallel: bool = False
) -> str:
    """A script making `calls` in order and printing each result.

    With `group_parallel`, a run of consecutive calls to one tool becomes one
    ``tools.parallel`` over their arguments, as for independent calls.
    """
    by_name = signatures(tools)
    lines = [f"import {MODULE}", ""]
    groups = (
        [list(g) for _, g in itertools.groupby(calls, key=lambda c: c.tool)]
        if group_parallel
        else [[c] for c in calls]
    )
    for group in groups:
        signature = by_name[group[0].tool]
        if len(group) == 1:
            lines.append(f"print({call_expression(group[0], signature)})")
            continue
        items = ",\n".join(f"    {_kwargs_literal(c, signature)}" for c in group)
        lines.append(f"for result in {MODULE}.parallel({MODULE}.{signature.function}, [")
        lines.append(items)
        lines.append("]):")
        lines.append("    print(result)")
    return "\n".join(lines) + "\n"
