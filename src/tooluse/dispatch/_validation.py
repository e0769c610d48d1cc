"""Checking a call before anything runs: the first step of every call the dispatcher takes.

A call is checked in this order, and the first problem refuses it with the text the
model is shown (a `RejectedCall`):

    tool name ─→ caller (the tool's ``callers``) ─→ argument text (size, JSON, repairs)
              ─→ schema ─→ the function's types

What passes is `Prepared`: the tool, the arguments as recorded, and the keyword
arguments the function is called with. Nothing here runs a tool.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import pydantic

from .._messages import ToolCall
from .._records import RejectedCall
from ..sandbox._wire import json_encoder
from ..tools import Caller, Tool, Toolbox
from ..tools._validate import ArgumentChecker, ArgumentsError, checker_for, parse_arguments
from ._handles import Handles

__all__ = ["Prepared", "Validator", "arguments_text", "caller_of"]

_RAW_KEEP = 300


# What ``json.dumps(value, default=str)`` writes, with the encoder built once.
arguments_text = json_encoder(separators=(", ", ": "), default=str)


def caller_of(source: str) -> Caller:
    """Who made a call from where it came: a script, or the model (JSON, text, MCP)."""
    return "script" if source == "script" else "model"


@dataclass(slots=True)
class Prepared:
    """A call that passed every check, ready to run."""

    id: str
    tool: Tool
    arguments: dict[str, Any]
    """As recorded: what the model sent, after repairs."""
    kwargs: dict[str, Any]
    """What the function is called with: the arguments converted to its types."""
    repairs: tuple[str, ...]


@dataclass(eq=False)
class Validator:
    """Checks calls against a toolbox; keeps one schema checker per tool it has seen."""

    tools: Toolbox
    _: KW_ONLY
    max_argument_bytes: int
    #: With tool search: the refusal for a model's call of a tool not loaded yet.
    unloaded: Callable[[str], str | None] | None = None
    #: The run's results kept by reference: handles in arguments are resolved
    #: from here before any check, so the checks and the tool see the value.
    handles: Handles | None = None
    _checkers: dict[str, ArgumentChecker] = field(default_factory=dict, init=False, repr=False)

    def prepare(
        self, call: ToolCall, *, round_: int = 0, source: str = "json"
    ) -> Prepared | RejectedCall:
        """Check a call whose arguments are JSON text, as a model writes them."""
        tool = self.tools.get(call.name)
        if tool is None:
            return self.reject(call, self._unknown_tool(call.name), round_=round_, source=source)
        caller = caller_of(source)
        if caller not in tool.callers:
            return self._not_for(call, tool, caller, round_=round_, source=source)
        if self.unloaded is not None and caller == "model":
            refusal = self.unloaded(tool.name)
            if refusal is not None:
                return self.reject(call, refusal, round_=round_, source=source, kind="unloaded")
        try:
            parsed = parse_arguments(call.arguments, max_bytes=self.max_argument_bytes)
        except ArgumentsError as exc:
            return self.reject(
                call, f"invalid call to {tool.name}: {exc}", round_=round_, source=source
            )
        return self._check(
            call.id,
            tool,
            parsed.value,
            parsed.repairs,
            round_=round_,
            source=source,
            text=call.arguments,
        )

    def prepare_decoded(
        self,
        call_id: str,
        name: str,
        arguments: dict[str, Any],
        *,
        round_: int = 0,
        source: str = "script",
    ) -> Prepared | RejectedCall:
        """Check a call whose arguments arrive decoded from JSON, as a script's do.

        They are what parsing their text would give, so only the text's size needs
        checking; a refusal is worded from the text, as for a JSON call.
        """
        text = arguments_text(arguments)
        tool = self.tools.get(name)
        if (
            tool is None
            or len(text) > self.max_argument_bytes
            or caller_of(source) not in tool.callers
        ):
            return self.prepare(ToolCall(call_id, name, text), round_=round_, source=source)
        return self._check(call_id, tool, arguments, (), round_=round_, source=source, text=text)

    def reject(
        self, call: ToolCall, error: str, *, round_: int, source: str, kind: str = "invalid"
    ) -> RejectedCall:
        """Refuse ``call`` with ``error``, keeping the start of its argument text."""
        raw = call.arguments
        if len(raw) > _RAW_KEEP:
            raw = raw[:_RAW_KEEP] + f"... [{len(call.arguments) - _RAW_KEEP:,} characters cut]"
        return RejectedCall(
            id=call.id,
            name=call.name,
            arguments=raw,
            error=error,
            round=round_,
            source=source,
            kind=kind,
        )

    def _not_for(
        self, call: ToolCall, tool: Tool, caller: Caller, *, round_: int, source: str
    ) -> RejectedCall:
        if caller == "script":
            error = f"{tool.name} may not be called from a script"
        else:
            error = f"{tool.name} may only be called from a script, not directly"
        return self.reject(call, error, round_=round_, source=source, kind="denied")

    def _check(
        self,
        call_id: str,
        tool: Tool,
        parsed: dict[str, Any],
        repairs: tuple[str, ...],
        *,
        round_: int,
        source: str,
        text: str,
    ) -> Prepared | RejectedCall:
        # Arguments with no "@r" in their text name no handle: they pay one scan of it.
        if self.handles is not None and "@r" in text:
            resolved = self.handles.resolve(call_id, parsed)
            if isinstance(resolved, str):
                return self.reject(
                    ToolCall(call_id, tool.name, text),
                    f"invalid call to {tool.name}: {resolved}",
                    round_=round_,
                    source=source,
                )
            parsed = resolved
        checker = self._checkers.get(tool.name)
        try:
            if checker is None:
                checker = self._checkers[tool.name] = checker_for(tool.parameters)
            arguments, null_repairs = checker.check(parsed)
        except ArgumentsError as exc:
            problem = f"invalid call to {tool.name}: {exc}"
        except Exception as exc:
            # The tool's schema failed, not the call (a $ref that does not resolve,
            # say): the call is refused with the reason and the run goes on.
            problem = _unusable(tool, "its parameter schema cannot check the arguments", exc)
        else:
            try:
                kwargs = tool.convert_arguments(arguments)
            except pydantic.ValidationError as exc:
                problem = f"invalid call to {tool.name}: " + "; ".join(
                    f"argument '{'.'.join(str(p) for p in err['loc'])}': {err['msg']}"
                    for err in exc.errors(include_url=False)
                )
            except Exception as exc:
                problem = _unusable(tool, "its arguments cannot be converted to its types", exc)
            else:
                return Prepared(call_id, tool, arguments, kwargs, repairs + null_repairs)
        return self.reject(
            ToolCall(call_id, tool.name, text), problem, round_=round_, source=source
        )

    def _unknown_tool(self, name: str) -> str:
        if not name:
            head = "the call has no tool name"
        else:
            head = f"there is no tool named {name!r}"
            close = self.tools.closest(name)
            if close:
                head += f"; did you mean {', '.join(repr(c) for c in close)}?"
        names = self.tools.names
        listed = ", ".join(names[:30]) + (f" and {len(names) - 30} more" if len(names) > 30 else "")
        return f"{head}. Available tools: {listed}" if names else f"{head}. No tools are available."


def _unusable(tool: Tool, what: str, exc: Exception) -> str:
    """The refusal of a call that failed in the tool's own checking, not in its arguments."""
    # Here, not at the top: only a failed check needs it (see `ArgumentChecker`).
    from referencing.exceptions import Unresolvable

    if isinstance(exc, Unresolvable):  # its message quotes the whole schema
        return (
            f"{tool.name} cannot be called: its schema has a $ref that does not resolve "
            f"within it, {exc.ref!r} (references are never fetched)"
        )
    reason = f"{type(exc).__name__}: {exc}"
    if len(reason) > _RAW_KEEP:
        reason = reason[:_RAW_KEEP] + "..."
    return f"{tool.name} cannot be called: {what} ({reason})"
