"""The text convention: tools described in the prompt, calls written as text.

For models without native function calling. Two formats:

``python`` (BFCL's)
    The reply holds a Python list of calls, ``[get_weather(city="Paris"), f(x=1)]``,
    on a line of its own (prose around it is allowed; a lone call without the
    brackets is read too when it names a tool). Values are Python literals.
    ``[]`` names no call: a reply holding only that is read as an answer,
    verbatim, the way BFCL reads it.

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

import ast
import bisect
import itertools
import json
import keyword
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._exceptions import UsageError
from .._messages import ToolCall
from ..models import ModelResponse
from ..tools import Tool, Toolbox, lean_schema
from ..tools._render import _constraints
from ..tools._tool import python_identifier
from ._base import Answer, Calls, Convention, Interpretation, Prepared, Retry
from ._scan import PYTHON, closing_bracket

__all__ = ["CallSyntaxError", "TextConvention", "describe_tools", "parse_python_calls"]

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
the next message. When you know the answer, reply in plain text, without calls.

Tools:
{tools}"""

REACT_PROMPT = """\
You can use the tools below. Reply in this format:
Thought: what to do next
Action: tool_name[{{"param": value}}]
then stop; the result comes back in the next message. Several Action lines run together. \
When you know the answer, reply:
Final Answer: the answer

Tools:
{tools}"""

EMPTY_REPLY = "Your last reply was empty. Call a tool, or give your final answer as text."


# --- describing the tools -------------------------------------------------------------


def _call_name(name: str) -> str:
    """How a tool is written in a call: its own name when Python can read it.

    Dotted names (BFCL's ``math.factorial``) read as attribute chains; other
    names get the stub module's identifier.
    """
    parts = name.split(".")
    if all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        return name
    return python_identifier(name)


_SIMPLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def _annotation(schema: Any, depth: int = 0) -> str:
    """A Python annotation for a JSON Schema, compact enough for a prompt."""
    if not isinstance(schema, Mapping) or not schema or depth > 8:
        return "Any"
    if "enum" in schema:
        return f"Literal[{', '.join(repr(v) for v in schema['enum'])}]"
    if "const" in schema:
        return f"Literal[{schema['const']!r}]"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(dict.fromkeys(_annotation(v, depth + 1) for v in schema[key]))
    kind = schema.get("type")
    if isinstance(kind, list):
        variants = (_annotation({**schema, "type": k}, depth + 1) for k in kind)
        return " | ".join(dict.fromkeys(variants))
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "array":
        if isinstance(schema.get("prefixItems"), list):
            items = ", ".join(_annotation(v, depth + 1) for v in schema["prefixItems"])
            return f"tuple[{items}]"
        if "items" in schema:
            return f"list[{_annotation(schema['items'], depth + 1)}]"
        return "list"
    if kind == "object" or "properties" in schema:
        props = schema.get("properties")
        if isinstance(props, Mapping) and props:
            required = set(schema.get("required", ()))
            fields = []
            for key, prop in props.items():
                annotation = _annotation(prop, depth + 1)
                if key not in required:
                    annotation = f"NotRequired[{annotation}]"
                fields.append(f"{key!r}: {annotation}")
            return "{" + ", ".join(fields) + "}"
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            return f"dict[str, {_annotation(extra, depth + 1)}]"
        return "dict"
    return "Any"


def _doc(schema: Any) -> str:
    if not isinstance(schema, Mapping):
        return ""
    text = " ".join(str(schema.get("description", "")).split())
    hints = _constraints(schema)
    return f"{text} ({hints})" if text and hints else text or hints


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
    required = set(schema.get("required", ()))
    order = [p for p in t.positional if p in props]
    order += [p for p in props if p not in order]
    params: list[tuple[str, str]] = []
    parts: list[str] = []
    docs: list[str] = []
    positional: list[str] = []
    seen_optional = keyword_only = False
    for key in order:
        py_name = python_identifier(key)
        params.append((py_name, key))
        prop = props[key]
        annotation = _annotation(prop)
        if key in required:
            # Python allows no required parameter after an optional one unless
            # it is keyword-only; the listing stays valid Python.
            if seen_optional and not keyword_only:
                parts.append("*")
                keyword_only = True
            parts.append(f"{py_name}: {annotation}")
        else:
            seen_optional = True
            default = prop.get("default") if isinstance(prop, Mapping) else None
            parts.append(f"{py_name}: {annotation} = {default!r}")
        if not keyword_only:
            positional.append(py_name)
        doc = _doc(prop)
        if doc:
            docs.append(f"    {py_name}: {doc}")
        nested = prop.get("properties") if isinstance(prop, Mapping) else None
        if isinstance(nested, Mapping):
            docs.extend(f"      {k!r}: {_doc(v)}" for k, v in nested.items() if _doc(v))
    name = _call_name(t.name)
    lines = [f"{name}({', '.join(parts)})"]
    if t.description:
        lines.extend(f"    {line}" for line in t.description.strip().splitlines() if line.strip())
    lines.extend(docs)
    return _Signature(t.name, name, tuple(params), tuple(positional), "\n".join(lines))


def describe_tools(tools: Toolbox | Sequence[Tool]) -> str:
    """One Python-like signature per tool, with its description and parameter docs.

    Each signature's parameter list is valid Python (``def f(<params>): ...``
    parses); the listing as a whole is prose for the model, not a module.
    """
    return "\n".join(_signature(t).text for t in tools) + "\n"


# --- positions and errors -------------------------------------------------------------


class CallSyntaxError(ValueError):
    """Text that should hold tool calls does not read as calls.

    `line` and `column` are 1-based, in characters, within the text given
    to the parser; `source_line` is that line, for pointing at the problem.
    """

    def __init__(self, message: str, line: int, column: int, source_line: str) -> None:
        super().__init__(message, line, column, source_line)
        self.message = message
        self.line = line
        self.column = column
        self.source_line = source_line

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}: {self.message}"

    def pointer(self) -> str:
        """The offending line with a caret under the column."""
        shown = self.source_line.rstrip("\n").expandtabs(1)
        return f"    {shown}\n    {' ' * max(self.column - 1, 0)}^"


@dataclass(frozen=True, slots=True)
class _Text:
    """The whole reply, for turning offsets into line and column."""

    text: str
    starts: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        object.__setattr__(self, "starts", tuple(starts))

    def position(self, index: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, index) - 1
        return line + 1, index - self.starts[line] + 1

    def line_text(self, line: int) -> str:
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        return self.text[start:end]

    def error(self, message: str, index: int) -> CallSyntaxError:
        line, column = self.position(index)
        return CallSyntaxError(message, line, column, self.line_text(line))


@dataclass(frozen=True, slots=True)
class _Segment:
    """A stretch ``text[start:end]`` parsed on its own; maps its positions back."""

    whole: _Text
    start: int
    end: int

    @property
    def source(self) -> str:
        return self.whole.text[self.start : self.end]

    def index(self, lineno: int, col: int, *, col_in_bytes: bool) -> int:
        """Index in the whole text of a (1-based line, 0-based column) in the segment."""
        lines = self.source.split("\n")
        lineno = min(max(lineno, 1), len(lines))
        line = lines[lineno - 1]
        if col_in_bytes:
            col = len(line.encode("utf-8")[:col].decode("utf-8", errors="ignore"))
        offset = sum(len(x) + 1 for x in lines[: lineno - 1]) + min(max(col, 0), len(line))
        return self.start + offset

    def node_error(self, message: str, node: ast.AST) -> CallSyntaxError:
        lineno = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        return self.whole.error(message, self.index(lineno, col, col_in_bytes=True))


# --- reading Python calls -------------------------------------------------------------


class _NotLiteral(Exception):
    def __init__(self, node: ast.AST, message: str) -> None:
        super().__init__(message)
        self.node = node
        self.message = message


_JSONISMS = {"true": "True", "false": "False", "null": "None"}


def _literal(node: ast.expr) -> Any:
    """The value of a literal: str, int, float, bool, None, list, tuple, dict."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str | int | float | bool) or node.value is None:
            return node.value
        raise _NotLiteral(node, f"`{ast.unparse(node)}` is not a JSON-compatible literal")
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub | ast.UAdd)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int | float)
        and not isinstance(node.operand.value, bool)
    ):
        number = node.operand.value
        return -number if isinstance(node.op, ast.USub) else number
    if isinstance(node, ast.List):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                raise _NotLiteral(value, "`**` unpacking is not a literal; write the keys out")
            k = _literal(key)
            if not isinstance(k, str | int | float | bool) and k is not None:
                raise _NotLiteral(key, "dict keys must be strings or numbers")
            out[k] = _literal(value)
        return out
    text = ast.unparse(node)
    if isinstance(node, ast.Name):
        if node.id in _JSONISMS:
            raise _NotLiteral(node, f"`{text}` is not Python: write {_JSONISMS[node.id]}")
        raise _NotLiteral(node, f'`{text}` is not a literal value: put text in quotes, "{text}"')
    if isinstance(node, ast.Call):
        raise _NotLiteral(
            node,
            f"`{text}` is a call, not a value: make that call first; "
            "its result comes back in the next message",
        )
    if isinstance(node, ast.BinOp | ast.UnaryOp | ast.BoolOp | ast.Compare):
        raise _NotLiteral(node, f"`{text}` is an expression: write its value")
    raise _NotLiteral(node, f"`{text}` is not a literal value")


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head is not None else None
    return None


def _read_call(
    node: ast.expr, segment: _Segment, parameters: Mapping[str, Sequence[str]] | None
) -> tuple[str, dict[str, Any]]:
    if not isinstance(node, ast.Call):
        raise segment.node_error(
            f"`{ast.unparse(node)}` is not a call: each item must be tool_name(param=value)",
            node,
        )
    name = _dotted(node.func)
    if name is None:
        raise segment.node_error(f"`{ast.unparse(node.func)}` is not a tool name", node.func)
    arguments: dict[str, Any] = {}
    try:
        if node.args:
            order = parameters.get(name) if parameters is not None else None
            if order is None:
                raise segment.node_error(
                    f"{name}: give arguments by name (param=value)", node.args[0]
                )
            for index, arg in enumerate(node.args):
                if isinstance(arg, ast.Starred):
                    raise segment.node_error("`*` unpacking is not allowed in a call", arg)
                if index >= len(order):
                    takes = f"at most {len(order)} ({', '.join(order)})" if order else "none"
                    raise segment.node_error(
                        f"{name} takes {takes} by position; write the rest as param=value",
                        arg,
                    )
                arguments[order[index]] = _literal(arg)
        for given in node.keywords:
            if given.arg is None:
                raise segment.node_error("`**` unpacking is not allowed in a call", given)
            if given.arg in arguments:
                raise segment.node_error(f"{name} got two values for {given.arg!r}", given)
            arguments[given.arg] = _literal(given.value)
    except _NotLiteral as exc:
        raise segment.node_error(exc.message, exc.node) from None
    return name, arguments


def _parse_segment(
    segment: _Segment, parameters: Mapping[str, Sequence[str]] | None
) -> list[tuple[str, dict[str, Any]]]:
    try:
        tree = ast.parse(segment.source, mode="eval")
    except SyntaxError as exc:
        index = segment.index(exc.lineno or 1, (exc.offset or 1) - 1, col_in_bytes=False)
        message = exc.msg.removesuffix(". Perhaps you forgot a comma?")
        if message != exc.msg:
            message += " (are the calls separated by commas?)"
        raise segment.whole.error(message, index) from None
    body = tree.body
    if isinstance(body, ast.List | ast.Tuple):
        return [_read_call(e, segment, parameters) for e in body.elts]
    if isinstance(body, ast.Call):
        return [_read_call(body, segment, parameters)]
    raise segment.node_error(
        f"expected a list of calls, found `{_shorten(ast.unparse(body))}`", body
    )


def _shorten(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_FENCED = re.compile(r"\A\s*```[\w+-]*[^\n]*\n(?P<body>.*?)\n?\s*```\s*\Z", re.DOTALL)


def parse_python_calls(
    text: str, *, parameters: Mapping[str, Sequence[str]] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """Read BFCL's call syntax: ``[func(a=1, b="x"), mod.other(c=[1, 2])]``.

    Returns ``(name, arguments)`` pairs in order; names are as written, dots
    included. Accepted as BFCL accepts them: surrounding whitespace, a code
    fence or backticks around the list, a single call without brackets, and
    ``[]`` or empty text for "no call". Values must be literals (str, int,
    float, bool, None, list, tuple, dict). Positional arguments are bound to
    ``parameters[name]`` (parameter names in order); without an entry for
    the tool they are an error.

    Raises `CallSyntaxError` with the line and column of the problem.
    """
    start, end = 0, len(text)
    fenced = _FENCED.match(text)
    if fenced:
        start, end = fenced.start("body"), fenced.end("body")
    while start < end and (text[start].isspace() or text[start] == "`"):
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] == "`"):
        end -= 1
    if start == end:
        return []
    return _parse_segment(_Segment(_Text(text), start, end), parameters)


# Where calls begin: a bracket at the start of a line (after spaces or
# backticks) followed by a name and a parenthesis; or a lone call at the
# start of a line, when it names a tool (prose rarely starts a line with
# "get_current_weather(").
_LIST_START = re.compile(r"^[ \t`]*(\[)\s*[A-Za-z_][\w.]*\s*\(", re.MULTILINE)
_CALL_START = re.compile(r"^[ \t`]*([A-Za-z_][\w.]*)\s*\(", re.MULTILINE)


def _next_start(text: str, position: int, names: set[str]) -> int | None:
    starts = []
    listed = _LIST_START.search(text, position)
    if listed is not None:
        starts.append(listed.start(1))
    for call in _CALL_START.finditer(text, position):
        if call[1] in names:
            starts.append(call.start(1))
            break
    return min(starts, default=None)


def _python_segments(text: str, names: set[str]) -> Iterator[tuple[int, int]]:
    """Spans of `text` holding call lists, or lone calls of known tools."""
    position = 0
    while (start := _next_start(text, position, names)) is not None:
        close = closing_bracket(text, start, PYTHON)
        if close is None:
            # Unbalanced: hand the rest to the parser, which says where it broke.
            yield start, len(text)
            return
        yield start, close + 1
        position = close + 1


# --- reading ReAct --------------------------------------------------------------------

_MARKER = re.compile(
    r"^[ \t*]*(?P<kind>thought|action input|action|observation|final answer)[ \t*]*:[ \t*]*",
    re.IGNORECASE | re.MULTILINE,
)
_ACTION = re.compile(r"(?P<name>[A-Za-z_][\w.\-]*)\s*(?P<rest>.*)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class _Marker:
    kind: str
    start: int
    body_start: int
    body_end: int


def _markers(text: str) -> list[_Marker]:
    found = list(_MARKER.finditer(text))
    out = []
    for m, following in itertools.zip_longest(found, found[1:]):
        end = following.start() if following is not None else len(text)
        out.append(_Marker(m["kind"].lower(), m.start(), m.end(), end))
    return out


def _json_object(whole: _Text, start: int, end: int) -> dict[str, Any]:
    source = whole.text[start:end]
    try:
        value = json.loads(source)
    except json.JSONDecodeError as exc:
        raise whole.error(f"the arguments are not valid JSON: {exc.msg}", start + exc.pos) from None
    if not isinstance(value, dict):
        raise whole.error("the arguments must be one JSON object: {...}", start)
    return value


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _react_action(
    whole: _Text,
    action: _Marker,
    given_input: _Marker | None,
    parameters: Mapping[str, Sequence[str]],
) -> list[tuple[str, dict[str, Any]]]:
    text = whole.text
    start, end = _strip_span(text, action.body_start, action.body_end)
    if text.startswith("[", start):
        return _parse_segment(_Segment(whole, start, end), parameters)
    match = _ACTION.fullmatch(text, start, end)
    if match is None:
        raise whole.error("expected a tool name after 'Action:'", start)
    name, rest = match["name"], match["rest"]
    rest_start = match.start("rest")
    if rest.startswith("["):
        inner_start, inner_end = _strip_span(text, rest_start + 1, end)
        if inner_end <= inner_start or text[inner_end - 1] != "]":
            raise whole.error("the '[' of the arguments is not closed with ']'", rest_start)
        inner_start, inner_end = _strip_span(text, inner_start, inner_end - 1)
        if inner_start == inner_end:
            return [(name, {})]
        return [(name, _json_object(whole, inner_start, inner_end))]
    if rest.startswith("("):
        return _parse_segment(_Segment(whole, start, end), parameters)
    if rest.strip():
        raise whole.error(
            f"unexpected text after the tool name {name!r}: write its arguments as "
            '[{"param": value}]',
            rest_start,
        )
    if given_input is None:
        return [(name, {})]
    input_start, input_end = _strip_span(text, given_input.body_start, given_input.body_end)
    if input_start == input_end:
        return [(name, {})]
    return [(name, _json_object(whole, input_start, input_end))]


@dataclass(slots=True)
class _ReactReading:
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answer: str | None = None
    notes: list[str] = field(default_factory=list)


def _read_react(text: str, parameters: Mapping[str, Sequence[str]]) -> _ReactReading | None:
    """The calls or final answer of a ReAct reply; None if it has no ReAct lines."""
    markers = _markers(text)
    if not markers:
        return None
    whole = _Text(text)
    reading = _ReactReading()
    for index, marker in enumerate(markers):
        if marker.kind == "observation":
            if reading.calls:
                reading.notes.append(
                    "Everything from your 'Observation:' line on was ignored: "
                    "observations come from the tools."
                )
            break
        if marker.kind == "final answer":
            if reading.calls:
                reading.notes.append(
                    "Your 'Final Answer:' was ignored because it came with actions; "
                    "answer again once you have their results."
                )
                break
            reading.answer = text[marker.body_start : marker.body_end].strip()
            return reading
        if marker.kind == "action":
            following = markers[index + 1] if index + 1 < len(markers) else None
            given = following if following and following.kind == "action input" else None
            reading.calls.extend(_react_action(whole, marker, given, parameters))
    return reading


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
        self._signatures: dict[str, _Signature] = {}
        self._ids = itertools.count(1)

    def prompt(self, tools: Toolbox) -> str:
        template = PYTHON_PROMPT if self.format == "python" else REACT_PROMPT
        return template.format(tools=describe_tools(tools))

    def prepare(self, tools: Toolbox, system_prompt: str | None) -> Prepared:
        self._signatures = {s.call_name: s for s in (_signature(t) for t in tools)}
        text = self.prompt(tools)
        if system_prompt:
            text = f"{system_prompt}\n\n{text}"
        return Prepared(system_prompt=text, tools=(), tool_choice="none")

    def interpret(self, response: ModelResponse) -> Interpretation:
        if response.tool_calls:
            notes = [f"Part of your last reply was unusable: {p}." for p in response.problems]
            return Calls(response.tool_calls, notes=notes)
        text = response.content or ""
        if not text.strip():
            return Retry(EMPTY_REPLY)
        parameters = {name: s.positional for name, s in self._signatures.items()}
        try:
            if self.format == "react":
                reading = _read_react(text, parameters)
                if reading is None:
                    return Answer(text.strip())
                if reading.answer is not None:
                    return Answer(reading.answer)
                if not reading.calls:
                    return Retry(
                        "Your reply has no Action and no Final Answer. Continue with "
                        f'{REACT_SYNTAX}, or finish with "Final Answer: ...".'
                    )
                return Calls(self._tool_calls(reading.calls), notes=reading.notes)
            parsed: list[tuple[str, dict[str, Any]]] = []
            for start, end in _python_segments(text, set(self._signatures)):
                parsed.extend(_parse_segment(_Segment(_Text(text), start, end), parameters))
        except CallSyntaxError as exc:
            syntax = PYTHON_SYNTAX if self.format == "python" else REACT_SYNTAX
            return Retry(
                f"I could not read your tool call at {exc}.\n{exc.pointer()}\n"
                f"Nothing was run. Write calls as {syntax}."
            )
        if not parsed:
            return Answer(text.strip())
        return Calls(self._tool_calls(parsed))

    def _tool_calls(self, parsed: Sequence[tuple[str, dict[str, Any]]]) -> list[ToolCall]:
        calls = []
        for name, written in parsed:
            signature = self._signatures.get(name)
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
