"""The grammars a local model decodes under, written as llguidance Lark text.

Three shapes cover every request the runtime makes:

- `calls_grammar`: one or more tool calls from a toolbox, or (when the model
  may choose) a plain answer, as one grammar, so the model itself decides
  whether to call; the call syntax is `CALL_OPEN` + JSON + `CALL_CLOSE`;
- `call_grammar`: exactly one call to one named tool (a forced tool choice);
  everything but the arguments is forced, so only the arguments are sampled;
- `code_grammar`: the code convention's reply, prose and at most one
  well-formed fenced Python block, or a plain answer.

The grammars are pure text built from normalized schemas; equal inputs give
equal text, which is what the compile cache keys on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._normalize import NormalizedSchema, normalize_schema

__all__ = [
    "CALL_CLOSE",
    "CALL_OPEN",
    "Grammar",
    "GrammarShape",
    "GrammarTool",
    "call_grammar",
    "calls_grammar",
    "code_grammar",
]

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
#: Compact JSON: no whitespace between tokens, so the model spends no tokens
#: on layout and cannot wander off into indentation.
_COMPACT = {"whitespace_flexible": False}
#: A plain answer: anything that does not open a call.
_ANSWER = r"ANSWER: /[^<\s](?s:.*)/"


@dataclass(frozen=True, slots=True)
class GrammarTool:
    """A tool as a grammar needs it: its name and its parameters' schema."""

    name: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Grammar:
    """Lark grammar text and the notes on what it cannot enforce.

    `shape` says what the grammar means, so that `to_gbnf` can write the same
    language in llama.cpp's GBNF for where llguidance cannot be used.
    """

    lark: str
    unenforced: tuple[str, ...] = ()
    shape: GrammarShape | None = None


@dataclass(frozen=True, slots=True)
class GrammarShape:
    """What a grammar says, independent of the grammar language."""

    kind: Literal["calls", "code"]
    body_schema: str = ""
    allow_answer: bool = True
    parallel: bool = True


def calls_grammar(
    tools: Sequence[GrammarTool],
    *,
    allow_answer: bool = True,
    parallel: bool = True,
    max_string_length: int | None = 256,
) -> Grammar:
    """Tool calls from `tools` (one per line when `parallel`), or a plain answer."""
    if not tools:
        raise ValueError("calls_grammar needs at least one tool")
    schema, notes = _calls_schema(tools, max_string_length)
    call = f'call: "{CALL_OPEN}" body "{CALL_CLOSE}"'
    calls = 'calls: call ("\\n" call)*' if parallel else "calls: call"
    start = "start: calls | ANSWER" if allow_answer else "start: calls"
    lines = [start, calls, call, f"body: %json {schema}"]
    if allow_answer:
        lines.append(_ANSWER)
    shape = GrammarShape("calls", schema, allow_answer, parallel)
    return Grammar("\n".join(lines) + "\n", notes, shape)


def call_grammar(tool: GrammarTool, *, max_string_length: int | None = 256) -> Grammar:
    """Exactly one call to `tool`; only its arguments are left to the model."""
    return calls_grammar(
        [tool], allow_answer=False, parallel=False, max_string_length=max_string_length
    )


def code_grammar() -> Grammar:
    """Prose, then at most one fenced Python block; or a plain answer.

    Prose and answers may hold single backticks (inline code) but not a fence;
    the block must be closed, and nothing may follow it.
    """
    # The lexer is greedy, so an answer's inline backticks are lexemes of
    # their own (a longer answer terminal would swallow the fence's first
    # backtick), and the code is a lazy rule: the shortest text that ends
    # with the closing fence.
    lines = [
        'start: answer | PROSE? "```python\\n" code',
        'answer: "`"? PROSE ("`" PROSE)* "`"?',
        r"PROSE: /[^`]+/",
        r"code[lazy]: /(.|\n)*\n```/",
    ]
    return Grammar("\n".join(lines) + "\n", shape=GrammarShape("code"))


def _calls_schema(
    tools: Sequence[GrammarTool], max_string_length: int | None
) -> tuple[str, tuple[str, ...]]:
    branches: list[dict[str, Any]] = []
    notes: list[str] = []
    for tool in tools:
        args: NormalizedSchema = normalize_schema(
            tool.parameters, max_string_length=max_string_length
        )
        notes.extend(f"{tool.name}: {note}" for note in args.unenforced)
        branches.append(
            {
                "type": "object",
                "properties": {"name": {"const": tool.name}, "arguments": args.schema},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    schema: dict[str, Any] = branches[0] if len(branches) == 1 else {"anyOf": branches}
    schema = {"x-guidance": _COMPACT, **schema}
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False), tuple(notes)
