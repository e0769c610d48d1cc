"""Reading Python syntax a model wrote: dotted names, and tool calls in BFCL's call syntax.

``[get_weather(city="Paris"), math.factorial(number=5)]``, values Python literals:
`parse_python_calls` reads a whole reply the way BFCL does, `parse_span` one stretch of
a longer text (`SourceText` maps its positions back, so every error names the line and
column of the whole reply).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._exceptions import InvalidCallError

__all__ = [
    "CallSyntaxError",
    "SourceText",
    "Span",
    "dotted",
    "parse_python_calls",
    "parse_span",
]


def dotted(node: ast.expr) -> str | None:
    """The name ``a.b.c`` an expression spells, or None when it is not a plain dotted name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


class CallSyntaxError(InvalidCallError, ValueError):
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
class SourceText:
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
class Span:
    """A stretch ``text[start:end]`` parsed on its own; maps its positions back."""

    whole: SourceText
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


def _read_call(
    node: ast.expr, segment: Span, parameters: Mapping[str, Sequence[str]] | None
) -> tuple[str, dict[str, Any]]:
    if not isinstance(node, ast.Call):
        raise segment.node_error(
            f"`{ast.unparse(node)}` is not a call: each item must be tool_name(param=value)",
            node,
        )
    name = dotted(node.func)
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


def parse_span(
    segment: Span, parameters: Mapping[str, Sequence[str]] | None
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
    return parse_span(Span(SourceText(text), start, end), parameters)
