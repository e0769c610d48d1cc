"""Context management: the durable context store and the buffer simulation.

`ContextStore` keeps material moved out of an agent's window and finds it again
by full-text search. `tooluse.context.sim` models how eviction policies lose
needed context over a long episode.
"""

from tooluse.context._store import (
    ContextStore,
    Hit,
    ItemIdConflictError,
    NewItem,
    Page,
    StoredItem,
    fts_query,
)

__all__ = [
    "ContextStore",
    "Hit",
    "ItemIdConflictError",
    "NewItem",
    "Page",
    "StoredItem",
    "fts_query",
]
