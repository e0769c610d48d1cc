"""Typed Python functions → JSON Schema, and the small schema transforms the
renderers share.

pydantic generates the schema from the signature; this module then removes
what carries no meaning for a model (titles, empty descriptions) because every
token of a schema is paid on every request.
"""

from __future__ import annotations

import functools
import inspect
import re
import types
import typing
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, get_type_hints

import pydantic
from pydantic.fields import FieldInfo

from .._exceptions import ToolDefinitionError
from ._context import is_run_context
from ._docstrings import ParsedDocstring, parse_docstring

__all__ = [
    "FunctionSchema",
    "clean_schema",
    "described_function",
    "function_schema",
    "inline_refs",
]

JsonSchema = dict[str, Any]


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    description: str
    parameters: JsonSchema
    returns: JsonSchema | None
    arguments_adapter: pydantic.TypeAdapter[Any]
    positional: tuple[str, ...]
    # Set when every parameter is a plain scalar (see `_scalar`): its Python type by name.
    scalars: dict[str, type] | None = None
    # The parameter that takes the run's `RunContext`, never shown to a model.
    context: str | None = None


_SCALARS = (str, int, float, bool)


def _scalar(annotation: Any, default: Any) -> type | None:
    """The type of a parameter that needs no conversion once its JSON is schema-valid.

    ``str``, ``int``, ``float`` and ``bool``, optionally ``| None``, with a plain default:
    for these, what pydantic does to a valid JSON value is at most int ↔ float.
    """
    if isinstance(default, FieldInfo):
        return None
    if annotation in _SCALARS:
        return typing.cast(type, annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1 and members[0] in _SCALARS:
            return typing.cast(type, members[0])
    return None


def _first_line_ok(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))


def described_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The function whose annotations and docstring describe `fn` (a partial's own)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn


def _unresolved(fn: Callable[..., Any], missing: str) -> str:
    """Where the name `missing` is used in the annotations of `fn`, in words."""
    if missing:
        used = re.compile(rf"\b{re.escape(missing)}\b")
        # Postponed annotations are strings: the first that mentions the name is the one.
        for key, raw in getattr(fn, "__annotations__", {}).items():
            if isinstance(raw, str) and used.search(raw):
                if key == "return":
                    return f" in the return annotation {raw!r}"
                return f" in the annotation {raw!r} of parameter '{key}'"
    return ""


def _type_hints(fn: Callable[..., Any], localns: Mapping[str, Any] | None) -> dict[str, Any]:
    """The annotations of `fn`, resolved in its module's globals and then `localns`."""
    try:
        return get_type_hints(fn, localns=dict(localns or {}), include_extras=True)
    except NameError as exc:
        missing = exc.name or ""
        raise ToolDefinitionError(
            f"{_first_line_ok(fn)}: cannot resolve {missing!r}{_unresolved(fn, missing)}; "
            f"annotations are looked up in module {getattr(fn, '__module__', '?')!r}. "
            "Define the type at module level, or pass localns=locals() to @tool in the "
            "function that defines it"
        ) from exc
    except Exception as exc:  # an annotation that is not a type, say
        raise ToolDefinitionError(
            f"cannot resolve the type hints of {_first_line_ok(fn)}: {exc}"
        ) from exc


def function_schema(
    fn: Callable[..., Any],
    doc: ParsedDocstring | None = None,
    *,
    localns: Mapping[str, Any] | None = None,
) -> FunctionSchema:
    """Build the parameter schema, the return schema and an argument validator.

    For a `functools.partial`, the arguments it binds are not shown to the model.
    """
    described = described_function(fn)
    doc = doc or parse_docstring(inspect.getdoc(described))
    hints = _type_hints(described, localns)
    signature = inspect.signature(fn)
    bound = fn.keywords if isinstance(fn, functools.partial) else {}
    fields: dict[str, Any] = {}
    positional: list[str] = []
    scalars: dict[str, type] | None = {}
    context: str | None = None
    for name, param in signature.parameters.items():
        if name in bound:
            continue
        if name in hints and is_run_context(hints[name]):
            if context is not None:
                raise ToolDefinitionError(
                    f"{_first_line_ok(described)}: parameters '{context}' and '{name}' both "
                    "take the RunContext; a tool takes it once"
                )
            context = name
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"{_first_line_ok(described)}: *{name} cannot be described to a model; "
                "use named parameters"
            )
        if name not in hints:
            raise ToolDefinitionError(
                f"{_first_line_ok(described)}: parameter '{name}' has no type annotation; "
                "the model needs its type"
            )
        annotation = hints[name]
        description = doc.params.get(name)
        default = param.default
        kind = _scalar(annotation, default)
        if kind is None:
            scalars = None
        elif scalars is not None:
            scalars[name] = kind
        if isinstance(default, FieldInfo):
            info = default
            if description and not info.description:
                info.description = description
            fields[name] = (annotation, info)
        else:
            fields[name] = (
                annotation,
                pydantic.Field(
                    default=... if default is inspect.Parameter.empty else default,
                    description=description,
                ),
            )
        if param.kind is not inspect.Parameter.KEYWORD_ONLY:
            positional.append(name)
    try:
        model = pydantic.create_model(
            f"{getattr(described, '__name__', 'tool')}_arguments",
            __config__=pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
        parameters = clean_schema(model.model_json_schema())
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as exc:
        raise ToolDefinitionError(
            f"{_first_line_ok(described)}: a parameter type cannot be expressed as "
            f"JSON Schema: {exc}"
        ) from exc
    parameters.pop("additionalProperties", None)
    returns: JsonSchema | None = None
    return_hint = hints.get("return", inspect.Signature.empty)
    if return_hint is not inspect.Signature.empty and return_hint is not None:
        try:
            returns = clean_schema(pydantic.TypeAdapter(return_hint).json_schema())
        except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError) as exc:
            # An opaque return type still makes a usable tool; say what is lost.
            warnings.warn(
                f"{_first_line_ok(described)}: the return type cannot be described as JSON Schema "
                f"and is shown as Any: {exc}",
                stacklevel=3,
            )
            returns = None
        if returns is not None and doc.returns and "description" not in returns:
            returns["description"] = doc.returns
    return FunctionSchema(
        description=doc.description,
        parameters=parameters,
        returns=returns,
        arguments_adapter=pydantic.TypeAdapter(model),
        positional=tuple(positional),
        scalars=scalars,
        context=context,
    )


_META_KEYS = {"title", "examples"}


def clean_schema(schema: JsonSchema) -> JsonSchema:
    """Drop keys that carry no meaning for a model, recursively.

    Property *names* are kept even when a property is called "title".
    """

    def walk(node: Any, in_properties: bool = False) -> Any:
        if isinstance(node, Mapping):
            out: dict[str, Any] = {}
            for key, value in node.items():
                if not in_properties and key in _META_KEYS and not isinstance(value, Mapping):
                    continue
                if not in_properties and key == "description" and not value:
                    continue
                out[key] = walk(value, in_properties=key in ("properties", "$defs"))
            return out
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    result: JsonSchema = walk(schema)
    return result


def inline_refs(schema: JsonSchema) -> JsonSchema:
    """Replace local ``$ref``s by the definitions they point to.

    Recursive definitions cannot be inlined; the schema then keeps its
    ``$defs`` and the references into them.
    """
    defs: Mapping[str, Any] = schema.get("$defs", {})
    if not defs:
        return schema
    recursive = False

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        nonlocal recursive
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.removeprefix("#/$defs/")
                if name in stack or name not in defs:
                    recursive = True
                    return dict(node)
                target = walk(defs[name], (*stack, name))
                extra = {k: walk(v, stack) for k, v in node.items() if k != "$ref"}
                return {**target, **extra}
            return {k: walk(v, stack) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(item, stack) for item in node]
        return node

    inlined: JsonSchema = walk(schema, ())
    if recursive:
        return schema
    return inlined
