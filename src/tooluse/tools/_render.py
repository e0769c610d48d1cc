"""Renderings of tools for models: provider schemas and the Python stub module."""

from __future__ import annotations

import copy
import keyword
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._schema import JsonSchema, inline_refs
from ._tool import Tool, python_identifier

__all__ = [
    "StubSignature",
    "lean_schema",
    "render_stub_module",
    "strict_schema",
    "stub_signatures",
    "to_anthropic",
    "to_openai",
]


def _is_null(schema: Any) -> bool:
    return isinstance(schema, Mapping) and schema.get("type") == "null" and len(schema) == 1


def lean_schema(parameters: JsonSchema) -> JsonSchema:
    """The parameters as sent to a model: references inlined, noise removed.

    An optional parameter typed ``X | None`` with default ``None`` is shown as
    plain ``X``: leaving it out already means "none".
    """
    schema = inline_refs(copy.deepcopy(parameters))
    required = set(schema.get("required", ()))
    for name, prop in schema.get("properties", {}).items():
        if name in required or not isinstance(prop, dict):
            continue
        if "default" in prop and prop["default"] is None:
            del prop["default"]
            variants = prop.get("anyOf")
            if isinstance(variants, list):
                kept = [v for v in variants if not _is_null(v)]
                if len(kept) == 1 and len(kept) < len(variants):
                    del prop["anyOf"]
                    prop.update({k: v for k, v in kept[0].items() if k not in prop})
    if not schema.get("required"):
        schema.pop("required", None)
    return schema


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    if "anyOf" in prop:
        if not any(_is_null(v) for v in prop["anyOf"]):
            prop["anyOf"] = [*prop["anyOf"], {"type": "null"}]
        return prop
    kind = prop.get("type")
    if isinstance(kind, str) and kind != "null":
        prop["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        prop["type"] = [*kind, "null"]
    if "enum" in prop and None not in prop["enum"]:
        prop["enum"] = [*prop["enum"], None]
    return prop


def strict_schema(parameters: JsonSchema) -> JsonSchema:
    """OpenAI strict mode: every property required, no extra keys, optional ones nullable.

    Defaults are not supported there, so they move into the description; the
    dispatcher reads ``null`` for an optional parameter as "use the default".
    """

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        node = {k: walk(v) for k, v in node.items()}
        if "default" in node:
            default = node.pop("default")
            if default is not None:
                note = f"default {default!r}"
                node["description"] = (
                    f"{node['description']} ({note})"
                    if node.get("description")
                    else note.capitalize()
                )
        if node.get("type") == "object" or "properties" in node:
            props: dict[str, Any] = node.get("properties", {})
            optional = [k for k in props if k not in node.get("required", ())]
            for key in optional:
                props[key] = _nullable(props[key])
            node["properties"] = props
            node["required"] = list(props)
            node["additionalProperties"] = False
        return node

    result: JsonSchema = walk(inline_refs(copy.deepcopy(parameters)))
    return result


def to_openai(tool: Tool, *, strict: bool = False) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    if strict:
        function["parameters"] = strict_schema(tool.parameters)
        function["strict"] = True
    else:
        function["parameters"] = lean_schema(tool.parameters)
    return {"type": "function", "function": function}


def to_anthropic(tool: Tool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["input_schema"] = lean_schema(tool.parameters)
    return out


# --- the stub module ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StubSignature:
    """How a tool appears in the stub module: its Python name and parameters.

    `params` pairs each Python parameter name with the schema's name for it
    (they differ for names such as ``from`` or ``user-id``), in signature order.
    The first `positional` of them may be passed by position; the rest are
    keyword-only (a required parameter after an optional one). The stub is
    written from this, and a script's tool proxy binds by it.
    """

    tool: str
    function: str
    params: tuple[tuple[str, str], ...]
    positional: int


def stub_signatures(tools: Sequence[Tool]) -> list[StubSignature]:
    out = []
    for t in tools:
        props = t.parameters.get("properties", {})
        order = _ordered(t, props)
        out.append(
            StubSignature(
                tool=t.name,
                function=python_identifier(t.name),
                params=tuple((python_identifier(p), p) for p in order),
                positional=_positional(order, set(t.required)),
            )
        )
    return out


def _positional(order: Sequence[str], required: set[str]) -> int:
    seen_optional = False
    for index, name in enumerate(order):
        if name not in required:
            seen_optional = True
        elif seen_optional:
            return index
    return len(order)


def _ordered(t: Tool, props: Mapping[str, Any]) -> list[str]:
    order = [p for p in t.positional if p in props]
    return order + [p for p in props if p not in order]


def _camel(text: str) -> str:
    parts = [p for p in python_identifier(text).split("_") if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) or "Item"


def _doc_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


class _StubWriter:
    def __init__(self) -> None:
        self.classes: list[str] = []
        self.class_names: set[str] = set()
        self.building: set[str] = set()
        self.defs: Mapping[str, Any] = {}
        self.typing: set[str] = set()

    def annotation(self, schema: Any, hint: str) -> str:
        if not isinstance(schema, Mapping) or not schema:
            self.typing.add("Any")
            return "Any"
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            target = self.defs.get(name)
            if target is None:
                self.typing.add("Any")
                return "Any"
            return self.object_class(target, _camel(name))
        if "enum" in schema:
            self.typing.add("Literal")
            values = ", ".join(repr(v) for v in schema["enum"])
            return f"Literal[{values}]"
        if "const" in schema:
            self.typing.add("Literal")
            return f"Literal[{schema['const']!r}]"
        for key in ("anyOf", "oneOf"):
            if key in schema:
                parts = [self.annotation(v, hint) for v in schema[key]]
                return " | ".join(dict.fromkeys(parts))
        kind = schema.get("type")
        if isinstance(kind, list):
            parts = [self.annotation({**schema, "type": k}, hint) for k in kind]
            return " | ".join(dict.fromkeys(parts))
        simple = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
        if kind in simple:
            return simple[kind]
        if kind == "null":
            return "None"
        if kind == "array":
            if "prefixItems" in schema:
                items = ", ".join(self.annotation(v, hint) for v in schema["prefixItems"])
                return f"tuple[{items}]"
            return f"list[{self.annotation(schema.get('items'), hint + 'Item')}]"
        if kind == "object" or "properties" in schema:
            if schema.get("properties"):
                return self.object_class(schema, hint)
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping) and extra:
                return f"dict[str, {self.annotation(extra, hint + 'Value')}]"
            self.typing.add("Any")
            return "dict[str, Any]"
        self.typing.add("Any")
        return "Any"

    def object_class(self, schema: Mapping[str, Any], name: str) -> str:
        # Classes are written above the functions, so only a class that refers
        # to itself (still being built) needs a quoted forward reference.
        if name in self.building:
            return f'"{name}"'
        if name in self.class_names:
            return name
        self.class_names.add(name)
        self.building.add(name)
        self.typing.add("TypedDict")
        props: Mapping[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", ()))
        fields: list[tuple[str, str, str]] = []
        for key, prop in props.items():
            annotation = self.annotation(prop, name + _camel(key))
            if key not in required:
                self.typing.add("NotRequired")
                annotation = f"NotRequired[{annotation}]"
            description = prop.get("description", "") if isinstance(prop, Mapping) else ""
            fields.append((key, annotation, description))
        idents = all(k.isidentifier() and not keyword.iskeyword(k) for k, _, _ in fields)
        lines: list[str] = []
        doc = schema.get("description")
        if idents:
            lines.append(f"class {name}(TypedDict):")
            if doc:
                lines.append(f'    """{_doc_text(" ".join(str(doc).split()))}"""')
            for key, annotation, description in fields:
                comment = f"  # {' '.join(description.split())}" if description else ""
                lines.append(f"    {key}: {annotation}{comment}")
            if not fields:
                lines.append("    pass")
        else:
            body = ", ".join(f"{k!r}: {a}" for k, a, _ in fields)
            lines.append(f"{name} = TypedDict({name!r}, {{{body}}})")
        self.classes.append("\n".join(lines))
        self.building.discard(name)
        return name


_CONSTRAINTS = (
    ("minimum", ">= {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "<= {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
    ("pattern", "matches {!r}"),
    ("format", "format: {}"),
)


def _constraints(schema: Any) -> str:
    """Constraints a Python annotation cannot carry, in words for the docstring."""
    if not isinstance(schema, Mapping):
        return ""
    if "anyOf" in schema:
        return ", ".join(filter(None, (_constraints(v) for v in schema["anyOf"])))
    return ", ".join(text.format(schema[key]) for key, text in _CONSTRAINTS if key in schema)


def _default_literal(value: Any) -> str:
    return repr(value)


def render_stub_module(tools: Sequence[Tool], *, header: str | None = None) -> str:
    """Python source declaring each tool as an annotated function with a docstring.

    The module is valid Python: annotations are real types (nested objects
    become TypedDicts), defaults are the schema's, and parameters the schema
    requires after optional ones become keyword-only.
    """
    writer = _StubWriter()
    functions: list[str] = []
    for t, signature in zip(tools, stub_signatures(tools), strict=True):
        writer.defs = t.parameters.get("$defs", {})
        props: Mapping[str, Any] = t.parameters.get("properties", {})
        required = set(t.required)
        base = _camel(t.name)
        params: list[str] = []
        doc_args: list[str] = []
        for index, (py_name, key) in enumerate(signature.params):
            prop = props[key]
            annotation = writer.annotation(prop, base + _camel(key))
            if index == signature.positional:
                params.append("*")
            if key in required:
                params.append(f"{py_name}: {annotation}")
            else:
                default = prop.get("default") if isinstance(prop, Mapping) else None
                if default is None and "None" not in annotation.split(" | "):
                    annotation = f"{annotation} | None"
                params.append(f"{py_name}: {annotation} = {_default_literal(default)}")
            description = prop.get("description", "") if isinstance(prop, Mapping) else ""
            hints = _constraints(prop)
            if hints:
                description = f"{description} ({hints})" if description else hints
            if description:
                doc_args.append(f"        {py_name}: {' '.join(str(description).split())}")
        if t.returns is not None:
            writer.defs = t.returns.get("$defs", {})
            returns = writer.annotation(t.returns, base + "Result")
        else:
            writer.typing.add("Any")
            returns = "Any"
        doc_lines: list[str] = []
        if t.description:
            doc_lines.append(t.description.strip())
        if doc_args:
            doc_lines.append("\n    Args:\n" + "\n".join(doc_args))
        return_doc = t.returns.get("description") if t.returns else None
        if return_doc:
            doc_lines.append(f"\n    Returns:\n        {' '.join(str(return_doc).split())}")
        doc = "\n".join(doc_lines).replace("\n\n\n", "\n\n")
        source = f"def {signature.function}({', '.join(params)}) -> {returns}:\n"
        if doc:
            indented = "\n".join(
                ("    " + line if line and not line.startswith("    ") else line)
                for line in _doc_text(doc).split("\n")
            )
            body = indented.strip()
            closing = '"""' if "\n" not in body else '\n    """'
            source += f'    """{body}{closing}'
        else:
            source += "    ..."
        functions.append(source)
    imports = ""
    if writer.typing:
        imports = f"from typing import {', '.join(sorted(writer.typing))}\n"
    parts = [header.strip() + "\n"] if header else []
    if imports:
        parts.append(imports)
    parts.extend(writer.classes)
    parts.extend(functions)
    return "\n\n".join(p.rstrip("\n") for p in parts) + "\n"
