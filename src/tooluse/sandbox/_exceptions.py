"""Errors raised to the developer by the sandbox.

::

    ToolUseError                see tooluse._exceptions
    ├── UsageError              the sandbox was called wrongly (bad arguments, limits)
    └── SandboxError            the engine itself failed
        └── SandboxUnavailable  isolation="required" but no isolated sandbox can be started

    SandboxWarning              (a RuntimeWarning) scripts run without isolation

What a script did wrong is never raised: it comes back in ``ExecResult.error`` so that it can
be shown to the model.
"""

from __future__ import annotations

from .._exceptions import ToolUseError

__all__ = ["SandboxError", "SandboxUnavailable", "SandboxWarning"]


class SandboxError(ToolUseError):
    """The sandbox engine failed, or was used when it could not be (closed)."""


class SandboxUnavailable(SandboxError):
    """An isolated sandbox was required and cannot be started on this machine."""


class SandboxWarning(RuntimeWarning):
    """Scripts will run without isolation (bubblewrap missing or unusable)."""
