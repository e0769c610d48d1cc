"""The checks: each reads one tool and yields the findings it has to report."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .._tokens import count_tokens
from ..tools import Tool, lean_schema
from ._words import (
    LEADING_WRITE_VERBS,
    NOUN_LIKE,
    READ_VERBS,
    WRITE_VERBS,
    content_words,
    job_verb,
    joined_jobs,
    name_tokens,
    stem,
    structured_result,
    summary,
)

__all__ = ["DEFAULT_MAX_SCHEMA_TOKENS", "Finding", "Principle", "lint"]

#: The four tool-design principles a finding can break.
Principle = Literal["reliability", "documentation", "atomicity", "parseable"]

#: A schema past this many o200k tokens costs more on every request than most
#: whole toolboxes (the five example tools take 393 together).
DEFAULT_MAX_SCHEMA_TOKENS = 500

_TYPED_KEYS = frozenset(
    ("type", "enum", "const", "$ref", "anyOf", "oneOf", "allOf", "properties", "items", "not")
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a tool does against a principle, where, and what to do about it."""

    tool: str
    principle: Principle
    where: str
    message: str
    fix: str
    #: Which check found it, e.g. ``undeclared-writes`` (for counting; not printed).
    rule: str = ""

    def __str__(self) -> str:
        return f"{self.tool} [{self.principle}] {self.where}: {self.message}; {self.fix}"


def lint(
    tools: Iterable[Tool], *, max_schema_tokens: int = DEFAULT_MAX_SCHEMA_TOKENS
) -> list[Finding]:
    """Check each tool against the four principles; the findings in tool order.

    `tools` is a `Toolbox` or any iterable of `Tool`s (names may repeat, as when
    linting a benchmark's functions together).
    """
    findings: list[Finding] = []
    for item in tools:
        for check in (_description, _parameters, _schema_values, _returns, _jobs, _writes):
            findings.extend(check(item))
        findings.extend(_size(item, max_schema_tokens))
    return findings


# --- documentation ----------------------------------------------------------------------


def _says_nothing_new(text: str, name: str, *, least: int = 2) -> bool:
    """Whether `text` has fewer than `least` meaningful words, or only the name's."""
    words = set(content_words(text))
    return len(words) < least or words <= {stem(t) for t in name_tokens(name)}


def _description(tool: Tool) -> Iterator[Finding]:
    text = tool.description.strip()
    if not text:
        yield Finding(
            tool.name,
            "documentation",
            "description",
            "there is none",
            "say in one sentence what it does and what it returns",
            rule="no-description",
        )
    elif _says_nothing_new(text, tool.name):
        yield Finding(
            tool.name,
            "documentation",
            "description",
            f"{summary(text)!r} says no more than the name",
            "say what it acts on, what it returns and when to use it",
            rule="vague-description",
        )


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, Mapping) else {}


def _lists_its_values(root: Mapping[str, Any], prop: Mapping[str, Any]) -> bool:
    """Whether `prop` (or what it refers to, or a member of its union) lists its values."""
    for _, node in _nodes(prop, seen=frozenset(), root=root):
        enum = node.get("enum")
        if (isinstance(enum, list) and len(enum) >= 2) or "const" in node:
            return True
    return False


#: An example value in a description: "e.g. 92.15", "for example 'ACME'", "such as 3".
_EXAMPLE_VALUE = re.compile(
    r"\b(?:e\.g\.|eg\.|for example|for instance|such as|like)[:,]?\s+"
    r"(?P<value>['\"][^'\"]+['\"]|[-+]?\d[\d,._]*|[A-Z][\w-]*@[\w.-]+)",
    re.IGNORECASE,
)


#: Where example values belong: whole calls, marked as examples, beside the schema.
_EXAMPLES_ADVICE = "show whole example calls with @tool(examples=[...])"


def _advice(tool: Tool, what: str) -> str:
    """How to document a parameter; never an example value in a description of a tool that acts."""
    if tool.side_effects:
        # An example value in a side-effecting tool's description is a value a model may
        # copy into a real call (an amount, a payee): say what it is, and show examples
        # apart, as whole calls.
        return (
            f"say {what}, without an example value a model could copy into a real call; "
            f"{_EXAMPLES_ADVICE} instead"
        )
    return f"say {what}; {_EXAMPLES_ADVICE}" if not tool.examples else f"say {what}"


def _parameters(tool: Tool) -> Iterator[Finding]:
    for name, prop in _properties(tool.parameters).items():
        if not isinstance(prop, Mapping):
            continue
        where = f"parameter {name!r}"
        described = str(prop.get("description") or "").strip()
        if _lists_its_values(tool.parameters, prop):
            pass  # the allowed values are the examples
        elif not described:
            yield Finding(
                tool.name,
                "documentation",
                where,
                "has no description",
                _advice(tool, "what it is"),
                rule="undocumented-parameter",
            )
        elif _says_nothing_new(described, name, least=1):
            yield Finding(
                tool.name,
                "documentation",
                where,
                f"the description {described!r} only repeats the name",
                _advice(tool, "what it is, its format or unit"),
                rule="vague-parameter",
            )
        example = _EXAMPLE_VALUE.search(described) if tool.side_effects else None
        if example is not None:
            yield Finding(
                tool.name,
                "reliability",
                where,
                f"the description gives the example value {example['value']} for a tool with "
                "side effects, which a model may copy into a real call",
                "describe the format or unit instead, and move the value into a whole call "
                "with @tool(examples=[...])",
                rule="copyable-example",
            )
    for path, node in _nodes(tool.parameters):
        if path and not (_TYPED_KEYS & node.keys()):
            yield Finding(
                tool.name,
                "reliability",
                f"parameter {path!r}",
                "has no type (Any), so no call is ever refused for a wrong value",
                "give it a concrete type",
                rule="untyped-parameter",
            )


# --- reliability: the schema's own values -------------------------------------------------


def _nodes(
    schema: Mapping[str, Any],
    path: str = "",
    seen: frozenset[str] = frozenset(),
    root: Mapping[str, Any] | None = None,
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every subschema with the parameter path it describes ('' for the whole).

    References resolve in `root` (by default `schema` itself).
    """
    yield path, schema
    yield from _children(schema if root is None else root, schema, path, seen)


def _children(
    root: Mapping[str, Any], node: Mapping[str, Any], path: str, seen: frozenset[str]
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    def visit(child: Any, child_path: str, seen: frozenset[str]) -> Iterator[Any]:
        if not isinstance(child, Mapping):
            return
        yield child_path, child
        yield from _children(root, child, child_path, seen)

    for name, prop in _properties(node).items():
        yield from visit(prop, f"{path}.{name}" if path else str(name), seen)
    items = node.get("items")
    if isinstance(items, Mapping):
        yield from visit(items, f"{path}[]", seen)
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        yield from visit(extra, f"{path}{{}}", seen)
    # A union's members and a reference's target describe the same parameter.
    for key in ("anyOf", "oneOf", "allOf"):
        members = node.get(key)
        if isinstance(members, list):
            for member in members:
                yield from visit(member, path, seen)
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/") and ref not in seen:
        yield from visit(_pointed(root, ref), path, seen | {ref})


def _pointed(root: Mapping[str, Any], ref: str) -> Any:
    """What a local ``$ref`` (``#/$defs/Unit``, ``#/definitions/Unit``) points to, or None."""
    target: Any = root
    for part in ref.removeprefix("#/").split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        target = target.get(key) if isinstance(target, Mapping) else None
    return target


class _Unresolvable(Exception):
    """A ``$ref`` that points nowhere: the schema's values cannot be checked."""


def _breaks(validator: Any, node: Mapping[str, Any], value: Any, *drop: str) -> str | None:
    """Why `value` fails `node` without the keys `drop` (refs resolve in the whole)."""
    import jsonschema
    import referencing.exceptions

    check = validator.evolve(schema={k: v for k, v in node.items() if k not in drop})
    try:
        error = jsonschema.exceptions.best_match(check.iter_errors(value))
    except referencing.exceptions.Unresolvable as exc:
        ref = str(getattr(exc, "ref", exc))
        # A pointer into this document is reported without its '#'.
        raise _Unresolvable(f"#{ref}" if ref.startswith("/") else ref) from exc
    return None if error is None else error.message


def _schema_values(tool: Tool) -> Iterator[Finding]:
    # Here, not at the top: the command line imports the linter for every command.
    import jsonschema

    root = tool.parameters
    kind = jsonschema.validators.validator_for(root, default=jsonschema.Draft202012Validator)
    try:
        kind.check_schema(root)
        found = list(_value_findings(tool, kind(root)))
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "the top level"
        problem = f"not a valid JSON Schema at {where}: {exc.message}"
    except _Unresolvable as exc:
        problem = f"the $ref {str(exc)!r} points nowhere"
    else:
        yield from found
        return
    yield Finding(
        tool.name,
        "reliability",
        "parameters",
        problem,
        "fix the schema; calls cannot be checked against it",
        rule="invalid-schema",
    )


def _value_findings(tool: Tool, validator: Any) -> Iterator[Finding]:
    required = set(tool.required)
    for path, node in _nodes(tool.parameters):
        where = f"parameter {path!r}" if path else "parameters"
        enum = node.get("enum")
        if isinstance(enum, list) and not enum:
            yield Finding(
                tool.name,
                "reliability",
                where,
                "its enum has no values, so no call can pass",
                "list the allowed values, or drop the enum",
                rule="empty-enum",
            )
        elif isinstance(enum, list):
            for value in enum:
                error = _breaks(validator, node, value, "enum", "default")
                if error is not None:
                    yield Finding(
                        tool.name,
                        "reliability",
                        where,
                        f"enum value {_shown(value)} breaks its own schema ({error})",
                        "make the enum and the type agree",
                        rule="enum-breaks-schema",
                    )
                    break
        # A null default on an optional parameter means "left out" (see lean_schema).
        if "default" in node and not (node["default"] is None and path not in required):
            default = node["default"]
            error = _breaks(validator, node, default, "default")
            if error is not None:
                yield Finding(
                    tool.name,
                    "reliability",
                    where,
                    f"the default {_shown(default)} breaks its own schema ({error})",
                    "change the default or widen the type (e.g. `X | None = None`)",
                    rule="default-breaks-schema",
                )


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _size(tool: Tool, limit: int) -> Iterator[Finding]:
    parameters = tool.parameters
    if isinstance(parameters.get("properties"), Mapping):
        parameters = lean_schema(parameters)  # as a model is shown it
    shown = {"name": tool.name, "description": tool.description, "parameters": parameters}
    text = json.dumps(shown, separators=(",", ":"), ensure_ascii=False, default=str)
    tokens = count_tokens(text)
    if tokens > limit:
        yield Finding(
            tool.name,
            "atomicity",
            "schema",
            f"{tokens:,} tokens, over {limit:,}, paid on every request",
            "split it into smaller tools, or move reference text out of the description",
            rule="large-schema",
        )


# --- parseable ---------------------------------------------------------------------------


def _returns(tool: Tool) -> Iterator[Finding]:
    returns = tool.returns
    said = tool.description
    if returns is not None and returns.get("description"):
        said += "\n\n" + str(returns["description"])
    promise = structured_result(said)
    if promise is None:
        return
    if returns is None:
        yield Finding(
            tool.name,
            "parseable",
            "returns",
            f"the description promises structure ({promise!r}) but no return type is declared",
            "annotate the return with a TypedDict or model (on MCP, an outputSchema) "
            "so scripts can index it",
            rule="undeclared-return",
        )
    elif returns.get("type") == "string" and "enum" not in returns:
        yield Finding(
            tool.name,
            "parseable",
            "returns",
            f"free text (str), though the description promises structure ({promise!r})",
            "return a TypedDict or model instead of formatted text, so scripts can index it",
            rule="free-text-return",
        )


# --- atomicity ---------------------------------------------------------------------------


def _jobs(tool: Tool) -> Iterator[Finding]:
    tokens = name_tokens(tool.name)
    if "and" in tokens[1:-1]:
        at = tokens.index("and")
        before, after = tokens[:at], tokens[at + 1 :]
        if job_verb(after[0]):
            yield Finding(
                tool.name,
                "atomicity",
                "name",
                "'and' joins two jobs",
                f"split it into {'_'.join(before)} and {'_'.join(after)}",
                rule="two-jobs-name",
            )
            return
    first_sentence = summary(tool.description)
    second = joined_jobs(first_sentence)
    if second is not None:
        yield Finding(
            tool.name,
            "atomicity",
            "summary",
            f"{first_sentence!r} names two jobs (… and {second} …)",
            "split it into one tool per job, and let the caller chain them",
            rule="two-jobs-summary",
        )


# --- reliability: side effects -------------------------------------------------------------


def _write_verb(name: str) -> str | None:
    """The verb of `name` that says it writes; None when a read verb comes first.

    A verb that also reads as a noun (schedule, order, set) counts only in a name
    with no read verb at all: ``flight_schedule_get_timings`` reads.
    """
    tokens = name_tokens(name)
    reads = any(t in READ_VERBS for t in tokens)
    if len(tokens) > 1 and tokens[0] in LEADING_WRITE_VERBS and not reads:
        return tokens[0]  # add_contact, not add (two numbers)
    last = len(tokens) - 1
    for i, token in enumerate(tokens):
        if token in READ_VERBS:
            return None
        if token not in WRITE_VERBS:
            continue
        if token not in NOUN_LIKE or (not reads and (i == 0 or i < last)):
            return token
    return None


def _writes(tool: Tool) -> Iterator[Finding]:
    verb = _write_verb(tool.name)
    if verb is None or tool.side_effects:
        return
    if tool.annotations.get("readOnlyHint"):
        yield Finding(
            tool.name,
            "reliability",
            "side effects",
            f"the server marks it read-only (readOnlyHint), yet its name says it writes ({verb!r})",
            "drop readOnlyHint on the server if it writes, or rename it if it only reads",
            rule="read-only-writer",
        )
    else:
        yield Finding(
            tool.name,
            "reliability",
            "side effects",
            f"its name says it writes ({verb!r}) but side effects are not declared",
            "declare side_effects=True, so approvals ask and a retried script does not repeat it",
            rule="undeclared-writes",
        )
