"""Docstrings → a description and per-parameter descriptions (Google, NumPy, Sphinx).

griffe parses all three styles, but importing it costs more than the rest of the
tools package (about 80 ms, in every process that builds a tool). Most tool
docstrings are plain prose with a Google ``Args:`` and ``Returns:`` section, so
those are read here, line for line as griffe's Google parser reads them; a
docstring that holds anything else (another section, NumPy or Sphinx fields) goes
to griffe. `tests/tools/test_docstrings.py` checks that both give the same result
on every docstring of griffe's own source, the standard library's and tooluse's.
"""

from __future__ import annotations

import inspect
import re
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


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Split a docstring into its prose and its parameter descriptions."""
    if not doc or not doc.strip():
        return ParsedDocstring()
    text = inspect.cleandoc(doc)
    if _style(text) == "google":
        parsed = parse_google(text)
        if parsed is not None:
            return parsed
    return parse_with_griffe(text)


def _style(text: str) -> str:
    if ":param " in text or ":return" in text:
        return "sphinx"
    lines = [line.strip() for line in text.splitlines()]
    for i, line in enumerate(lines[:-1]):
        following = lines[i + 1]
        if line in {"Parameters", "Returns"} and following and set(following) == {"-"}:
            return "numpy"
    return "google"


def parse_with_griffe(text: str) -> ParsedDocstring:
    """`text` (a cleaned docstring) parsed by griffe in the style it is written in."""
    # Imported here: a process whose tools' docstrings `parse_google` reads, or that
    # reads no docstring at all (a command's --help), never loads griffe.
    import griffe

    styles = {
        "google": griffe.Parser.google,
        "numpy": griffe.Parser.numpy,
        "sphinx": griffe.Parser.sphinx,
    }
    # griffe would log a warning for every parameter documented without a type:
    # tooluse takes types from the signature, so those warnings are noise.
    docstring = griffe.Docstring(text, lineno=1)
    sections = docstring.parse(styles[_style(text)], warnings=False)
    return _from_sections(sections)


def _from_sections(sections: list[griffe.DocstringSection]) -> ParsedDocstring:
    import griffe

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


# --- Google style, as griffe reads it -----------------------------------------------

#: A line that may open a section ("Args:") or an admonition ("Note: a title").
_TITLE = re.compile(r"^(?P<type>[\w][\s\w-]*):(\s+(?P<title>[^\s].*))?\s*$", re.IGNORECASE)
#: A returned value's line: an optional name and (type), a colon, the description.
_RETURNED = re.compile(r"^(?:(?P<name>\w+)?\s*(?:\((?P<type>.+)\))?:\s*)?(?P<desc>.*)$")
_PARAMETERS = frozenset({"args", "arguments", "params", "parameters"})
_RETURNS = frozenset({"returns"})
#: Sections read as a block of items and left out of the result.
_LEFT_OUT = frozenset(
    {
        "raises",
        "exceptions",
        "warns",
        "warnings",
        "keyword args",
        "keyword arguments",
        "other args",
        "other arguments",
        "other params",
        "other parameters",
    }
)
#: Sections griffe reads in ways of their own: a docstring with one goes to griffe.
_OTHER_SECTIONS = frozenset(
    {
        "type args",
        "type arguments",
        "type params",
        "type parameters",
        "yields",
        "receives",
        "examples",
        "attributes",
        "functions",
        "methods",
        "classes",
        "type aliases",
        "modules",
    }
)

_Items = list[list[str]]


class _Unread(Exception):
    """The docstring holds something `parse_google` leaves to griffe."""


def parse_google(text: str) -> ParsedDocstring | None:
    """`text` read as griffe reads a Google docstring, or None where griffe must read it.

    Prose, ``Args:`` (and its other names), ``Returns:``, admonitions (``Note:`` with
    an indented block, left out), fenced code, and the sections whose items are left
    out (``Raises:``, ``Keyword Args:`` …) are read here; any other section is not.
    """
    try:
        return _google(inspect.cleandoc(text.rstrip()).split("\n"))
    except _Unread:
        return None


def _blank(line: str) -> bool:
    return not line or line.isspace()


def _google(lines: list[str]) -> ParsedDocstring:
    prose: list[str] = []
    current: list[str] = []
    params: dict[str, str] = {}
    returns = ""

    def end_prose() -> None:
        if any(current):
            prose.append("\n".join(current).rstrip("\n"))
        current.clear()

    fenced = False
    at = 0
    while at < len(lines):
        line = lines[at]
        fence = line.lstrip(" ").startswith("```")
        if fenced or fence:
            fenced = fenced != fence
            current.append(line)
        elif ":" in line and (match := _TITLE.match(line)):
            kind = match["type"].lower()
            if not _opens_block(lines, at):
                current.append(line)
            elif kind in _OTHER_SECTIONS:
                raise _Unread
            elif kind in _PARAMETERS or kind in _RETURNS or kind in _LEFT_OUT:
                end_prose()
                items, at = _block_items(lines, at + 1)
                if kind in _PARAMETERS:
                    params.update(_parameters(items))
                elif kind in _RETURNS and items:
                    returns = " ".join(_returned(item) for item in items)
            else:  # an admonition, left out
                at, found = _block_end(lines, at + 1)
                if found:
                    end_prose()
                else:
                    current.append(lines[at])
        else:
            current.append(line)
        at += 1
    end_prose()
    return ParsedDocstring(
        description="\n\n".join(p.strip() for p in prose if p.strip()),
        params=params,
        returns=returns,
    )


def _opens_block(lines: list[str], at: int) -> bool:
    """Whether the title at `at` opens a section: a blank line above it, its block below."""
    below = at + 1 < len(lines) and _blank(lines[at + 1])
    below_two = at + 2 < len(lines) and _blank(lines[at + 2])
    indented = at + 1 < len(lines) and not below and lines[at + 1].startswith(" ")
    indented_two = at + 2 < len(lines) and not below_two and lines[at + 2].startswith(" ")
    if not (indented or indented_two):
        return False
    blank_above = at == 0 or _blank(lines[at - 1])
    return blank_above and not (indented_two and below)


def _first_filled(lines: list[str], at: int) -> int:
    while at < len(lines) and _blank(lines[at]):
        at += 1
    if at == len(lines):
        raise _Unread  # griffe fails on a section that only blank lines follow
    return at


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _block_items(lines: list[str], at: int) -> tuple[_Items, int]:
    """A section's items (each its first line and continuation lines) and its last line."""
    if at >= len(lines):
        return [], at
    at = _first_filled(lines, at)
    indent = _indent(lines[at])
    if indent == 0:
        return [], at - 1
    items: _Items = []
    item = [lines[at][indent:]]
    at += 1
    while at < len(lines):
        line = lines[at]
        if _blank(line):
            item.append("")
        elif line.startswith(indent * 2 * " "):
            item.append(line[indent * 2 :])
        elif line.startswith((indent + 1) * " "):
            item.append(line[_indent(line) :])
        elif line.startswith(indent * " "):
            items.append(item)
            item = [line[indent:]]
        else:
            break
        at += 1
    items.append(item)
    return items, at - 1


def _block_end(lines: list[str], at: int) -> tuple[int, bool]:
    """Where an admonition's indented block ends, and whether it has one."""
    start = _first_filled(lines, at)
    indent = _indent(lines[start])
    if indent == 0:
        return at - 1, False
    at = start + 1
    while at < len(lines) and (lines[at].startswith(indent * " ") or _blank(lines[at])):
        at += 1
    return at - 1, True


def _described(first: str, rest: list[str]) -> str:
    return " ".join("\n".join([first.lstrip(), *rest]).rstrip("\n").split())


def _parameters(items: _Items) -> dict[str, str]:
    params: dict[str, str] = {}
    for item in items:
        if ":" not in item[0]:
            continue  # griffe skips an item with no "name: description"
        name, description = item[0].split(":", 1)
        if "(" in name and name.endswith(")"):
            name = name.split("(", 1)[0].strip()
        params[name] = _described(description, item[1:])
    return params


def _returned(item: list[str]) -> str:
    match = _RETURNED.match(item[0])
    assert match is not None  # every part of the pattern is optional
    return _described(match["desc"], item[1:])
