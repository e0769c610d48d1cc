"""Lark rules for tool calls written in Python syntax: ``[get_weather(city="Paris")]``.

Small models trained on BFCL-style data write calls this way. Each tool gets
a rule whose keyword arguments are its parameters, and each value is a Python
literal of the parameter's schema (``True``/``None`` where JSON would say
``true``/``null``; strings, numbers and their bounds through llguidance's
JSON rules, since a JSON string or number is also a Python one). Which
arguments are required, and that none repeats, is left to the validator:
spelling every order of the optional ones would blow the grammar up.
"""

from __future__ import annotations

import itertools
import json
import keyword
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["PythonRules", "is_call_name"]

_SEP = '"," " "?'
#: A scalar inside a Python call has no blanks around it.
_TIGHT = {"whitespace_flexible": False}


def _literal(text: str) -> str:
    """`text` as a Lark string literal (JSON's escapes are Lark's)."""
    return json.dumps(text, ensure_ascii=False)


def _python_literal(value: Any) -> str:
    """A JSON value as Python source, quoted for Lark."""
    if value is True:
        return _literal("True")
    if value is False:
        return _literal("False")
    if value is None:
        return _literal("None")
    if isinstance(value, str | int | float):
        return _literal(json.dumps(value, ensure_ascii=False))
    return _literal(repr(value))


def is_call_name(name: str) -> bool:
    """Whether a model can write a call to `name` as it is: ``get_weather``, ``math.sqrt``."""
    return all(p.isidentifier() and not keyword.iskeyword(p) for p in name.split("."))


class PythonRules:
    """Builds the rules; `rules` holds them, `call(name, schema)` names a tool's rule."""

    def __init__(self) -> None:
        self.rules: list[str] = []
        self._ids: Iterator[int] = itertools.count()
        self._any: str | None = None

    def can_call(self, name: str, parameters: Mapping[str, Any]) -> bool:
        """Whether a call to this tool can be written in Python (names are identifiers)."""
        keys = parameters.get("properties", {})
        return is_call_name(name) and all(
            isinstance(k, str) and k.isidentifier() and not keyword.iskeyword(k) for k in keys
        )

    def call(self, name: str, parameters: Mapping[str, Any]) -> str:
        """The rule for one call of tool `name` whose normalized parameters are given."""
        props: Mapping[str, Any] = parameters.get("properties", {})
        kwargs = [f"{_literal(key + '=')} {self.value(sub)}" for key, sub in props.items()]
        rule = self._rule("pycall")
        if kwargs:
            arg = self._define("pyarg", " | ".join(kwargs))
            body = f"{_literal(name + '(')} ({arg} ({_SEP} {arg})*)? {_literal(')')}"
        else:
            body = _literal(name + "()")
        self.rules.append(f"{rule}: {body}")
        return rule

    def value(self, schema: Any) -> str:
        """A rule for a Python literal that `schema` accepts."""
        if schema is True or not isinstance(schema, Mapping):
            return self._anything()
        if "const" in schema:
            return _python_literal(schema["const"])
        if "enum" in schema:
            return "(" + " | ".join(_python_literal(v) for v in schema["enum"]) + ")"
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                return "(" + " | ".join(self.value(s) for s in schema[key]) + ")"
        declared = schema.get("type")
        if isinstance(declared, list):
            rest = {k: v for k, v in schema.items() if k != "type"}
            return "(" + " | ".join(self.value({**rest, "type": t}) for t in declared) + ")"
        if declared in ("string", "integer", "number"):
            scalar = {"x-guidance": _TIGHT, **schema}
            return self._define("pyval", f"%json {json.dumps(scalar, ensure_ascii=False)}")
        if declared == "boolean":
            return '("True" | "False")'
        if declared == "null":
            return '"None"'
        if declared == "array":
            item = self.value(schema.get("items", True))
            return f'"[" ({item} ({_SEP} {item})*)? "]"'
        if declared == "object" and isinstance(schema.get("properties"), Mapping):
            pairs = [
                f"{_literal(json.dumps(k, ensure_ascii=False) + ': ')} {self.value(v)}"
                for k, v in schema["properties"].items()
            ]
            pair = self._define("pypair", " | ".join(pairs)) if pairs else None
            if pair is None:
                return '"{" "}"'
            return f'"{{" ({pair} ({_SEP} {pair})*)? "}}"'
        return self._anything()

    def _anything(self) -> str:
        """Any Python literal of JSON data (for schemas that say little)."""
        if self._any is None:
            self._any = "pyany"
            tight = json.dumps(_TIGHT)
            scalar = self._define(
                "pyscalar", f'%json {{"x-guidance": {tight}, "type": ["string", "number"]}}'
            )
            key = self._define("pykey", f'%json {{"x-guidance": {tight}, "type": "string"}}')
            self.rules.append(
                f'pyany: {scalar} | "True" | "False" | "None"'
                f' | "[" (pyany ({_SEP} pyany)*)? "]"'
                f' | "{{" ({key} ": " pyany ({_SEP} {key} ": " pyany)*)? "}}"'
            )
        return self._any

    def _rule(self, stem: str) -> str:
        return f"{stem}_{next(self._ids)}"

    def _define(self, stem: str, body: str) -> str:
        name = self._rule(stem)
        self.rules.append(f"{name}: {body}")
        return name


def python_calls(rules: PythonRules, tools: Sequence[tuple[str, Mapping[str, Any]]]) -> str | None:
    """The alternative over every tool callable in Python syntax, or None if none is."""
    calls = [rules.call(name, params) for name, params in tools if rules.can_call(name, params)]
    return " | ".join(calls) if calls else None
