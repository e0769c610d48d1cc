"""Tool-design checks: a toolbox read against four principles.

Reliability, documentation, atomicity and parseable outputs (the principles of
tool design that bind harder under programmatic calling, where a script, not a
model, reads the result). `lint` reports what a toolbox does against them;
``tooluse tools lint MODULE:ATTR`` prints the same, one finding per line.
"""

from ._checks import DEFAULT_MAX_SCHEMA_TOKENS, Finding, Principle, lint

__all__ = ["DEFAULT_MAX_SCHEMA_TOKENS", "Finding", "Principle", "lint"]
