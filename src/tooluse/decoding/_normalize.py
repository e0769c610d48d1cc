"""Tool schemas made fit for a grammar: closed objects, bounded strings, no surprises.

A schema-faithful decoder does exactly what the schema allows, and a small
model takes every freedom it is given: an object without
``additionalProperties: false`` invites invented keys until the token limit, an
unbounded string invites a string that never closes. `normalize_schema` closes
those doors, drops annotations the grammar does not need (descriptions stay in
the prompt), and reports every keyword the grammar engine cannot enforce
instead of dropping it silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["NormalizedSchema", "normalize_schema"]

#: Keywords the grammar enforces (llguidance's JSON Schema support).
ENFORCED = frozenset(
    {
        "type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions",
        "properties", "required", "additionalProperties", "patternProperties",
        "minProperties", "maxProperties",
        "items", "prefixItems", "minItems", "maxItems",
        "minLength", "maxLength", "pattern", "format",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    }
)  # fmt: skip
#: Keywords that describe rather than constrain; the prompt carries them.
ANNOTATIONS = frozenset(
    {
        "title", "description", "default", "examples", "example", "$comment", "$schema", "$id",
        "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
    }
)  # fmt: skip
#: String formats the grammar can enforce.
FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid", "uri"}
)
JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties")
_DEFINITIONS = ("$defs", "definitions")


def _resolve(root: Any, ref: Any) -> Any:
    """What a local reference (``#``, ``#/$defs/Name``) points to in `root`, else None."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    node = root
    for raw in ref[1:].split("/")[1:] if ref != "#" else []:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node if isinstance(node, Mapping | bool) else None


@dataclass(frozen=True, slots=True)
class NormalizedSchema:
    """A schema ready to compile, and what normalizing it changed or could not keep.

    `key` is the schema's canonical JSON: equal keys compile to equal grammars.
    Property order is kept, since a grammar decodes properties in that order.
    `unenforced` lists keywords the grammar cannot enforce, each as
    ``"path: keyword"``; the dispatcher still validates them after decoding.
    """

    schema: dict[str, Any]
    key: str
    unenforced: tuple[str, ...]
    changes: tuple[str, ...]


def normalize_schema(
    schema: Mapping[str, Any], *, max_string_length: int | None = 256
) -> NormalizedSchema:
    """Close objects, bound strings and strip annotations from a JSON Schema.

    - objects that declare ``properties`` and say nothing about extra keys get
      ``additionalProperties: false``;
    - strings with no length, pattern, format, enum or const get
      ``maxLength: max_string_length`` (pass None to leave them unbounded);
    - annotations (``description``, ``title``, ``default`` …) are removed;
    - local references (``{"$ref": "#/$defs/Permission"}``, as pydantic and
      MCP servers write enums and nested models) are replaced by what they
      point to, so the schema stands alone when several tools' schemas are
      joined into one grammar; a reference that points nowhere, outside the
      schema or back into itself (a recursive model) is left unconstrained
      and listed in `NormalizedSchema.unenforced`;
    - keywords the grammar cannot enforce (``not``, ``uniqueItems``,
      ``if``/``then``, unknown formats, non-JSON type names …) are removed and
      listed in `NormalizedSchema.unenforced`.
    """
    walker = _Walker(max_string_length, schema)
    out = walker.walk(schema, "$")
    key = json.dumps(out, separators=(",", ":"), ensure_ascii=False)
    return NormalizedSchema(out, key, tuple(walker.unenforced), tuple(walker.changes))


class _Walker:
    def __init__(self, max_string_length: int | None, root: Any) -> None:
        self.max_string_length = max_string_length
        self.root = root
        self.unenforced: list[str] = []
        self.changes: list[str] = []
        self._expanding: list[str] = []  # the references being inlined, outermost first

    def walk(self, node: Any, path: str) -> Any:
        if isinstance(node, bool):
            return node
        if not isinstance(node, Mapping):
            self.unenforced.append(f"{path}: not a schema ({type(node).__name__})")
            return True
        if "$ref" in node:
            return self._reference(node, path)
        out: dict[str, Any] = {}
        for keyword, value in node.items():
            if keyword in ANNOTATIONS or keyword in _DEFINITIONS:
                continue  # definitions are inlined where they are referred to
            if keyword not in ENFORCED:
                self.unenforced.append(f"{path}: {keyword}")
                continue
            out[keyword] = self._keyword(keyword, value, path)
        self._type(out, path)
        self._format(out, path)
        self._close(out, path)
        self._bound(out, path)
        # Keywords in a fixed order, so equal schemas give equal grammar text;
        # the order of properties themselves is kept (it is the order decoded).
        return dict(sorted(out.items()))

    def _keyword(self, keyword: str, value: Any, path: str) -> Any:
        if keyword in _SUBSCHEMA_LISTS and isinstance(value, list):
            return [self.walk(item, f"{path}.{keyword}[{i}]") for i, item in enumerate(value)]
        if keyword in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            return {name: self.walk(sub, f"{path}.{keyword}.{name}") for name, sub in value.items()}
        if keyword in ("items", "additionalProperties") and not isinstance(value, bool):
            return self.walk(value, f"{path}.{keyword}")
        return value

    def _reference(self, node: Mapping[str, Any], path: str) -> Any:
        """`node`'s reference inlined, with the keywords beside it as a second constraint."""
        ref = node["$ref"]
        rest = {k: v for k, v in node.items() if k != "$ref"}
        target = _resolve(self.root, ref)
        if target is None or ref in self._expanding:
            why = "points back into itself" if target is not None else "cannot be resolved"
            self.unenforced.append(f"{path}: $ref {ref!r} ({why})")
            return self.walk(rest, path)
        self._expanding.append(ref)
        try:
            inlined = self.walk(target, path)
        finally:
            self._expanding.pop()
        if all(k in ANNOTATIONS for k in rest):
            return inlined
        return {"allOf": [inlined, self.walk(rest, path)]}

    def _type(self, out: dict[str, Any], path: str) -> None:
        declared = out.get("type")
        if declared is None:
            return
        names = declared if isinstance(declared, list) else [declared]
        kept = [name for name in names if name in JSON_TYPES]
        for name in names:
            if name not in JSON_TYPES:
                self.unenforced.append(f"{path}: type {name!r} (not a JSON Schema type)")
        if not kept:
            del out["type"]
        elif kept != names:
            out["type"] = kept if len(kept) > 1 else kept[0]

    def _format(self, out: dict[str, Any], path: str) -> None:
        fmt = out.get("format")
        if fmt is not None and fmt not in FORMATS:
            self.unenforced.append(f"{path}: format {fmt!r}")
            del out["format"]

    def _close(self, out: dict[str, Any], path: str) -> None:
        open_keys = ("additionalProperties", "patternProperties")
        if "properties" in out and not any(k in out for k in open_keys):
            out["additionalProperties"] = False
            self.changes.append(f"{path}: additionalProperties false")

    def _bound(self, out: dict[str, Any], path: str) -> None:
        if self.max_string_length is None or out.get("type") != "string":
            return
        if any(k in out for k in ("maxLength", "pattern", "format", "enum", "const")):
            return
        out["maxLength"] = max(self.max_string_length, int(out.get("minLength", 0)))
        self.changes.append(f"{path}: maxLength {out['maxLength']}")
