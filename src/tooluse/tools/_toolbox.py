"""`Toolbox`: a named set of tools and every rendering of it."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .._exceptions import ToolDefinitionError, UsageError
from ._render import (
    StubSignature,
    render_stub_module,
    stub_signature,
    stub_signatures,
    to_anthropic,
    to_openai,
)
from ._tool import Caller, Tool

__all__ = ["Toolbox"]


class Toolbox:
    """An ordered set of tools with unique names.

    Names must stay unique where they are written as Python (the stub module,
    scripts): ``files.read`` and ``files-read`` are both ``files_read`` there,
    so a toolbox refuses the second, as it refuses a parameter name that
    repeats that way. A tool named like a helper of the scripts' tools module
    (``parallel``, ``ToolError``) is written there with a trailing underscore.

    Plain functions are accepted and turned into tools as `@tool` would.
    ``defer=True`` asks an `Agent` to hide the tools behind tool search (its
    ``tool_search="always"``) unless the agent says otherwise.
    """

    def __init__(
        self, tools: Iterable[Tool | Callable[..., Any]] = (), *, defer: bool = False
    ) -> None:
        self.defer = defer
        self._tools: dict[str, Tool] = {}
        self._functions: dict[str, str] = {}  # stub function name → tool name
        for item in tools:
            self.add(item)

    def add(self, item: Tool | Callable[..., Any]) -> Tool:
        built = item if isinstance(item, Tool) else Tool.from_function(item)
        if built.name in self._tools:
            raise ToolDefinitionError(f"two tools are named {built.name!r}")
        signature = stub_signature(built)
        other = self._functions.get(signature.function)
        if other is not None:
            raise ToolDefinitionError(
                f"tools {other!r} and {built.name!r} would both be {signature.function}() "
                "in Python (scripts, stubs); rename one"
            )
        params: dict[str, str] = {}
        for python_name, name in signature.params:
            if python_name in params:
                raise ToolDefinitionError(
                    f"tool {built.name!r}: parameters {params[python_name]!r} and {name!r} "
                    f"would both be {python_name} in Python (scripts, stubs); rename one"
                )
            params[python_name] = name
        self._tools[built.name] = built
        self._functions[signature.function] = built.name
        return built

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __repr__(self) -> str:
        return f"Toolbox({list(self._tools)})"

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def named(self, names: Iterable[str], what: str) -> frozenset[str]:
        """`names` as a set, or `UsageError` saying which `what` names the toolbox lacks."""
        chosen = frozenset([names] if isinstance(names, str) else names)
        unknown = sorted(chosen - set(self._tools))
        if unknown:
            raise UsageError(
                f"{what} names tools the toolbox lacks: {', '.join(unknown)}; "
                f"have: {', '.join(self.names[:30])}"
            )
        return chosen

    def closest(self, name: str, n: int = 3) -> list[str]:
        """Tool names that look like `name`, best first (for "did you mean")."""
        lowered = {t.lower(): t for t in self._tools}
        matches = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.5)
        return [lowered[m] for m in matches]

    def callable_by(self, caller: Caller) -> Toolbox:
        """The tools ``caller`` may call (see `tool`'s ``callers``); this toolbox if all."""
        if all(caller in t.callers for t in self):
            return self
        return Toolbox(t for t in self if caller in t.callers)

    def merged(self, *others: Toolbox) -> Toolbox:
        return Toolbox([*self, *(t for other in others for t in other)])

    def to_openai(self, *, strict: bool = False) -> list[dict[str, Any]]:
        """OpenAI chat-completions ``tools``; `strict` gives strict-mode schemas."""
        return [to_openai(t, strict=strict) for t in self]

    def to_anthropic(self) -> list[dict[str, Any]]:
        """Anthropic Messages ``tools`` (name, description, input_schema)."""
        return [to_anthropic(t) for t in self]

    def stub_module(self, *, header: str | None = None, module: str | None = None) -> str:
        """A Python module declaring every tool as an annotated, documented function.

        Examples are doctest lines calling ``module.function(...)``, or
        ``function(...)`` without a `module`.
        """
        return render_stub_module(list(self), header=header, module=module)

    def stub_signatures(self) -> list[StubSignature]:
        return stub_signatures(list(self))
