"""Context management: the window's budget, the durable store and the buffer simulation.

`ContextPolicy` puts a hard token budget on what an agent's model sees
(``Agent(..., context=ContextPolicy(budget=12_000))``). `ContextStore` keeps
material moved out of the window and finds it again by full-text search.
`tooluse.context.sim` (``from tooluse.context import sim``) models how eviction
policies lose needed context over a long episode; it needs numpy (and
matplotlib for `sim.plot`), so it is loaded only when first used.
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
from tooluse.context._window import ContextPolicy

if TYPE_CHECKING:
    from tooluse.context import _sim as sim  # noqa: F401 - the type of the lazy `sim`

__all__ = [
    "ContextPolicy",
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
