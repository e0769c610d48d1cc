"""Context management: the durable context store.

`ContextStore` keeps material moved out of an agent's window and finds it again
by full-text search. The buffer simulation and the runtime experiment that
measure eviction policies are evaluation: `tooluse.eval.sim`.
"""

from __future__ import annotations

from tooluse.context._store import (
    ContextStore,
    Hit,
    ItemIdConflictError,
    NewItem,
    Page,
    StoredItem,
    Synchronous,
    fts_query,
)

__all__ = [
    "ContextStore",
    "Hit",
    "ItemIdConflictError",
    "NewItem",
    "Page",
    "StoredItem",
    "Synchronous",
    "fts_query",
]
