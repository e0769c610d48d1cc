"""The grammars a local model decodes under, written as llguidance Lark text.

Three shapes cover every request the runtime makes:

- `calls_grammar`: one or more tool calls from a toolbox, or (when the model
  may choose) a plain answer, as one grammar, so the model itself decides
  whether to call. A call is a JSON object ``{"name": …, "arguments": …}``
  in whichever frame the model is used to: between `CALL_OPEN` and
  `CALL_CLOSE` (Hermes), in a fenced ``json`` block, or bare; or a Python
  list of calls, ``[get_weather(city="Paris")]``. The model's first tokens
  pick the frame, and the grammar constrains what is inside it;
- `call_grammar`: exactly one call to one named tool (a forced tool choice);
  everything but the arguments is forced, so only the arguments are sampled;
- `code_grammar`: the code convention's reply, prose and at most one
  well-formed fenced Python block, or a plain answer;
- `python_calls_grammar`: the text convention's reply, a Python list of
  calls to the tools its prompt describes, or a plain answer.

The grammars are pure text built from normalized schemas; equal inputs give
equal text, which is what the compile cache keys on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._normalize import NormalizedSchema, normalize_schema
from ._python_grammar import PythonRules, python_calls

__all__ = [
    "CALL_CLOSE",
    "CALL_OPEN",
    "Grammar",
    "GrammarShape",
    "GrammarTool",
    "answer_grammar",
    "call_grammar",
    "calls_grammar",
    "code_grammar",
    "python_calls_grammar",
]

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
#: JSON on one line, compact or spaced as the model likes. Not indented: a
#: small model that starts indenting spends its token budget on blanks, and
#: the call is cut off before it closes.
_LAYOUT = {"whitespace_flexible": True, "whitespace_pattern": " ?"}
#: One fixed layout where the frame is forced: then every token but the
#: arguments' own is forced too.
_FIXED = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
#: Between the calls of one frame, and around a call within its tags.
_NEXT_LINE = '","? "\\n"'
_BLANK_LINE = '"\\n"?'
_NEXT_ARG = '"," " "?'
#: A plain answer: anything that does not open a call in one of the frames.
_ANSWER = r"ANSWER: /[^<{`\[\s](?s:.*)/"


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
    tag_tokens: tuple[int, int] | None = None,
) -> Grammar:
    """Tool calls from `tools` in any of the frames (several when `parallel`), or an answer.

    `tag_tokens` are the ids of `CALL_OPEN` and `CALL_CLOSE` where the
    vocabulary holds each as one special token (Qwen's 151657 and 151658): a
    model emits that token, never the tag's letters, so the grammar must
    name the token rather than spell the text.
    """
    if not tools:
        raise ValueError("calls_grammar needs at least one tool")
    schema, notes = _calls_schema(tools, max_string_length)
    open_, close = _tags(tag_tokens)

    def some(item: str, sep: str) -> str:
        return f"{item} ({sep} {item})*" if parallel else item

    python = PythonRules()
    pycalls = _python_calls(python, tools, max_string_length)
    lines = [
        "start: calls | ANSWER" if allow_answer else "start: calls",
        "calls: tagged | fenced | bare" + (" | python" if pycalls else ""),
        f"tagged: {some('tagged_call', _BLANK_LINE)}",
        f"tagged_call: {open_} {_BLANK_LINE} body {_BLANK_LINE} {close}",
        f'fenced: "```json\\n" {some("body", _NEXT_LINE)} "\\n```"',
        f"bare: {some('body', _NEXT_LINE)}",
        f"body: %json {schema}",
    ]
    if pycalls:
        lines += [f'python: "[" {some("pycall", _NEXT_ARG)} "]"', f"pycall: {pycalls}"]
        lines += python.rules
    if allow_answer:
        lines.append(_ANSWER)
    shape = GrammarShape("calls", schema, allow_answer, parallel)
    return Grammar("\n".join(lines) + "\n", notes, shape)


def call_grammar(
    tool: GrammarTool,
    *,
    max_string_length: int | None = 256,
    tag_tokens: tuple[int, int] | None = None,
) -> Grammar:
    """Exactly one call to `tool`, between the tags; only its arguments are left to the model."""
    schema, notes = _calls_schema([tool], max_string_length, layout=_FIXED)
    open_, close = _tags(tag_tokens)
    lines = ["start: call", f"call: {open_} body {close}", f"body: %json {schema}"]
    shape = GrammarShape("calls", schema, allow_answer=False, parallel=False)
    return Grammar("\n".join(lines) + "\n", notes, shape)


def _tags(tag_tokens: tuple[int, int] | None) -> tuple[str, str]:
    if tag_tokens is None:
        return json.dumps(CALL_OPEN), json.dumps(CALL_CLOSE)
    return f"<[{tag_tokens[0]}]>", f"<[{tag_tokens[1]}]>"


def answer_grammar() -> Grammar:
    """A plain answer: text that does not open a call in any frame `calls_grammar` allows."""
    return Grammar(f"start: ANSWER\n{_ANSWER}\n")


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


def python_calls_grammar(
    tools: Sequence[GrammarTool],
    *,
    parallel: bool = True,
    max_string_length: int | None = 256,
) -> Grammar | None:
    """A Python list of calls, ``[get_weather(city="Paris")]``, or a plain answer.

    None when some tool cannot be written as a Python call under its own name
    and parameter names (the text convention then calls it by another name,
    which this grammar would forbid): such a request decodes unconstrained.
    """
    python = PythonRules()
    if not tools or not all(python.can_call(t.name, t.parameters) for t in tools):
        return None
    pycalls = _python_calls(python, tools, max_string_length)
    some = f"pycall ({_NEXT_ARG} pycall)*" if parallel else "pycall"
    lines = ["start: python | ANSWER", f'python: "[" {some} "]"', f"pycall: {pycalls}"]
    lines += python.rules
    lines.append(_ANSWER)
    return Grammar("\n".join(lines) + "\n")


def _python_calls(
    python: PythonRules, tools: Sequence[GrammarTool], max_string_length: int | None
) -> str | None:
    """The alternative over every tool of `tools` callable in Python syntax, its arguments
    as its normalized schema says; None if none is."""
    return python_calls(
        python,
        [
            (t.name, normalize_schema(t.parameters, max_string_length=max_string_length).schema)
            for t in tools
        ],
    )


def _calls_schema(
    tools: Sequence[GrammarTool],
    max_string_length: int | None,
    layout: Mapping[str, Any] = _LAYOUT,
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
    schema = {"x-guidance": layout, **schema}
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False), tuple(notes)
