"""Deferred tools: what a run has loaded of a large toolbox, and its search tool.

With tool search on, a run starts with the tools marked always loaded and one
search tool. A search returns the definitions of the tools it found, in the
form the convention shows tools in, and loads them: from the next request on
they are callable (and, for native function calling, appended to the request's
tool list, after the tools it started with). A model that calls a tool of the
box it has not loaded is refused with the tool's definition, and the tool is
loaded then, so the next call goes through.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from .._exceptions import UsageError
from ..tools import Tool, Toolbox
from ._index import ToolIndex

__all__ = [
    "MAX_TOP_K",
    "SearchMode",
    "SearchRun",
    "ToolSearch",
    "auto_wants_search",
]

SearchMode = Literal["auto", "always", "never"]
MODES: tuple[SearchMode, ...] = ("auto", "always", "never")

#: The most tools one search returns.
MAX_TOP_K = 20
#: `auto` turns search on past this many tools...
AUTO_TOOLS = 30
#: ... or when the rendered schemas would take more than this share of the budget.
AUTO_SHARE = 0.10

Render = Callable[[Sequence[Tool]], str]

DESCRIPTION = (
    "Search the toolbox for tools that can do what you need, by a few words "
    "about the task, its inputs or the tool's name. The tools found are "
    "returned with their definitions and can be called from your next step on."
)


def auto_wants_search(count: int, schema_tokens: Callable[[], int], budget: int) -> bool:
    """`auto`'s rule: more than 30 tools, or schemas over 10% of the token budget."""
    if count > AUTO_TOOLS:
        return True
    return schema_tokens() > AUTO_SHARE * budget


@dataclass(slots=True)
class ToolSearch:
    """Deferred loading for an agent's toolbox: the index and which tools stay loaded.

    One per agent; the index is rebuilt only when the toolbox's tools change
    (name, description or parameters). Each run gets its own `SearchRun`.
    """

    always_loaded: frozenset[str] = frozenset()
    index: ToolIndex = field(default_factory=ToolIndex)

    def open(
        self,
        tools: Toolbox,
        *,
        render: Render,
        name: str = "tool_search",
        also_loaded: Iterable[str] = (),
        callable_now: bool = False,
    ) -> SearchRun:
        """A run's view of `tools`; `callable_now` when found tools need no next step (scripts)."""
        unknown = sorted(self.always_loaded - set(tools.names))
        if unknown:
            raise UsageError(f"always_loaded names tools the toolbox lacks: {', '.join(unknown)}")
        if name in tools:
            raise UsageError(f"the search tool's name {name!r} is taken by a tool of the toolbox")
        self.index.sync(tools)
        run = SearchRun(
            tools, self.index, render, name, frozenset(self.always_loaded | set(also_loaded))
        )
        run.callable_now = callable_now
        return run


class SearchRun:
    """One run's view of a deferred toolbox: what is loaded, and the search tool."""

    def __init__(
        self,
        box: Toolbox,
        index: ToolIndex,
        render: Render,
        name: str,
        always: frozenset[str],
    ) -> None:
        self.box = box
        self.index = index
        self.render = render
        self.always = always
        self._loaded: dict[str, None] = {}
        self._lock = threading.Lock()
        self.searches = 0
        self.callable_now = False

        def search(query: str, top_k: int = 5) -> str:
            """Search the toolbox.

            Args:
                query: a few words about what the tool should do, its inputs, or its name
                top_k: how many tools to return (1 to 20)
            """
            return self.search(query, top_k)

        self.tool = Tool.from_function(search, name=name, description=DESCRIPTION)

    @property
    def initial(self) -> list[Tool]:
        """What the run starts with: the always-loaded tools, then the search tool."""
        return [*(t for t in self.box if t.name in self.always), self.tool]

    @property
    def hidden(self) -> int:
        """Tools of the box not loaded at the start."""
        return sum(1 for t in self.box if t.name not in self.always)

    def found(self) -> list[Tool]:
        """Tools loaded by search or by a refused call, in the order they were loaded."""
        with self._lock:
            names = list(self._loaded)
        return [t for t in (self.box.get(n) for n in names) if t is not None]

    def is_loaded(self, name: str) -> bool:
        return name in self.always or name == self.tool.name or name in self._loaded

    def load(self, names: Iterable[str]) -> None:
        with self._lock:
            for name in names:
                if name not in self.always:
                    self._loaded.setdefault(name, None)

    def refusal(self, name: str) -> str | None:
        """Why a direct call of `name` is refused (then loading it), or None if it may run."""
        tool = self.box.get(name)
        if tool is None or self.is_loaded(name):
            return None
        self.load([name])
        return (
            f"{name} exists but was not loaded, so it was not run. Its definition:\n"
            f"{self.render([tool]).rstrip()}\n"
            f"It is loaded now: call it again with arguments that fit this definition. "
            f"To find other tools, call {self.tool.name}(query)."
        )

    def search(self, query: object, top_k: object = 5) -> str:
        """The text the model reads for one search; never raises on its input."""
        self.searches += 1
        notes: list[str] = []
        k = top_k if isinstance(top_k, int) and not isinstance(top_k, bool) else 5
        if k != top_k:
            notes.append(f"top_k={top_k!r} is not a whole number; used 5.")
        elif k < 1 or k > MAX_TOP_K:
            clamped = min(max(k, 1), MAX_TOP_K)
            notes.append(f"top_k={k} is outside 1..{MAX_TOP_K}; used {clamped}.")
            k = clamped
        text = query if isinstance(query, str) else ""
        size = len(self.box)
        if not text.strip():
            notes.append(
                f"The query is empty, so nothing was searched among the {size:,} tools. "
                "Describe what you need in a few words (what the tool does, its inputs), "
                f'e.g. {self.tool.name}(query="convert currency").'
            )
            return "\n".join(notes)
        hits = self.index.search(text, k)
        if not hits:
            notes.append(
                f"No tool matches {text!r} among the {size:,} tools. Try other words "
                "(what the tool does, its inputs, a likely name), or go on without a tool."
            )
            return "\n".join(notes)
        found = [t for t in (self.box.get(h.name) for h in hits) if t is not None]
        self.load(t.name for t in found)
        when = "now" if self.callable_now else "from your next step on"
        head = f"{len(found)} tool(s) found for {text!r} among {size:,}; callable {when}:"
        return "\n".join([*notes, head, self.render(found).rstrip()])
