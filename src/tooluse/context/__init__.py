"""Context management: the durable context store and the buffer simulation.

`ContextStore` keeps material moved out of an agent's window and finds it again
by full-text search. `tooluse.context.sim` (``from tooluse.context import sim``)
models how eviction policies lose needed context over a long episode; it needs
numpy (and matplotlib for `sim.plot`), so it is loaded only when first used.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from tooluse.context import _sim as sim  # noqa: F401 - the type of the lazy `sim`

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


def __getattr__(name: str) -> ModuleType:
    if name == "sim":
        from tooluse.context import _sim

        return _sim
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
