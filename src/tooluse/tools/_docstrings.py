"""Docstrings → a description and per-parameter descriptions (Google, NumPy, Sphinx)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import griffe

__all__ = ["ParsedDocstring", "parse_docstring"]


@dataclass(frozen=True, slots=True)
class ParsedDocstring:
    description: str = ""
    params: dict[str, str] = field(default_factory=dict)
    returns: str = ""


def _style(text: str) -> griffe.Parser:
    import griffe

    if ":param " in text or ":return" in text:
        return griffe.Parser.sphinx
    lines = [line.strip() for line in text.splitlines()]
    for i, line in enumerate(lines[:-1]):
        following = lines[i + 1]
        if line in {"Parameters", "Returns"} and following and set(following) == {"-"}:
            return griffe.Parser.numpy
    return griffe.Parser.google


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Split a docstring into its prose and its parameter descriptions."""
    if not doc or not doc.strip():
        return ParsedDocstring()
    # griffe takes longer to import than the rest of the tools package: a process that
    # reads no docstring (a command's --help, a client of an MCP server) never loads it.
    import griffe

    text = inspect.cleandoc(doc)
    # griffe would log a warning for every parameter documented without a type:
    # tooluse takes types from the signature, so those warnings are noise.
    sections = griffe.Docstring(text, lineno=1).parse(_style(text), warnings=False)
    prose: list[str] = []
    params: dict[str, str] = {}
    returns = ""
    for section in sections:
        kind = section.kind
        if kind is griffe.DocstringSectionKind.text:
            prose.append(str(section.value).strip())
        elif kind is griffe.DocstringSectionKind.parameters:
            for param in section.value:
                params[param.name] = " ".join(str(param.description).split())
        elif kind is griffe.DocstringSectionKind.returns:
            returns = " ".join(" ".join(str(r.description).split()) for r in section.value)
    return ParsedDocstring(
        description="\n\n".join(p for p in prose if p), params=params, returns=returns
    )
