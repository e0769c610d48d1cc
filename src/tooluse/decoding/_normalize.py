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
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")


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
    - keywords the grammar cannot enforce (``not``, ``uniqueItems``,
      ``if``/``then``, unknown formats, non-JSON type names …) are removed and
      listed in `NormalizedSchema.unenforced`.
    """
    walker = _Walker(max_string_length)
    out = walker.walk(schema, "$")
    key = json.dumps(out, separators=(",", ":"), ensure_ascii=False)
    return NormalizedSchema(out, key, tuple(walker.unenforced), tuple(walker.changes))


class _Walker:
    def __init__(self, max_string_length: int | None) -> None:
        self.max_string_length = max_string_length
        self.unenforced: list[str] = []
        self.changes: list[str] = []

    def walk(self, node: Any, path: str) -> Any:
        if isinstance(node, bool):
            return node
        if not isinstance(node, Mapping):
            self.unenforced.append(f"{path}: not a schema ({type(node).__name__})")
            return True
        out: dict[str, Any] = {}
        for keyword, value in node.items():
            if keyword in ANNOTATIONS:
                continue
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
