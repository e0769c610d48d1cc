"""The Model Context Protocol, on the official SDK.

`MCPClient` turns any MCP server's tools into a `Toolbox` (`combine` joins several
with local tools); `serve` and `ToolServer` offer a `Toolbox` to MCP clients. Either
way every call goes through the dispatcher: validated, timed out, recorded.
"""

from ._client import MCPClient, combine
from ._client_errors import MCPCallError, MCPConnectionError, MCPError, MCPStartError
from ._content import Audio, Image, Resource
from ._server import MCPRequest, ToolServer, current_request, serve

__all__ = [
    "Audio",
    "Image",
    "MCPCallError",
    "MCPClient",
    "MCPConnectionError",
    "MCPError",
    "MCPRequest",
    "MCPStartError",
    "Resource",
    "ToolServer",
    "combine",
    "current_request",
    "serve",
]
