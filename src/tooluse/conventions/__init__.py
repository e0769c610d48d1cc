"""Calling conventions: how tools are shown to a model and how replies are read."""

from ._base import Answer, Calls, Convention, Interpretation, Prepared, Retry
from ._json import JsonConvention

__all__ = [
    "Answer",
    "Calls",
    "Convention",
    "Interpretation",
    "JsonConvention",
    "Prepared",
    "Retry",
    "get_convention",
]


def get_convention(name: str | Convention) -> Convention:
    """The convention called `name` (``json``), or `name` itself if it is one."""
    if isinstance(name, Convention):
        return name
    conventions: dict[str, type[Convention]] = {"json": JsonConvention}
    try:
        return conventions[name]()
    except KeyError:
        from .._exceptions import UsageError

        raise UsageError(
            f"unknown convention {name!r}; choose one of: {', '.join(conventions)}"
        ) from None
