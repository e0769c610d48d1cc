"""Calling conventions: how tools are shown to a model and how replies are read."""

from ._base import Answer, Calls, Convention, Interpretation, Prepared, Retry, Script
from ._code import CodeConvention, extract_script
from ._json import JsonConvention

__all__ = [
    "Answer",
    "Calls",
    "CodeConvention",
    "Convention",
    "Interpretation",
    "JsonConvention",
    "Prepared",
    "Retry",
    "Script",
    "extract_script",
    "get_convention",
]


def get_convention(name: str | Convention) -> Convention:
    """The convention called `name` (``json``), or `name` itself if it is one."""
    if isinstance(name, Convention):
        return name
    conventions: dict[str, type[Convention]] = {"json": JsonConvention, "code": CodeConvention}
    try:
        return conventions[name]()
    except KeyError:
        from .._exceptions import UsageError

        raise UsageError(
            f"unknown convention {name!r}; choose one of: {', '.join(conventions)}"
        ) from None
