"""Errors raised to the developer by the sandbox.

::

    SandboxError            the engine itself failed or was misused
    └── SandboxUnavailable  isolation="required" but no isolated sandbox can be started

    SandboxWarning          (a RuntimeWarning) scripts run without isolation

What a script did wrong is never raised: it comes back in ``ExecResult.error`` so that it can
be shown to the model.
"""

from __future__ import annotations

__all__ = ["SandboxError", "SandboxUnavailable", "SandboxWarning"]


class SandboxError(Exception):
    """The sandbox engine failed or was used wrongly."""


class SandboxUnavailable(SandboxError):
    """An isolated sandbox was required and cannot be started on this machine."""


class SandboxWarning(RuntimeWarning):
    """Scripts will run without isolation (bubblewrap missing or unusable)."""
