"""Help that reads at any terminal width: plain text, each description given room.

typer's rich help draws options as a table whose description column, at 80 columns,
is squeezed to some 20 characters. Here a definition list keeps two columns only while
the description column stays wide; otherwise each description sits under its option.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import typer

# typer formats help with the click it carries, not the click package: the formatter
# must be that one's.
from typer._click.formatting import HelpFormatter as _BaseFormatter
from typer._click.formatting import wrap_text

__all__ = ["plain_help"]

#: The narrowest description column worth keeping beside the terms.
MIN_DESCRIPTION = 44
#: How far a description under its term is indented past the term.
UNDER_INDENT = 4


class HelpFormatter(_BaseFormatter):
    def write_dl(
        self, rows: Iterable[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
    ) -> None:
        rows = list(rows)
        first_col = max((len(term) for term, _ in rows), default=0)
        beside = self.width - self.current_indent - first_col - col_spacing
        if first_col <= col_max and beside >= MIN_DESCRIPTION:
            super().write_dl(rows, col_max, col_spacing)
            return
        indent = " " * (self.current_indent + UNDER_INDENT)
        width = max(self.width - self.current_indent - UNDER_INDENT, MIN_DESCRIPTION)
        for term, text in rows:
            self.write(f"{'':>{self.current_indent}}{term}\n")
            for line in wrap_text(text, width, preserve_paragraphs=True).splitlines():
                self.write(f"{indent}{line}\n" if line else "\n")


class HelpContext(typer.Context):
    formatter_class = HelpFormatter


def plain_help(command: Any) -> None:
    """Give `command` and its subcommands this help instead of typer's rich tables."""
    command.rich_markup_mode = None
    command.context_class = HelpContext
    for sub in getattr(command, "commands", {}).values():
        plain_help(sub)
