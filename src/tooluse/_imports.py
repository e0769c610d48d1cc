"""Importing what a ``MODULE:NAME`` text names: a toolbox, a policy, a check.

Commands and task files name the user's code this way; one function reads them all,
so each says the same thing when the name is wrong.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

__all__ = ["import_target"]


def import_target(target: str) -> Any:
    """What ``module:attribute`` names, imported from the working directory or the path.

    Raises ValueError saying what is wrong (the caller adds where it was written).
    """
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ValueError(
            f"expected MODULE:NAME, e.g. examples.finance.checks:is_polite; got {target!r}"
        )
    # Commands and task files name modules of the project they are run from.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from None
    except Exception as exc:
        raise ValueError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    value: Any = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise ValueError(f"module {module_name!r} has no attribute {attribute!r}") from None
    return value
