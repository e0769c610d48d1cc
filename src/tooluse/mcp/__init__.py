"""The Model Context Protocol: a `Toolbox` served to MCP clients."""

from ._content import Audio, Image, Resource
from ._server import MCPRequest, ToolServer, current_request, serve

__all__ = [
    "Audio",
    "Image",
    "MCPRequest",
    "Resource",
    "ToolServer",
    "current_request",
    "serve",
]
