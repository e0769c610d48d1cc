"""Typed Python functions → JSON Schema, and the small schema transforms the
renderers share.

pydantic generates the schema from the signature; this module then removes
what carries no meaning for a model (titles, empty descriptions) because every
token of a schema is paid on every request.
"""

from __future__ import annotations

import inspect
import sys
import types
import typing
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, get_type_hints

import pydantic
from pydantic.fields import FieldInfo

from .._exceptions import ToolDefinitionError
from ._docstrings import ParsedDocstring, parse_docstring

__all__ = ["FunctionSchema", "clean_schema", "function_schema", "inline_refs"]

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


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return get_type_hints(fn, include_extras=True)
    except NameError:
        pass
    # With postponed annotations, a tool defined inside a function may name
    # classes local to that function. They are visible in the frames of
    # whoever is building the tool right now, so look there.
    localns: dict[str, Any] = {}
    frame = sys._getframe(1)
    depth = 0
    while frame is not None and depth < 12:
        for key, value in frame.f_locals.items():
            localns.setdefault(key, value)
        frame = frame.f_back  # type: ignore[assignment]
        depth += 1
    return get_type_hints(fn, localns=localns, include_extras=True)


def function_schema(fn: Callable[..., Any], doc: ParsedDocstring | None = None) -> FunctionSchema:
    """Build the parameter schema, the return schema and an argument validator."""
    doc = doc or parse_docstring(inspect.getdoc(fn))
    try:
        hints = _type_hints(fn)
    except Exception as exc:  # NameError for unresolved forward references, mostly
        raise ToolDefinitionError(
            f"cannot resolve the type hints of {_first_line_ok(fn)}: {exc}"
        ) from exc
    signature = inspect.signature(fn)
    fields: dict[str, Any] = {}
    positional: list[str] = []
    scalars: dict[str, type] | None = {}
    for name, param in signature.parameters.items():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"{_first_line_ok(fn)}: *{name} cannot be described to a model; "
                "use named parameters"
            )
        if name not in hints:
            raise ToolDefinitionError(
                f"{_first_line_ok(fn)}: parameter '{name}' has no type annotation; "
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
            f"{getattr(fn, '__name__', 'tool')}_arguments",
            __config__=pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
        parameters = clean_schema(model.model_json_schema())
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as exc:
        raise ToolDefinitionError(
            f"{_first_line_ok(fn)}: a parameter type cannot be expressed as JSON Schema: {exc}"
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
                f"{_first_line_ok(fn)}: the return type cannot be described as JSON Schema "
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
