"""Tools: typed functions or raw schemas, their renderings and argument checks."""

from ._render import StubSignature, lean_schema, strict_schema
from ._tool import Tool, tool
from ._toolbox import Toolbox
from ._validate import ArgumentChecker, ArgumentsError, ParsedArguments, parse_arguments

__all__ = [
    "ArgumentChecker",
    "ArgumentsError",
    "ParsedArguments",
    "StubSignature",
    "Tool",
    "Toolbox",
    "lean_schema",
    "parse_arguments",
    "strict_schema",
    "tool",
]
