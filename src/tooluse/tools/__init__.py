"""Tools: typed functions or raw schemas, their renderings and argument checks."""

from ._context import RunContext
from ._render import StubSignature, lean_schema, strict_schema
from ._tool import Caller, Effects, Tool, ToolExample, Trust, tool
from ._toolbox import Toolbox
from ._validate import ArgumentChecker, ArgumentsError, ParsedArguments, parse_arguments

__all__ = [
    "ArgumentChecker",
    "ArgumentsError",
    "Caller",
    "Effects",
    "ParsedArguments",
    "RunContext",
    "StubSignature",
    "Tool",
    "ToolExample",
    "Toolbox",
    "Trust",
    "lean_schema",
    "parse_arguments",
    "strict_schema",
    "tool",
]
