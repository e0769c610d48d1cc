"""Checking a call's arguments before anything runs.

`parse_arguments` turns the model's argument text into a JSON object,
applying only repairs whose intent is unambiguous and naming each one.
`ArgumentChecker` validates the object against the tool's schema and words
every problem so the model can fix it in one more round.

A schema's ``$ref``s resolve within the schema itself (and the JSON Schema
meta-schemas, which ship with the validator): a reference to anything else is
never fetched, since a tool's schema may come from a server nobody vetted and
fetching would let it make the host send requests. `unresolved_reference` finds
the first one that does not resolve, so that a tool can be refused before use.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from .._exceptions import InvalidCallError
from ._schema import JsonSchema

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator
    from referencing import Registry, Resource
    from referencing._core import Resolver  # not exported by the package, only typed

__all__ = [
    "ArgumentChecker",
    "ArgumentsError",
    "ParsedArguments",
    "checker_for",
    "parse_arguments",
    "unresolved_reference",
]

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_SNIPPET = 30


def meta_schemas() -> Registry[Any]:
    """The JSON Schema meta-schemas, which ship with jsonschema: all that a schema's
    references may reach outside the schema itself. It fetches nothing."""
    # jsonschema and referencing take longer to import than the rest of the tools
    # package: they are loaded for the first call that is not valid, or the first
    # schema whose references are checked, never for a valid call.
    from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]

    registry: Registry[Any] = REGISTRY
    return registry


# No tool's arguments need more; deeper values would exhaust Python's recursion
# limit somewhere between here and the trace, ending the whole run.
_MAX_DEPTH = 64


class ArgumentsError(InvalidCallError, ValueError):
    """The arguments cannot be used; the message is written for the model."""


@dataclass(frozen=True, slots=True)
class ParsedArguments:
    value: dict[str, Any]
    repairs: tuple[str, ...] = ()


def _without_trailing_commas(text: str) -> str | None:
    """Remove commas that directly precede ``}`` or ``]`` outside strings, or None."""
    out: list[str] = []
    in_string = escaped = changed = False
    i = 0
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif ch == ",":
            j = i + 1
            while j < len(text) and text[j] in " \t\r\n":
                j += 1
            if j < len(text) and text[j] in "}]":
                changed = True
            else:
                out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out) if changed else None


def _describe_json_error(text: str, exc: json.JSONDecodeError) -> str:
    start = max(0, exc.pos - _SNIPPET)
    snippet = text[start : exc.pos + _SNIPPET].replace("\n", "\\n")
    marker = " " * (exc.pos - start + len("near: ")) + "^"
    return (
        f"arguments are not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}\n"
        f"near: {snippet}\n{marker}"
    )


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                # Which of the two the model meant is a guess; JSON parsers disagree on it.
                raise ArgumentsError(f"key {key!r} appears twice in one object; send it once")
            seen.add(key)
    return value


# One decoder: json.loads builds a new one per call when given a hook.
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)


def _too_deep(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _loads(text: str, max_depth: int) -> Any:
    """`json.loads`, with duplicate keys, depth and Python's own limits as `ArgumentsError`."""
    too_deep = f"arguments are nested more than {max_depth} levels deep; send a flatter value"
    try:
        value = _DECODER.decode(text)
    except (ArgumentsError, json.JSONDecodeError):
        raise
    except RecursionError:
        raise ArgumentsError(too_deep) from None
    except ValueError:
        # int() refuses integers longer than sys.get_int_max_str_digits().
        raise ArgumentsError(
            f"an integer in the arguments has more than {sys.get_int_max_str_digits():,} "
            "digits; send very long numbers as strings"
        ) from None
    # Counting brackets is quick and bounds the depth, so most values are never walked.
    if text.count("[") + text.count("{") > max_depth and _too_deep(value, max_depth):
        raise ArgumentsError(too_deep)
    return value


def parse_arguments(
    text: str, *, max_bytes: int = 1_000_000, max_depth: int = _MAX_DEPTH
) -> ParsedArguments:
    """Parse argument text into a JSON object, or raise `ArgumentsError`.

    Unambiguous repairs are applied and named: empty text (read as ``{}``),
    a Markdown code fence around the JSON, trailing commas, and a JSON object
    wrapped in a JSON string. Anything else is an error that says where, and
    so are a key repeated within one object, values nested more than
    `max_depth` deep and integers too long for Python to read.
    """
    size = len(text.encode("utf-8", "surrogatepass")) if len(text) * 4 > max_bytes else len(text)
    if size > max_bytes:
        raise ArgumentsError(
            f"arguments are {size:,} bytes; the limit is {max_bytes:,}. "
            "Pass large content by reference (a path, an id) instead."
        )
    repairs: list[str] = []
    if not text.strip():
        return ParsedArguments({}, ("empty arguments read as {}",))
    fenced = _FENCE.match(text) if "```" in text else None
    if fenced:
        text = fenced.group(1)
        repairs.append("removed a Markdown code fence around the arguments")
    try:
        value: Any = _loads(text, max_depth)
    except json.JSONDecodeError as exc:
        fixed = _without_trailing_commas(text)
        if fixed is None:
            raise ArgumentsError(_describe_json_error(text, exc)) from None
        try:
            value = _loads(fixed, max_depth)
        except json.JSONDecodeError:
            raise ArgumentsError(_describe_json_error(text, exc)) from None
        repairs.append("removed trailing commas")
    if isinstance(value, str):
        try:
            inner = _loads(value, max_depth)
        except json.JSONDecodeError:
            inner = None
        if isinstance(inner, dict):
            value = inner
            repairs.append("unwrapped a JSON object that was encoded inside a JSON string")
    if not isinstance(value, dict):
        raise ArgumentsError(
            f"arguments must be a JSON object with named parameters, got {_type_name(value)}"
        )
    return ParsedArguments(value, tuple(repairs) if repairs else ())


def _closed(schema: Any) -> Any:
    """Forbid unknown keys in every object that lists its properties.

    Without this, a typo in a nested key would be dropped silently.
    """
    if isinstance(schema, Mapping):
        out = {k: _closed(v) for k, v in schema.items()}
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_closed(v) for v in schema]
    return schema


def _path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _short(value: object, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _did_you_mean(name: str, options: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _media_hint(schema: Any, instance: Any) -> str:
    """What to do when a text stands where a media value is wanted (its description, say)."""
    if not (isinstance(schema, Mapping) and isinstance(instance, str)):
        return ""
    kind = schema.get("properties", {}).get("type", {})
    if not isinstance(kind, Mapping) or kind.get("const") not in ("image", "audio"):
        return ""
    return (
        f" (an {kind['const']} argument is the {kind['const']} itself, its JSON form with "
        "base64 data; a description or media: reference that was shown is not it: pass "
        "the value a tool returned from a script or a plan, or use a tool that takes a name)"
    )


def _describe(error: ValidationError) -> list[str]:
    where = _path(error.absolute_path)
    arg = f"argument '{where}'" if where else "arguments"
    kind = error.validator
    # jsonschema types these as possibly unset; after a failed check they are set.
    expected_value: Any = error.validator_value
    instance: Any = error.instance
    schema: Any = error.schema
    if kind == "required":
        problems = []
        present = instance if isinstance(instance, Mapping) else {}
        for name in expected_value:
            if name not in present:
                full = f"{where}.{name}" if where else name
                problems.append(f"missing required argument '{full}'")
        return problems
    if kind == "additionalProperties":
        allowed = list(schema.get("properties", {}))
        extras = [k for k in instance if k not in allowed]
        return [
            f"unknown argument '{(where + '.') if where else ''}{k}'{_did_you_mean(k, allowed)}"
            for k in extras
        ]
    if kind == "type":
        expected = error.validator_value
        expected_text = " or ".join(expected) if isinstance(expected, list) else expected
        return [
            f"{arg} must be {expected_text}, got {_type_name(error.instance)} "
            f"{_short(error.instance)}{_media_hint(schema, instance)}"
        ]
    if kind == "enum":
        options = ", ".join(_short(v) for v in expected_value)
        return [f"{arg} must be one of {options}; got {_short(error.instance)}"]
    if kind == "const":
        return [f"{arg} must be {_short(error.validator_value)}; got {_short(error.instance)}"]
    if kind in ("anyOf", "oneOf"):
        return [f"{arg} {_short(error.instance)} does not match any allowed form"]
    return [f"{arg}: {error.message}"]


def unresolved_reference(schema: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first reference of `schema` that cannot be used, and why; None if all can.

    A ``$ref`` (or ``$dynamicRef``) resolves to a part of the schema (by JSON
    pointer, ``$id`` or anchor) or to a meta-schema; nothing is fetched. One that
    resolves to a value that is not a schema (a pointer into a ``default``, say)
    cannot be used, nor can an ``$id`` that is not a URI. Values that are data,
    such as a ``const`` or an ``example``, are not searched.
    """
    import referencing.jsonschema
    from referencing.exceptions import Unresolvable

    dialect = schema.get("$schema")
    specification = referencing.jsonschema.specification_with(
        dialect if isinstance(dialect, str) else "", default=referencing.jsonschema.DRAFT202012
    )
    root = specification.create_resource(dict(schema))
    base = root.id() or ""
    resolver = meta_schemas().with_resource(base, root).resolver(base_uri=base)
    # A stack, not recursion: a deeply nested schema cannot exhaust Python's stack.
    pending: list[tuple[Resource[Any], Resolver[Any]]] = [(root, resolver)]
    while pending:
        resource, scope = pending.pop()
        contents = resource.contents
        if isinstance(contents, Mapping):
            for keyword in ("$ref", "$dynamicRef"):
                reference = contents.get(keyword)
                if not isinstance(reference, str):
                    continue
                try:
                    target = scope.lookup(reference).contents
                except Unresolvable:
                    why = "it does not resolve within the schema, and references are never fetched"
                    return reference, why
                except ValueError as exc:  # it, or an $id it is relative to, is not a URI
                    return reference, f"it cannot be read as a URI: {exc}"
                if not isinstance(target, Mapping | bool):
                    return (
                        reference,
                        f"it points at {_type_name(target)} {_short(target)}, not a schema",
                    )
        for sub in resource.subresources():
            try:
                pending.append((sub, scope.in_subresource(sub)))
            except ValueError as exc:
                return str(sub.id()), f"it is an $id that cannot be read as a URI: {exc}"
    return None


class ArgumentChecker:
    """Validates arguments against one tool's parameter schema."""

    def __init__(self, parameters: JsonSchema) -> None:
        schema = _closed(parameters)
        # The Rust validator answers "valid?" in about a microsecond; the
        # Python one is only asked, on failure, to word the problems. Neither may
        # fetch a reference (see the module's docstring): offline, and a registry
        # holding only the meta-schemas.
        try:
            self._fast: Any = jsonschema_rs.validator_for(schema, offline=True)
        except Exception:  # a schema it cannot compile: the Python validator decides alone
            self._fast = None
        self._schema = schema
        self._slow: Validator | None = None
        properties = parameters.get("properties", {})
        self._nullable_optional = {
            name for name in properties if name not in parameters.get("required", ())
        }

    @property
    def _validator(self) -> Validator:
        # Built when first asked (a call the Rust validator rejects, or a schema it
        # cannot compile): a run whose calls are valid never imports jsonschema.
        if self._slow is None:
            import jsonschema

            validator_cls = jsonschema.validators.validator_for(
                self._schema, default=jsonschema.Draft202012Validator
            )
            self._slow = validator_cls(self._schema, registry=meta_schemas())
        return self._slow

    def is_valid(self, arguments: dict[str, Any]) -> bool:
        """Whether the arguments are valid as they are (no repair, no wording)."""
        if self._fast is not None:
            return bool(self._fast.is_valid(arguments))
        return bool(self._validator.is_valid(arguments))

    def check(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
        """Return the arguments ready for conversion and any repairs, or raise.

        ``null`` for an optional parameter that does not accept null means
        "use the default" (OpenAI strict mode sends it that way) and is dropped.
        """
        if self._fast is not None and self._fast.is_valid(arguments):
            return arguments, ()
        repairs: list[str] = []
        errors = list(self._validator.iter_errors(arguments))
        if errors:
            nulls = {
                e.path[0]: None
                for e in errors
                if len(e.path) == 1 and e.instance is None and e.path[0] in self._nullable_optional
            }
            if nulls:
                arguments = {k: v for k, v in arguments.items() if k not in nulls}
                repairs.extend(f"null for optional '{k}' read as omitted" for k in nulls)
                errors = list(self._validator.iter_errors(arguments))
        if errors:
            problems: list[str] = []
            for error in sorted(errors, key=lambda e: (len(e.path), str(e.validator))):
                for problem in _describe(error):
                    if problem not in problems:
                        problems.append(problem)
            raise ArgumentsError("; ".join(problems))
        return arguments, tuple(repairs)


#: Checkers by the text of their schema, shared by every run (see `checker_for`).
_CHECKERS: dict[str, ArgumentChecker] = {}
_CHECKERS_KEPT = 1024
_schema_text = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode


def checker_for(parameters: JsonSchema) -> ArgumentChecker:
    """The checker of `parameters`, built once for each distinct schema.

    A run checks its calls with a checker per tool; building one compiles the schema,
    which costs more than checking many calls. Checkers keep nothing of the calls they
    check, so one serves every run and thread. The key is the schema's text, so a
    schema changed in place gets a checker of its own.
    """
    try:
        key = _schema_text(parameters)
    except (TypeError, ValueError):  # not JSON text (a default of another type, say)
        return ArgumentChecker(parameters)
    checker = _CHECKERS.get(key)
    if checker is None:
        checker = ArgumentChecker(parameters)
        if len(_CHECKERS) >= _CHECKERS_KEPT:
            _CHECKERS.clear()  # many schemas come and go (generated tools): start again
        _CHECKERS[key] = checker
    return checker
