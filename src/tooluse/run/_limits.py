"""`Limits`: how long each part of a run may take, and how much it may do at once."""

from __future__ import annotations

from dataclasses import dataclass

from .._exceptions import UsageError

__all__ = ["Limits"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """The bounds of a run besides its rounds (``Agent(max_rounds=...)``).

    One value, so that an application states its bounds once and gives them to
    every agent it makes: ``Agent(model, tools, limits=Limits(tool_timeout=5))``.

    Args:
        tool_timeout: default seconds per tool call (a tool's own wins); None
            waits for ever.
        script_timeout: wall-clock seconds a script may run (code convention).
        max_concurrency: tool calls executing at once.
        max_calls_per_turn: calls in one reply beyond this are refused.
        cycle_limit: identical call+result repeats, runs of the same script
            with the same output, or turns a call failed with the same
            arguments, that end the run with status ``cycle`` (None: never);
            the model is warned earlier.
        result_limit: a call's result whose text is longer than this many
            characters is kept by reference: the model sees a handle (``@r3``),
            the value's shape and a preview, and passes the handle as an argument
            to give a tool the whole value. None shows every result in full
            (clipped at 50,000 characters). With a `ContextPolicy`, its own
            ``result_limit`` (tokens, about 3 characters each) is used instead.
    """

    tool_timeout: float | None = 60.0
    script_timeout: float = 30.0
    max_concurrency: int = 16
    max_calls_per_turn: int = 128
    cycle_limit: int | None = 5
    result_limit: int | None = 6_000

    def __post_init__(self) -> None:
        for name in ("max_concurrency", "max_calls_per_turn"):
            if getattr(self, name) < 1:
                raise UsageError(f"Limits({name}=...) must be at least 1")
        for name in ("tool_timeout", "script_timeout"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise UsageError(f"Limits({name}=...) must be a positive number of seconds")
        if self.result_limit is not None and self.result_limit < 100:
            raise UsageError("Limits(result_limit=...) must be at least 100 characters, or None")
        if self.cycle_limit is not None and self.cycle_limit < 1:
            raise UsageError("Limits(cycle_limit=...) must be at least 1, or None")
