"""Errors of the MCP client, in the project's exception tree.

    ToolUseError
    └── MCPError                   an MCP server could not be used (tooluse.mcp)
        ├── MCPStartError          the server did not start, or did not finish the handshake
        ├── MCPConnectionError     the connection was lost: the server exited or stopped answering
        └── MCPCallError           the server answered a call with a protocol error

A tool call that fails raises one of these inside the tool's function, and the
dispatcher records it as the call's error, which the model sees. A server's own
error result (``isError``) is not a failure of the connection: it reaches the
model as `ModelRetry` does, in the server's words.
"""

from __future__ import annotations

from .._exceptions import ToolUseError

__all__ = ["MCPCallError", "MCPConnectionError", "MCPError", "MCPStartError"]


class MCPError(ToolUseError):
    """An MCP server could not be used."""


class MCPStartError(MCPError):
    """The server did not start, or did not finish the handshake in time."""


class MCPConnectionError(MCPError):
    """The connection to the server was lost: it exited, or stopped answering."""


class MCPCallError(MCPError):
    """The server answered a call with a protocol error (an unknown tool, bad params)."""
