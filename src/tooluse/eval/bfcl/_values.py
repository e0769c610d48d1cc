"""Java and JavaScript source text for ground-truth values (what the oracle writes).

BFCL's Java and JavaScript functions take every argument as source text; the
ground truth holds the values that text must convert to (see `_java_js`). These
renderings are the inverse of that conversion for the shapes the data uses.
"""

from __future__ import annotations

from typing import Any

__all__ = ["java_source", "js_source"]

_JAVA_ARRAY_ELEMENT = {
    "String": "String",
    "any": "Object",
    "char": "char",
    "integer": "int",
    "long": "long",
    "boolean": "boolean",
}


def java_source(value: Any, java_type: str, item_type: str | None = None) -> str:
    """Java source whose conversion for `java_type` gives `value`."""
    if isinstance(value, str):
        # String arguments are handed over unquoted; identifiers are text too.
        return value
    if java_type == "Array" and isinstance(value, list):
        element = _JAVA_ARRAY_ELEMENT.get(item_type or "any", "Object")
        # String elements of an array keep their quotes when read back, so the
        # element that reads as the bare text is written bare.
        items = ", ".join(
            v if isinstance(v, str) else java_source(v, item_type or "any") for v in value
        )
        return f"new {element}[]{{{items}}}"
    if java_type == "ArrayList" and isinstance(value, list):
        if not value:
            return "new ArrayList<>()"
        items = ", ".join(_java_list_element(v, item_type) for v in value)
        return f"new ArrayList<>(Arrays.asList({items}))"
    if java_type == "HashMap" and isinstance(value, dict):
        if not value:
            return "new HashMap<>()"
        puts = " ".join(f'put("{k}", {_literal(v)});' for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    if java_type == "long" and type(value) is int:
        return f"{value}L"
    if java_type == "float" and type(value) in (int, float):
        return f"{value}f"
    return _literal(value)


def _java_list_element(value: Any, item_type: str | None) -> str:
    if isinstance(value, str):
        return f'"{value}"' if item_type in ("String", "char") else value
    return java_source(value, item_type or "any")


def _literal(value: Any) -> str:
    """A scalar as Java and JavaScript both write it (anything else as Python writes it)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if value is None:
        return "null"
    return repr(value)


def js_source(value: Any, js_type: str, item_type: str | None = None) -> str:
    """JavaScript source whose conversion for `js_type` gives `value`."""
    if isinstance(value, str):
        return value
    if js_type == "Bigint" and type(value) is int:
        return f"{value}n"
    return _js_literal(value)


def _js_literal(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_js_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_js_literal(v)}" for k, v in value.items()) + "}"
    return _literal(value)
