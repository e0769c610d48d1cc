"""The expected-cardinality check: notice a run that silently covered only part of a request.

A model that makes 70 of 100 required calls answers fluently over the 70. Only
the caller knows the request needed 100; `Expect` lets it say so, and the run
then ends with status ``truncated`` and a message naming what is missing.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._exceptions import UsageError
from ._records import CallRecord

if TYPE_CHECKING:
    from .tools import Toolbox

__all__ = ["Expect", "check_expectations", "check_tools"]

_SHOW_MISSING = 10


def _key(value: Any) -> str:
    if isinstance(value, str):
        return " ".join(value.lower().split())
    return json.dumps(value, sort_keys=True, default=str)


@dataclass(frozen=True, slots=True)
class Expect:
    """What a complete answer to the request needs.

    Args:
        calls: at least this many successful calls (of `tool`, or of any tool).
        tool: count only calls to this tool.
        argument: with `values`: the argument whose values must be covered.
        values: every one of these must appear as `argument` of a successful
            call (strings compared case- and space-insensitively).

    ``Expect(tool="get_weather", argument="location", values=cities)`` says
    "the weather of every city in the list"; ``Expect(calls=100)`` says "a
    hundred successful calls".
    """

    calls: int | None = None
    tool: str | None = None
    argument: str | None = None
    values: Sequence[Any] = ()

    def __post_init__(self) -> None:
        if self.calls is None and not self.values:
            raise UsageError("Expect needs calls=N or argument=... with values=[...]")
        if self.values and not self.argument:
            raise UsageError("Expect(values=...) needs the argument the values belong to")
        if self.calls is not None and self.calls < 0:
            raise UsageError("Expect(calls=...) must be zero or more")

    def check_tools(self, tools: Toolbox) -> None:
        """Raise `UsageError` if no call to `tools` could meet this expectation.

        A misspelt tool or argument would otherwise pass unnoticed, and the run
        would end ``truncated`` over values that no call could ever cover.
        """
        if self.tool is not None and self.tool not in tools:
            raise UsageError(
                f"Expect(tool={self.tool!r}) names no tool in the toolbox"
                f"{_did_you_mean(self.tool, tools.names)}; have: {', '.join(tools.names)}"
            )
        if self.argument is None:
            return
        named = [t for t in tools if self.tool is None or t.name == self.tool]
        if not any(
            self.argument in t.parameters.get("properties", {})
            or t.parameters.get("additionalProperties")
            for t in named
        ):
            known = sorted({p for t in named for p in t.parameters.get("properties", {})})
            where = f"{self.tool} has no parameter" if self.tool else "no tool has a parameter"
            raise UsageError(
                f"Expect(argument={self.argument!r}): {where} {self.argument!r}"
                f"{_did_you_mean(self.argument, known)}; have: {', '.join(known)}"
            )

    def shortfall(self, calls: Sequence[CallRecord]) -> str | None:
        """A sentence naming what is missing, or None when the expectation is met."""
        done = [c for c in calls if c.ok and (self.tool is None or c.name == self.tool)]
        what = f"calls to {self.tool}" if self.tool else "tool calls"
        problems: list[str] = []
        if self.calls is not None and len(done) < self.calls:
            problems.append(f"expected {self.calls} successful {what}, {len(done)} ran")
        if self.values and self.argument is not None:
            seen = {_key(c.arguments[self.argument]) for c in done if self.argument in c.arguments}
            missing = [v for v in self.values if _key(v) not in seen]
            if missing:
                shown = ", ".join(str(v) for v in missing[:_SHOW_MISSING])
                more = (
                    f" and {len(missing) - _SHOW_MISSING} more"
                    if len(missing) > _SHOW_MISSING
                    else ""
                )
                problems.append(
                    f"{len(missing)} of {len(self.values)} expected {self.argument} values "
                    f"were never covered by {what}: {shown}{more}"
                )
        return "; ".join(problems) or None


def _did_you_mean(name: str, names: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, names, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_tools(expect: Sequence[Expect], tools: Toolbox) -> None:
    """Refuse, before a run starts, any expectation that no call to `tools` could meet."""
    for expectation in expect:
        expectation.check_tools(tools)


def check_expectations(expect: Sequence[Expect], calls: Sequence[CallRecord]) -> str | None:
    """Every shortfall of every expectation, as one message, or None."""
    problems = [p for e in expect if (p := e.shortfall(calls)) is not None]
    return "; ".join(problems) or None
