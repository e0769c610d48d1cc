"""Tool search as each convention shows it: how found tools are written, and the prompt line.

The search itself (index, loading) lives in `tooluse.search`; this joins it to
the conventions, which that part must not know.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from .._tokens import count_tokens
from ..conventions import Convention
from ..conventions._text import TextConvention, describe_tools
from ..search import SearchRun, auto_wants_search
from ..search._deferred import Render
from ..tools import Tool, Toolbox
from ..tools._render import example_arguments

__all__ = ["more_tools_note", "render_for", "schema_tokens", "search_on", "search_tool_name"]

#: The token budget `auto` compares schemas against when no context policy sets one.
DEFAULT_BUDGET = 128_000


def _json_definitions(tools: Sequence[Tool]) -> str:
    return "\n".join(
        json.dumps(
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            | ({"examples": example_arguments(t)} if t.examples else {}),
            separators=(",", ":"),
            ensure_ascii=False,
        )
        for t in tools
    )


def _stubs(tools: Sequence[Tool]) -> str:
    return Toolbox(tools).stub_module(module="tools")


def render_for(convention: Convention) -> Render:
    """How a search result writes the tools it found: stubs, signatures or JSON schemas."""
    if convention.caller == "script":
        return _stubs
    if not convention.native_tools:
        # Examples are written as the convention's calls: a ReAct prompt's as actions.
        form = convention.format if isinstance(convention, TextConvention) else "python"
        return lambda tools: describe_tools(tools, form)
    return _json_definitions


def search_tool_name(convention: Convention, tools: Toolbox) -> str:
    """``search`` in scripts (``tools.search(query)``), else ``tool_search``."""
    if convention.caller == "script" and "search" not in tools:
        return "search"
    return "tool_search" if "tool_search" not in tools else "toolbox_search"


def more_tools_note(convention: Convention, run: SearchRun) -> str:
    """The one line of the prompt that says more tools exist than it lists."""
    name = run.tool.name
    if convention.caller == "script":
        return (
            f"The module `tools` has {run.hidden:,} more functions than the stubs below list. "
            f'`tools.{name}("what you need")` returns the stubs of the best matches; any '
            "function of the module can be called by its name."
        )
    return (
        f"{run.hidden:,} more tools exist than are listed. Call {name} with a few words about "
        "what you need; the tools it finds can be called from your next step on."
    )


def search_on(mode: str, tools: Toolbox, budget: int | None = None) -> bool:
    """Whether `mode` (``auto``, ``always``, ``never``) defers `tools` behind a search."""
    if mode == "always":
        return True
    if mode != "auto":
        return False
    return auto_wants_search(
        len(tools), lambda: schema_tokens(tools), budget if budget is not None else DEFAULT_BUDGET
    )


def schema_tokens(tools: Toolbox) -> int:
    """o200k tokens of every tool's JSON schema, as native function calling sends them."""
    return sum(count_tokens(_json_definitions([t])) for t in tools)
