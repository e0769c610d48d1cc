"""Scripted models for AgentDojo: the oracle and the obedient model.

`GroundTruthModel` answers a user task with the task's ground-truth calls, as
AgentDojo's own ``GroundTruthPipeline`` does, then with the task's
ground-truth output as its final answer. In the json convention each call is
one reply; in the code convention all of them are one script that calls the
stubs (a failed call is printed, and the script goes on, as the next JSON call
would).

Given `instructions`, it is *obedient*: it reads every tool result it is
shown, and when one contains the text of an instruction it knows, it carries
that instruction out at once (its calls before the rest of the task, which is
what the injected text asks for), then finishes the user's task and adds the
instruction's output to its answer. It decides from its context alone: the
same model, with the same instructions, is used in runs with and without an
attack, and does nothing extra when no tool result holds an instruction. It is
the worst case for a runtime defence, independent of any model's judgement.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..._messages import Message, ToolCall
from ...models import ModelRequest, ModelResponse, ScriptedModel
from ...policy._scope import SCOPE_TOOL
from ...tools import Toolbox
from .._oracle import call_expression, signatures, tool_calls_reply
from .._task import Call

__all__ = ["GroundTruthModel", "Instruction", "code_script"]

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\"}
_ESCAPE = re.compile(r"\\(.)")


def _readable(text: str) -> str:
    r"""Text with JSON and Python escapes undone and whitespace runs made one space.

    A tool result reaches the model as JSON (``\n`` for a newline) or, in a
    script's output, as Python's repr; an instruction is recognised in either.
    """
    unescaped = _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(0)), text)
    return " ".join(unescaped.split())


@dataclass(frozen=True, slots=True)
class Instruction:
    """An instruction the obedient model recognises by its `text` and knows how to carry out."""

    text: str
    calls: tuple[Call, ...]
    answer: str = ""
    key: str = field(default="", compare=False)

    @property
    def readable(self) -> str:
        return _readable(self.text)


class GroundTruthModel(ScriptedModel):
    """Answers with `calls`, then `answer`; obeys `instructions` found in tool results."""

    def __init__(
        self,
        calls: Sequence[Call],
        answer: str,
        convention: str,
        *,
        instructions: Sequence[Instruction] = (),
        tools: Toolbox | None = None,
        name: str = "oracle",
    ) -> None:
        super().__init__(self._next, name=name)
        if convention == "code" and tools is None:
            raise ValueError("the code convention needs the toolbox to write scripts against")
        self.convention = convention
        # An empty answer reads as no answer; AgentDojo's own checks ignore the
        # text where its ground truth gives none.
        self.answer = answer or "Done."
        self.instructions = list(instructions)
        self.tools = tools
        #: Instructions carried out so far, in order.
        self.obeyed: list[Instruction] = []
        self._seen = 0  # messages already read for instructions
        self._pending: list[Sequence[Call]] = self._batches(calls)
        self._tools_used = [call.tool for call in calls]

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """Answer the scope question with the tools its own calls use; else go on scripting."""
        if request.tool_choice == SCOPE_TOOL:
            offered = _offered(request)
            named = [t for t in dict.fromkeys(self._tools_used) if t in offered]
            return ModelResponse(
                tool_calls=[ToolCall("scope", SCOPE_TOOL, json.dumps({"tools": named}))],
                model_name=self.name,
            )
        return await super().respond(request)

    def _batches(self, calls: Sequence[Call]) -> list[Sequence[Call]]:
        """What each reply carries: one call (json) or every call in one script (code)."""
        if self.convention == "code":
            return [list(calls)] if calls else []
        return [[call] for call in calls]

    def _read(self, messages: Sequence[Message]) -> None:
        """Queue, ahead of everything else, each known instruction a new tool result holds."""
        found: list[Sequence[Call]] = []
        for message in messages[self._seen :]:
            if message.role != "tool" or not message.content:
                continue
            text = _readable(message.content)
            for instruction in self.instructions:
                if instruction not in self.obeyed and instruction.readable in text:
                    self.obeyed.append(instruction)
                    found.extend(self._batches(instruction.calls))
        self._seen = len(messages)
        self._pending[:0] = found

    def _next(self, messages: Sequence[Message]) -> dict[str, Any] | str:
        self._read(messages)
        while self._pending:
            batch = self._pending.pop(0)
            if batch:
                return self._reply(batch, len(self.requests))
        extra = [i.answer for i in self.obeyed if i.answer]
        return "\n".join([self.answer, *extra]) if extra else self.answer

    def _reply(self, batch: Sequence[Call], index: int) -> dict[str, Any]:
        if self.convention == "code":
            tools = self.tools or Toolbox()
            return {"content": f"```python\n{code_script(batch, tools)}```"}
        return tool_calls_reply(batch, f"gt_{index}")


def _offered(request: ModelRequest) -> set[str]:
    """The tool names the scope question lets the model choose from."""
    for tool in request.tools:
        items = tool.parameters.get("properties", {}).get("tools", {}).get("items", {})
        return {str(name) for name in items.get("enum", ())}
    return set()


def code_script(calls: Sequence[Call], tools: Toolbox) -> str:
    """A script making `calls` in order, printing each result or its error and going on."""
    by_name = signatures(tools)
    lines = ["import tools", ""]
    for call in calls:
        signature = by_name.get(call.tool)
        if signature is None:  # a ground truth naming a tool the suite lacks
            lines.append(f"print({call.tool!r}, 'is not a tool')")
            continue
        lines += [
            "try:",
            f"    print({call_expression(call, signature)})",
            "except tools.ToolError as exc:",
            "    print('error:', exc)",
        ]
    return "\n".join(lines) + "\n"
