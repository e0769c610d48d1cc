"""Context management: the window's budget and the durable context store.

`ContextPolicy` puts a hard token budget on what an agent's model sees
(``Agent(..., context=ContextPolicy(budget=12_000))``). `ContextStore` keeps
material moved out of the window and finds it again by full-text search. The
buffer simulation and the runtime experiment that measure eviction policies are
evaluation: `tooluse.eval.sim`.
"""

from __future__ import annotations

from . import _store
from ._store import *  # noqa: F403 - the store's names are the package's
from ._window import ContextPolicy

__all__ = ["ContextPolicy"]
__all__ += _store.__all__
