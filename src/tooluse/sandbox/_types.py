from __future__ import annotations

import keyword
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

from .._exceptions import UsageError

__all__ = [
    "DirectCall",
    "DirectHandler",
    "ExecResult",
    "ExecStatus",
    "Handler",
    "LimitName",
    "ProxySpec",
    "ToolReply",
]

ExecStatus: TypeAlias = Literal["ok", "error", "timeout", "killed", "sandbox_error"]
LimitName: TypeAlias = Literal["wall_clock", "cpu", "memory", "calls", "output"]

# Names the script-side module defines itself.
RESERVED_NAMES = frozenset({"ToolError", "parallel"})


@dataclass(frozen=True, slots=True, init=False)
class ProxySpec:
    """A tool as the script sees it: a name and its parameter names in order.

    Positional arguments are bound to the first ``positional`` of ``params`` in order (all
    of them by default; the rest are keyword-only); keyword arguments pass as they are.
    Defaults and validation belong to the host-side handler.
    """

    name: str
    params: tuple[str, ...]
    positional: int

    def __init__(
        self, name: str, params: Sequence[str] = (), *, positional: int | None = None
    ) -> None:
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
            raise UsageError(f"tool name {name!r} is not a public Python identifier")
        if name in RESERVED_NAMES:
            raise UsageError(f"tool name {name!r} is reserved by the sandbox's tool module")
        if isinstance(params, str):
            raise TypeError("ProxySpec params must be a sequence of names, not a string")
        for param in params:
            if not param.isidentifier() or keyword.iskeyword(param):
                raise UsageError(f"parameter name {param!r} of {name} is not an identifier")
        if len(set(params)) != len(params):
            raise UsageError(f"parameter names of {name} repeat: {list(params)}")
        if positional is None:
            positional = len(params)
        elif not 0 <= positional <= len(params):
            raise UsageError(f"positional of {name} must be between 0 and {len(params)}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "params", tuple(params))
        object.__setattr__(self, "positional", positional)


@dataclass(frozen=True, slots=True)
class ToolReply:
    """What a handler returns for one call: ``ToolReply.ok(value)`` or ``ToolReply.fail(...)``.

    A failure reaches the script as ``ToolError`` whose text is ``message`` and whose
    ``.kind`` is ``kind``.
    """

    value: object = None
    kind: str | None = None
    message: str = ""

    @classmethod
    def ok(cls, value: object = None) -> ToolReply:
        """A successful call; ``value`` must be a JSON value."""
        return cls(value=value)

    @classmethod
    def fail(cls, message: str, kind: str = "tool") -> ToolReply:
        """A failed call, e.g. ``ToolReply.fail("unit must be 'c' or 'f'", kind="validation")``."""
        return cls(kind=kind, message=message)

    @property
    def failed(self) -> bool:
        return self.kind is not None


Handler: TypeAlias = Callable[[str, dict[str, object]], Awaitable[ToolReply] | ToolReply]


class DirectCall(Protocol):
    """A call a `DirectHandler` accepted, to run on the tool channel's thread.

    The channel runs it while the script waits; if it outlasts ``timeout`` seconds, the
    event loop abandons it, answers the script, and a fresh thread serves the channel.
    """

    @property
    def timeout(self) -> float | None: ...

    def run(self) -> ToolReply | None:
        """Run the call on this thread; None if it was abandoned meanwhile."""
        ...

    def abandon(self, reason: str | None) -> ToolReply | None:
        """Give up on the call (it timed out, or ``reason``); None if it had already ended."""
        ...


# Called on the channel's own thread, never the event loop's: None hands the call to the
# Handler on the loop; a ToolReply answers it at once.
DirectHandler: TypeAlias = Callable[[str, dict[str, object]], DirectCall | ToolReply | None]


@dataclass(frozen=True, slots=True)
class ExecResult:
    """The outcome of one script.

    Attributes:
        status: "ok"; "error" (the script raised, or had a syntax error); "timeout" (wall
            clock); "killed" (a limit stopped it, see ``limit``, or a signal did);
            "sandbox_error" (the engine failed; the Sandbox restarts itself).
        stdout, stderr: what the script printed, cut to the configured size.
        error: a message meant for the model when status is not "ok": the syntax error
            with line and column, the traceback restricted to the script's lines, or which
            limit was hit.
        limit: the limit that stopped the script, if one did.
        truncated: whether stdout or stderr was cut.
        calls_made: tool calls the host accepted from this script.
        duration_s: wall-clock time from request to result.
    """

    status: ExecStatus
    stdout: str
    stderr: str
    error: str | None
    limit: LimitName | None
    truncated: bool
    calls_made: int
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.status == "ok"
