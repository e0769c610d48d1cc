"""The Model Context Protocol: MCP servers' tools as a `Toolbox`, on the official SDK."""

from ._client import MCPClient, combine
from ._client_errors import MCPCallError, MCPConnectionError, MCPError, MCPStartError

__all__ = [
    "MCPCallError",
    "MCPClient",
    "MCPConnectionError",
    "MCPError",
    "MCPStartError",
    "combine",
]
