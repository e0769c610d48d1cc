"""Calling conventions: how tools are shown to a model and how replies are read."""

from ._auto import AutoConvention, Profile
from ._base import Answer, Calls, Convention, Interpretation, Plan, Prepared, Retry, Script
from ._code import CodeConvention, extract_script
from ._json import JsonConvention
from ._plan import PlanConvention, PlanError, parse_plan
from ._plan_eval import PlanEvaluationError
from ._text import CallSyntaxError, TextConvention, parse_python_calls

__all__ = [
    "Answer",
    "AutoConvention",
    "CallSyntaxError",
    "Calls",
    "CodeConvention",
    "Convention",
    "Interpretation",
    "JsonConvention",
    "Plan",
    "PlanConvention",
    "PlanError",
    "PlanEvaluationError",
    "Prepared",
    "Profile",
    "Retry",
    "Script",
    "TextConvention",
    "extract_script",
    "get_convention",
    "parse_plan",
    "parse_python_calls",
]


def get_convention(name: str | Convention) -> Convention:
    """The convention called `name` (``json``), or `name` itself if it is one."""
    if isinstance(name, Convention):
        return name
    conventions: dict[str, type[Convention]] = {
        "json": JsonConvention,
        "code": CodeConvention,
        "text": TextConvention,
        "plan": PlanConvention,
        "auto": AutoConvention,
    }
    try:
        return conventions[name]()
    except KeyError:
        from .._exceptions import UsageError

        raise UsageError(
            f"unknown convention {name!r}; choose one of: {', '.join(conventions)}"
        ) from None
