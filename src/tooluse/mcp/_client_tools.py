"""An MCP server's tools as `Tool`s, and what their calls return.

A listed tool becomes a raw-schema `Tool`: its ``inputSchema`` as the parameters
(the dispatcher validates calls against it), its ``outputSchema`` as the return
schema (the stub module writes it as a ``TypedDict``), and its annotations kept
for the policies that decide on side effects. A tool whose schema is not a JSON
Schema, or holds a ``$ref`` that does not resolve within it (a reference is never
fetched: see `unresolved_reference`), is refused with the reason, and the others
still load.

The annotations decide what a `Tool` says of itself, unless the client is told
otherwise (they are the server's claims, and a server may be wrong about itself):

- ``side_effects``: unless ``readOnlyHint`` is true. MCP's default is a tool that
  may change things, and ``destructiveHint`` only grades a tool that does.
- ``effects``: ``read`` for a read-only tool; for one with side effects,
  ``idempotent`` if ``idempotentHint`` is true, else ``write`` (MCP's default).
- ``trust``: ``untrusted`` unless ``openWorldHint`` is false. An open-world tool
  (MCP's default) reaches outside entities such as the web, whose text may carry
  instructions; a closed-world one works on the server's own domain.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import jsonschema
import mcp_types as types

from .._exceptions import ModelRetry, ToolDefinitionError
from ..media import from_block, is_block
from ..tools import Caller, Tool, Trust
from ..tools._validate import unresolved_reference

__all__ = ["build_tool", "result_value"]

CallRemote = Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]]


def _schema_problem(schema: Any, which: str) -> str | None:
    if not isinstance(schema, dict):
        return f"its {which} is not a JSON object"
    try:
        validator = jsonschema.validators.validator_for(
            schema, default=jsonschema.Draft202012Validator
        )
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "the top level"
        return f"its {which} is not a valid JSON Schema: {exc.message} (at {where})"
    try:
        unresolved = unresolved_reference(schema)
    except Exception as exc:  # the server's schema, however odd, refuses one tool only
        return f"its {which}'s references cannot be checked: {type(exc).__name__}: {exc}"
    if unresolved is not None:
        reference, why = unresolved
        return f"its {which} has a reference that cannot be used, {reference!r}: {why}"
    return None


def build_tool(
    remote: types.Tool,
    name: str,
    call: CallRemote,
    *,
    timeout: float | None,
    side_effects: bool | None = None,
    trust: Trust | None = None,
    callers: frozenset[Caller] | None = None,
) -> Tool:
    """The `Tool` for a listed MCP tool, called as `name`; raises ToolDefinitionError.

    A call runs ``call(remote.name, arguments)`` and returns `result_value` of it.
    ``side_effects`` and ``trust`` left None come from the annotations; ``callers``
    left None is everyone.
    """
    for schema, which in (
        (remote.input_schema, "inputSchema"),
        (remote.output_schema, "outputSchema"),
    ):
        problem = schema is not None and _schema_problem(schema, which)
        if problem:
            raise ToolDefinitionError(f"tool {remote.name!r}: {problem}")
    annotations = (
        remote.annotations.model_dump(by_alias=True, exclude_none=True)
        if remote.annotations is not None
        else {}
    )
    remote_name = remote.name

    async def call_tool(**arguments: Any) -> Any:
        return result_value(await call(remote_name, arguments))

    # MCP's default is a tool that may change things; only a read-only one has none.
    acts = side_effects if side_effects is not None else not annotations.get("readOnlyHint", False)
    repeats_safely = annotations.get("idempotentHint", False) is True

    built = Tool.from_schema(
        name,
        remote.description or remote.title or annotations.get("title") or "",
        remote.input_schema,
        call_tool,
        returns=remote.output_schema,
        timeout=timeout,
        side_effects=acts,
        effects=("idempotent" if repeats_safely else "write") if acts else "read",
        # MCP's default is an open world: text from outside the server's own domain.
        trust=(
            trust
            if trust is not None
            else "untrusted"
            if annotations.get("openWorldHint", True)
            else "trusted"
        ),
        callers=callers if callers is not None else frozenset(("model", "script")),
        annotations=annotations,
    )
    return _with_served_examples(built, remote.input_schema)


def _with_served_examples(tool: Tool, schema: Any) -> Tool:
    """The tool with the argument objects listed in its inputSchema's ``examples``.

    That is where tooluse serves a tool's examples. One that does not fit the schema
    is the server's mistake: it is left out, and the tool still loads.
    """
    given = schema.get("examples") if isinstance(schema, dict) else None
    if not isinstance(given, list):
        return tool
    kept: list[dict[str, Any]] = []
    for arguments in given:
        example = {"arguments": arguments}
        try:
            tool.with_examples([example])
        except ToolDefinitionError:
            continue
        kept.append(example)
    return tool.with_examples(kept) if kept else tool


def _blocks(content: list[types.ContentBlock]) -> Any:
    if all(isinstance(block, types.TextContent) for block in content):
        return "\n".join(block.text for block in content if isinstance(block, types.TextContent))
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in content]


def _media(content: list[types.ContentBlock]) -> Any:
    """A result's content blocks as values: text as `str`, images, audio and embedded
    resources as media values (`MediaError` if one is not what it says), anything else
    as its JSON. One block is the value itself."""
    values: list[Any] = []
    for block in content:
        data = block.model_dump(mode="json", by_alias=True, exclude_none=True)
        if isinstance(block, types.TextContent):
            values.append(block.text)
        elif is_block(data):
            values.append(from_block(data))
        else:
            values.append(data)
    return values[0] if len(values) == 1 else values


def result_value(result: types.CallToolResult) -> Any:
    """What a call returns: structured content as data, text as text, images, audio and
    embedded resources as `Image`, `Audio` and `Resource` values.

    An error result (``isError``) raises `ModelRetry` with the server's words,
    which is how the model sees them.
    """
    if result.is_error:
        value = _blocks(result.content)
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        raise ModelRetry(text or "the tool reported an error and gave no message")
    if result.structured_content is not None:
        return result.structured_content
    if all(isinstance(block, types.TextContent) for block in result.content):
        return _blocks(result.content)
    return _media(result.content)
