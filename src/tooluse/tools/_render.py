"""Renderings of tools for models: provider schemas and the Python stub module."""

from __future__ import annotations

import copy
import json
import keyword
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ._schema import JsonSchema, inline_refs
from ._tool import Tool, ToolExample, python_identifier

__all__ = [
    "Parameter",
    "StubSignature",
    "described_with_examples",
    "example_arguments",
    "example_call",
    "example_lines",
    "inline_annotation",
    "lean_schema",
    "parameter_doc",
    "parameter_list",
    "render_stub_module",
    "strict_schema",
    "stub_signature",
    "stub_signatures",
    "to_anthropic",
    "to_openai",
]


def _is_null(schema: Any) -> bool:
    return isinstance(schema, Mapping) and schema.get("type") == "null" and len(schema) == 1


def lean_schema(parameters: JsonSchema, *, inline: bool = True) -> JsonSchema:
    """The parameters as sent to a model: references inlined, noise removed.

    An optional parameter typed ``X | None`` with default ``None`` is shown as
    plain ``X``: leaving it out already means "none". With ``inline=False``
    the ``$defs`` and their ``$ref`` stay as they are, for readers that resolve
    JSON Schema 2020-12 themselves (MCP clients do); the schema means the same.
    """
    schema = copy.deepcopy(parameters)
    if inline:
        schema = inline_refs(schema)
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


# --- examples ----------------------------------------------------------------------


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def example_arguments(tool: Tool) -> list[dict[str, Any]]:
    """The arguments of each of the tool's examples, as JSON objects."""
    return [dict(example.arguments) for example in tool.examples]


def example_lines(tool: Tool) -> list[str]:
    """One line per example, its arguments and result as JSON: ``Example: {...} -> 92.0``."""
    lines = []
    for example in tool.examples:
        line = f"Example: {_json(dict(example.arguments))}"
        if example.has_result:
            line += f" -> {_json(example.result)}"
        lines.append(line)
    return lines


def described_with_examples(tool: Tool) -> str:
    """The description with the examples below it, for readers that have no place for them."""
    lines = example_lines(tool)
    if not lines:
        return tool.description
    return "\n\n".join(filter(None, [tool.description.strip(), "\n".join(lines)]))


def example_call(tool: Tool, example: ToolExample, function: str) -> str:
    """The example as a Python call of `function`: keyword arguments, values as literals.

    Arguments follow the signature's order and take their Python names.
    """
    names = {key: name for name, key in stub_signature(tool).params}
    order = [key for key in names if key in example.arguments]
    order += [key for key in example.arguments if key not in names]
    arguments = ", ".join(
        f"{names.get(key) or python_identifier(key)}={example.arguments[key]!r}" for key in order
    )
    return f"{function}({arguments})"


def to_openai(tool: Tool, *, strict: bool = False) -> dict[str, Any]:
    """The tool in OpenAI's ``tools`` shape; the examples go in ``parameters.examples``.

    In strict mode the schema keeps to the keywords strict mode documents, so the
    examples go below the description instead.
    """
    function: dict[str, Any] = {"name": tool.name}
    description = described_with_examples(tool) if strict else tool.description
    if description:
        function["description"] = description
    if strict:
        function["parameters"] = strict_schema(tool.parameters)
        function["strict"] = True
    else:
        function["parameters"] = lean_schema(tool.parameters)
        if tool.examples:
            function["parameters"]["examples"] = example_arguments(tool)
    return {"type": "function", "function": function}


def to_anthropic(tool: Tool) -> dict[str, Any]:
    """The tool in Anthropic's ``tools`` shape; the examples go in ``input_examples``."""
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["input_schema"] = lean_schema(tool.parameters)
    if tool.examples:
        out["input_examples"] = example_arguments(tool)
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


# Names the script-side tools module defines itself (`tools.parallel`, `tools.ToolError`).
_MODULE_NAMES = frozenset({"ToolError", "parallel"})


def stub_signature(t: Tool) -> StubSignature:
    function = python_identifier(t.name)
    if function in _MODULE_NAMES:
        function += "_"
    props = t.parameters.get("properties", {})
    order = _ordered(t, props)
    return StubSignature(
        tool=t.name,
        function=function,
        params=tuple((python_identifier(p), p) for p in order),
        positional=_positional(order, set(t.required)),
    )


def stub_signatures(tools: Sequence[Tool]) -> list[StubSignature]:
    return [stub_signature(t) for t in tools]


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


# Names a stub's own definitions must not take: what it imports and the builtins
# its annotations use.
_TAKEN = frozenset(
    {"Any", "Literal", "NotRequired", "TypedDict", "bool", "dict", "float", "int", "list", "str"}
)


class _StubWriter:
    """Annotations for schemas, and the type definitions they need, for one stub module.

    A named type (a ``$defs`` entry) or an object is defined once per distinct
    content: two tools sharing one ``Options`` model share its class, and a
    different ``Options`` of another tool gets a name of its own (the tool's
    name in front, as in ``SortOptions``).
    """

    def __init__(self, taken: Iterable[str] = (), *, inline: bool = False) -> None:
        #: Objects written in place (``{'key': type}``) rather than as TypedDicts.
        self.inline = inline
        self.inlining: set[str] = set()  # objects being written in place, against cycles
        self.definitions: list[str] = []
        self.taken: set[str] = {*_TAKEN, *taken}
        self.named: dict[str, str] = {}  # a definition's identity → its name in the stub
        self.building: dict[str, str] = {}  # the same, for classes being written
        self.expanding: set[str] = set()  # references being followed, against cycles
        self.defs: Mapping[str, Any] = {}
        self.prefix = ""  # the current tool's name in CamelCase
        self.typing: set[str] = set()

    def _identity(self, schema: Any, wanted: str) -> str:
        """The wanted name with the content, including the definitions it refers to."""
        used: dict[str, Any] = {}
        pending = [schema]
        while pending:
            node = pending.pop()
            if isinstance(node, Mapping):
                ref = node.get("$ref")
                if isinstance(ref, str) and ref.startswith("#/$defs/"):
                    name = ref.removeprefix("#/$defs/")
                    if name not in used and name in self.defs:
                        used[name] = self.defs[name]
                        pending.append(self.defs[name])
                pending.extend(node.values())
            elif isinstance(node, list):
                pending.extend(node)
        return json.dumps([wanted, schema, used], sort_keys=True, default=repr)

    def _fresh(self, wanted: str) -> str:
        candidates = [wanted]
        if not wanted.startswith(self.prefix):
            candidates.append(self.prefix + wanted)
        candidates.extend(f"{wanted}{n}" for n in range(2, len(self.taken) + 3))
        name = next(c for c in candidates if c not in self.taken)
        self.taken.add(name)
        return name

    def annotation(self, schema: Any, hint: str) -> str:
        if not isinstance(schema, Mapping) or not schema:
            self.typing.add("Any")
            return "Any"
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return self.reference(ref.removeprefix("#/$defs/"))
        if "enum" in schema:
            return self.literal(schema["enum"])
        if "const" in schema:
            return self.literal([schema["const"]])
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

    def literal(self, values: Iterable[Any]) -> str:
        self.typing.add("Literal")
        return f"Literal[{', '.join(repr(v) for v in values)}]"

    def reference(self, name: str) -> str:
        """A named type: a class for an object, an alias for an enum, else the type inline."""
        target = self.defs.get(name)
        identity = self._identity(target, _camel(name))
        if not isinstance(target, Mapping) or identity in self.expanding:
            self.typing.add("Any")
            return "Any"
        if target.get("type") == "object" or "properties" in target:
            return self.object_class(target, _camel(name))
        if "enum" in target:
            # An Enum parameter: the model sends one of its values.
            if self.inline:
                return self.literal(target["enum"])
            if identity not in self.named:
                alias = self._fresh(_camel(name))
                self.definitions.append(f"{alias} = {self.literal(target['enum'])}")
                self.named[identity] = alias
            return self.named[identity]
        self.expanding.add(identity)
        try:
            return self.annotation(target, _camel(name))
        finally:
            self.expanding.discard(identity)

    def object_class(self, schema: Mapping[str, Any], hint: str) -> str:
        if self.inline:
            return self.inline_object(schema, hint)
        identity = self._identity(schema, hint)
        # Classes are written above the functions, so only a class that refers
        # to itself (still being built) needs a quoted forward reference.
        if identity in self.building:
            return f'"{self.building[identity]}"'
        if identity in self.named:
            return self.named[identity]
        name = self.building[identity] = self._fresh(hint)
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
        self.definitions.append("\n".join(lines))
        del self.building[identity]
        self.named[identity] = name
        return name

    def inline_object(self, schema: Mapping[str, Any], name: str) -> str:
        if name in self.inlining:
            return "Any"
        self.inlining.add(name)
        props: Mapping[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", ()))
        fields = []
        for key, prop in props.items():
            annotation = self.annotation(prop, name + _camel(key))
            if key not in required:
                annotation = f"NotRequired[{annotation}]"
            fields.append(f"{key!r}: {annotation}")
        self.inlining.discard(name)
        return "{" + ", ".join(fields) + "}"


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


def parameter_doc(schema: Any) -> str:
    """A parameter's description on one line, with the constraints its type cannot carry."""
    if not isinstance(schema, Mapping):
        return ""
    text = " ".join(str(schema.get("description", "")).split())
    hints = _constraints(schema)
    return f"{text} ({hints})" if text and hints else text or hints


def inline_annotation(schema: Any, name: str = "") -> str:
    """A Python annotation for a schema, objects written in place: ``{'key': str}``.

    For listings that are not a module (a prompt); a reference is ``Any``.
    It takes a `name` so that it can serve as a `write_parameters` annotator.
    """
    return _StubWriter(inline=True).annotation(schema, name)


@dataclass(frozen=True, slots=True)
class Parameter:
    """One parameter of a tool as a Python signature writes it.

    `name` is the Python name, `key` the schema's; `doc` is its description on
    one line. A required parameter after an optional one is `keyword_only`.
    """

    name: str
    key: str
    annotation: str
    required: bool
    default: Any
    keyword_only: bool
    doc: str

    def __str__(self) -> str:
        if self.required:
            return f"{self.name}: {self.annotation}"
        return f"{self.name}: {self.annotation} = {_default_literal(self.default)}"


def write_parameters(
    t: Tool,
    schema: JsonSchema,
    annotate: Callable[[Any, str], str],
    *,
    none_in_type: bool,
) -> list[Parameter]:
    """The parameters of `t`, as `schema` describes them, in signature order.

    `annotate` writes the annotation of a property's schema; the name it gets
    (the tool's and the key's, in CamelCase) is for classes it may define. With
    `none_in_type`, an optional parameter whose default is None has ``| None``
    in its annotation, as a type checker wants.
    """
    props: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ()))
    out: list[Parameter] = []
    seen_optional = keyword_only = False
    for key in _ordered(t, props):
        prop = props[key]
        annotation = annotate(prop, _camel(t.name) + _camel(key))
        default = None
        if key in required:
            # Python allows no required parameter after an optional one unless
            # it is keyword-only; the signature stays valid Python.
            keyword_only = keyword_only or seen_optional
        else:
            seen_optional = True
            default = prop.get("default") if isinstance(prop, Mapping) else None
            if none_in_type and default is None and "None" not in annotation.split(" | "):
                annotation = f"{annotation} | None"
        out.append(
            Parameter(
                name=python_identifier(key),
                key=key,
                annotation=annotation,
                required=key in required,
                default=default,
                keyword_only=keyword_only,
                doc=parameter_doc(prop),
            )
        )
    return out


def parameter_list(params: Sequence[Parameter]) -> str:
    """The text between a signature's parentheses, with ``*`` before keyword-only ones."""
    parts: list[str] = []
    for index, param in enumerate(params):
        if param.keyword_only and (index == 0 or not params[index - 1].keyword_only):
            parts.append("*")
        parts.append(str(param))
    return ", ".join(parts)


def render_stub_module(
    tools: Sequence[Tool], *, header: str | None = None, module: str | None = None
) -> str:
    """Python source declaring each tool as an annotated function with a docstring.

    The module is valid Python: annotations are real types (nested objects
    become TypedDicts, enums Literals), defaults are the schema's, and
    parameters the schema requires after optional ones become keyword-only.
    A tool's examples are doctest lines in its docstring, calling it as
    ``module.function(...)`` (or ``function(...)`` without a `module`), each
    followed by the repr of its result when the example gives one.
    """
    signatures = stub_signatures(tools)
    writer = _StubWriter(taken=(s.function for s in signatures))
    functions: list[str] = []
    for t, signature in zip(tools, signatures, strict=True):
        writer.defs = t.parameters.get("$defs", {})
        base = writer.prefix = _camel(t.name)
        params = write_parameters(t, t.parameters, writer.annotation, none_in_type=True)
        # The `*` goes where the signature says, the very number the script's proxy
        # binds positional arguments by.
        params = [replace(p, keyword_only=i >= signature.positional) for i, p in enumerate(params)]
        doc_args = [f"        {p.name}: {p.doc}" for p in params if p.doc]
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
        if t.examples:
            called = f"{module}.{signature.function}" if module else signature.function
            shown = ["\n    Examples:"]
            for example in t.examples:
                shown.append(f"        >>> {example_call(t, example, called)}")
                if example.has_result:
                    shown.append(f"        {example.result!r}")
            doc_lines.append("\n".join(shown))
        doc = "\n".join(doc_lines).replace("\n\n\n", "\n\n")
        source = f"def {signature.function}({parameter_list(params)}) -> {returns}:\n"
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
    parts.extend(writer.definitions)
    parts.extend(functions)
    return "\n\n".join(p.rstrip("\n") for p in parts) + "\n"
