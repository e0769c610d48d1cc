"""The ``tooluse`` command."""

from ._app import app, main

__all__ = ["app", "main"]
