"""Tool search: a large toolbox indexed, and tools loaded into a run as they are found."""

from ._deferred import MAX_TOP_K, SearchMode, SearchRun, ToolSearch, auto_wants_search
from ._index import SearchHit, ToolIndex, tool_fingerprint

__all__ = [
    "MAX_TOP_K",
    "SearchHit",
    "SearchMode",
    "SearchRun",
    "ToolIndex",
    "ToolSearch",
    "auto_wants_search",
    "tool_fingerprint",
]
