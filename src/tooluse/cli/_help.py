"""Help that reads at any terminal width: plain text, each description given room.

typer's rich help draws options as a table whose description column, at 80 columns,
is squeezed to some 20 characters. Here a definition list keeps two columns only while
the description column stays wide; otherwise each description sits under its option.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import Any

import typer

# typer formats help with the click it carries, not the click package: the formatter
# must be that one's.
from typer._click.formatting import HelpFormatter as _BaseFormatter

__all__ = ["plain_help"]

#: The narrowest description column worth keeping beside the terms.
MIN_DESCRIPTION = 44
#: How far a description under its term is indented past the term.
UNDER_INDENT = 4


def _wrap(text: str, width: int) -> list[str]:
    # Never at a hyphen nor inside a word: values such as local-unconstrained or a URL
    # stay whole, to be copied as written.
    lines: list[str] = []
    for paragraph in text.split("\n\n"):
        if lines:
            lines.append("")
        lines += textwrap.wrap(
            " ".join(paragraph.split()),
            width,
            break_on_hyphens=False,
            break_long_words=False,
        )
    return lines


class HelpFormatter(_BaseFormatter):
    def write_dl(
        self, rows: Iterable[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
    ) -> None:
        rows = list(rows)
        first_col = max((len(term) for term, _ in rows), default=0)
        beside = self.width - self.current_indent - first_col - col_spacing
        if first_col <= col_max and beside >= MIN_DESCRIPTION:
            under = " " * (self.current_indent + first_col + col_spacing)
            for term, text in rows:
                lines = _wrap(text, beside) or [""]
                head = f"{'':>{self.current_indent}}{term:<{first_col + col_spacing}}"
                self.write(f"{head}{lines[0]}".rstrip() + "\n")
                for line in lines[1:]:
                    self.write(f"{under}{line}\n" if line else "\n")
            return
        indent = " " * (self.current_indent + UNDER_INDENT)
        width = max(self.width - self.current_indent - UNDER_INDENT, MIN_DESCRIPTION)
        for term, text in rows:
            self.write(f"{'':>{self.current_indent}}{term}\n")
            for line in _wrap(text, width):
                self.write(f"{indent}{line}\n" if line else "\n")


class HelpContext(typer.Context):
    formatter_class = HelpFormatter


def plain_help(command: Any) -> None:
    """Give `command` and its subcommands this help instead of typer's rich tables."""
    command.rich_markup_mode = None
    command.context_class = HelpContext
    if command.help and not command.short_help:
        # Listed under its group, a command's first paragraph is given whole (click
        # would cut it to the room left on one line), wrapped like any description.
        command.short_help = " ".join(command.help.strip().split("\n\n")[0].split())
    for sub in getattr(command, "commands", {}).values():
        plain_help(sub)
