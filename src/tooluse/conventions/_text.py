"""The text convention: tools described in the prompt, calls written as text.

For models without native function calling. Two formats:

``python`` (BFCL's)
    The reply holds a Python list of calls, ``[get_weather(city="Paris"), f(x=1)]``,
    on a line of its own (prose around it is allowed; a lone call without the
    brackets is read too when it names a tool, up to case and accents, or is
    the whole reply with a keyword argument). Values are Python literals.
    ``[]`` names no call: a reply holding only that is read as an answer,
    verbatim, the way BFCL reads it. A call of a tool that does not exist
    (``échō``) is passed on, for the dispatcher to refuse with the names it
    may have meant.

``react``
    ``Thought:`` / ``Action:`` / ``Final Answer:`` lines. An action is
    ``tool[{"json": "object"}]``, ``tool(a=1)``, or ``tool`` followed by an
    ``Action Input: {...}`` line; several actions in one reply are run
    together. Anything from an ``Observation:`` line on is ignored: results
    come from the tools.

Calls get ids generated here. The model sees each result as a user message
(``Output of tool:``): the assistant message carries no native calls for the
tool messages to answer, and the backends render such tool messages as text.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .._exceptions import UsageError
from .._messages import ToolCall
from .._syntax import CallSyntaxError, SourceText, Span, parse_python_calls, parse_span
from ..decoding import is_call_name
from ..models import ModelResponse
from ..tools import Tool, Toolbox, lean_schema
from ..tools._output import output_of
from ..tools._render import (
    example_call,
    inline_annotation,
    parameter_doc,
    parameter_list,
    write_parameters,
)
from ..tools._tool import python_identifier
from ._base import Answer, Calls, Convention, Interpretation, Prepared, Retry, system_text
from ._call_spans import call_spans
from ._per_run import PerRun
from ._react import read_react

__all__ = ["CallSyntaxError", "TextConvention", "call_name", "describe_tools", "parse_python_calls"]

TextFormat = Literal["python", "react"]

PYTHON_SYNTAX = (
    "[tool_name(param=value, ...), other_tool(param=value)] with Python literal values "
    '("text", 42, 3.5, True, None, [lists], {"key": dicts})'
)
REACT_SYNTAX = 'Action: tool_name[{"param": value}] (one JSON object of arguments)'

PYTHON_PROMPT = """\
You can call the tools below. To call, reply with a Python list of calls on a line of \
its own: [tool_name(param=value, ...)]. Values are Python literals: "text", 42, 3.5, \
True, None, lists, dicts. Put independent calls in one list. Each result comes back in \
the next message. {finish}

Tools:
{tools}"""

REACT_PROMPT = """\
You can use the tools below. Reply in this format:
Thought: what to do next
Action: tool_name[{{"param": value}}]
then stop; the result comes back in the next message. Several Action lines run together. \
{finish}

Tools:
{tools}"""

PYTHON_FINISH = "When you know the answer, reply in plain text, without calls."
REACT_FINISH = "When you know the answer, reply:\nFinal Answer: the answer"
#: With an output type: how the run ends, and the note for a reply in text.
OUTPUT_FINISH = (
    "When you know the answer, call {name} with it: a reply in plain text does not end the task."
)
REACT_OUTPUT_FINISH = (
    "When you know the answer, call {name} with it (Action: {name}[{{...}}]): a Final "
    "Answer line does not end the task."
)
OUTPUT_NOTE = (
    "Your reply gave no call, but this task ends only with a call to {name}: call it with "
    "your answer."
)

EMPTY_REPLY = "Your last reply was empty. Call a tool, or give your final answer as text."


# --- describing the tools -------------------------------------------------------------


def call_name(name: str) -> str:
    """How a tool is written in a call: its own name when Python can read it.

    Dotted names (BFCL's ``math.factorial``) read as attribute chains; other
    names get the stub module's identifier.
    """
    return name if is_call_name(name) else python_identifier(name)


@dataclass(frozen=True, slots=True)
class _Signature:
    """A tool as the model writes it: call name, parameters (Python name → schema key)."""

    tool: str
    call_name: str
    params: tuple[tuple[str, str], ...]
    #: Python names that may be given positionally, in order.
    positional: tuple[str, ...]
    text: str


def _signature(t: Tool) -> _Signature:
    schema = lean_schema(t.parameters)
    props: Mapping[str, Any] = schema.get("properties", {})
    # Compact for a prompt: objects in place, and no "| None" on optional parameters.
    params = write_parameters(t, schema, inline_annotation, none_in_type=False)
    name = call_name(t.name)
    lines = [f"{name}({parameter_list(params)})"]
    if t.description:
        lines.extend(f"    {line}" for line in t.description.strip().splitlines() if line.strip())
    for param in params:
        if param.doc:
            lines.append(f"    {param.name}: {param.doc}")
        prop = props[param.key]
        nested = prop.get("properties") if isinstance(prop, Mapping) else None
        if isinstance(nested, Mapping):
            lines.extend(
                f"      {k!r}: {parameter_doc(v)}" for k, v in nested.items() if parameter_doc(v)
            )
    return _Signature(
        t.name,
        name,
        tuple((p.name, p.key) for p in params),
        tuple(p.name for p in params if not p.keyword_only),
        "\n".join(lines),
    )


def _examples(t: Tool, format: TextFormat) -> list[str]:
    """The tool's examples written as the model writes calls, each with its result."""
    lines = []
    for example in t.examples:
        if format == "python":
            call = f"[{example_call(t, example, call_name(t.name))}]"
        else:
            arguments = json.dumps(dict(example.arguments), ensure_ascii=False, default=str)
            call = f"Action: {call_name(t.name)}[{arguments}]"
        if example.has_result:
            call += f" -> {json.dumps(example.result, ensure_ascii=False, default=str)}"
        lines.append(f"    Example: {call}")
    return lines


def describe_tools(tools: Toolbox | Sequence[Tool], format: TextFormat = "python") -> str:
    """One Python-like signature per tool, with its description and parameter docs.

    Each signature's parameter list is valid Python (``def f(<params>): ...``
    parses); the listing as a whole is prose for the model, not a module. A
    tool's examples follow it, written as calls of `format` with their results.
    """
    return "\n".join("\n".join([_signature(t).text, *_examples(t, format)]) for t in tools) + "\n"


# --- the convention -------------------------------------------------------------------


class TextConvention(Convention):
    """Tools listed in the system prompt; calls read from the reply's text.

    `format` is ``python`` (BFCL's ``[f(a=1)]``) or ``react`` (Thought /
    Action / Final Answer lines). A reply that does not parse is sent back
    with the line and column of the problem and the expected syntax. Native
    tool calls, if a server sends them anyway, are used as they are.
    """

    name = "text"

    def __init__(self, format: TextFormat = "python") -> None:
        if format not in ("python", "react"):
            raise UsageError(f"format must be 'python' or 'react', not {format!r}")
        self.format: TextFormat = format
        # The run's tools by the name calls use; runs may share this convention.
        self._signatures: PerRun[dict[str, _Signature]] = PerRun("the text convention")
        self._ids = itertools.count(1)

    def prompt(self, tools: Toolbox) -> str:
        output = output_of(tools)
        if self.format == "python":
            template = PYTHON_PROMPT
            finish = PYTHON_FINISH if output is None else OUTPUT_FINISH
        else:
            template = REACT_PROMPT
            finish = REACT_FINISH if output is None else REACT_OUTPUT_FINISH
        name = call_name(output.name) if output is not None else ""
        listing = describe_tools(tools, self.format)
        return template.format(tools=listing, finish=finish.format(name=name))

    def prepare(self, tools: Toolbox, system_prompt: str | None) -> Prepared:
        self._signatures.set({s.call_name: s for s in (_signature(t) for t in tools)})
        text = system_text(system_prompt, self.prompt(tools))
        output = output_of(tools)
        note = OUTPUT_NOTE.format(name=output.name) if output is not None else None
        if self.format == "react":
            return Prepared(system_prompt=text, tools=(), tool_choice="none", output_note=note)
        return Prepared(
            system_prompt=text,
            tools=(),
            tool_choice="none",
            reply_format="python_calls",
            described_tools=tuple(tools),
            output_note=note,
        )

    def interpret(self, response: ModelResponse) -> Interpretation:
        if response.tool_calls:
            notes = [f"Part of your last reply was unusable: {p}." for p in response.problems]
            return Calls(response.tool_calls, notes=notes)
        text = response.content or ""
        if not text.strip():
            return Retry(EMPTY_REPLY)
        signatures = self._signatures.get()
        parameters = {name: s.positional for name, s in signatures.items()}
        try:
            if self.format == "react":
                reading = read_react(text, parameters)
                if reading is None:
                    return Answer(text.strip())
                if reading.answer is not None:
                    return Answer(reading.answer)
                if not reading.calls:
                    return Retry(
                        "Your reply has no Action and no Final Answer. Continue with "
                        f'{REACT_SYNTAX}, or finish with "Final Answer: ...".'
                    )
                return Calls(self._tool_calls(reading.calls, signatures), notes=reading.notes)
            whole = SourceText(text)
            parsed: list[tuple[str, dict[str, Any]]] = []
            for start, end in call_spans(text, set(signatures)):
                parsed.extend(parse_span(Span(whole, start, end), parameters))
        except CallSyntaxError as exc:
            syntax = PYTHON_SYNTAX if self.format == "python" else REACT_SYNTAX
            return Retry(
                f"I could not read your tool call at {exc}.\n{exc.pointer()}\n"
                f"Nothing was run. Write calls as {syntax}."
            )
        if not parsed:
            return Answer(text.strip())
        return Calls(self._tool_calls(parsed, signatures))

    def _tool_calls(
        self,
        parsed: Sequence[tuple[str, dict[str, Any]]],
        signatures: Mapping[str, _Signature],
    ) -> list[ToolCall]:
        calls = []
        for name, written in parsed:
            signature = signatures.get(name)
            tool_name, arguments = name, written
            if signature is not None:
                # Back from what Python can write (`from_`) to the schema's keys.
                keys = dict(signature.params)
                tool_name = signature.tool
                arguments = {keys.get(k, k): v for k, v in written.items()}
            calls.append(
                ToolCall(
                    id=f"text_{next(self._ids)}",
                    name=tool_name,
                    arguments=json.dumps(arguments, ensure_ascii=False),
                )
            )
        return calls
