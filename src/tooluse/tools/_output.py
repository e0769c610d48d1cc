"""Typed output: the tool a run ends with when it must produce a value of a given type.

An output type (a pydantic model, a dataclass, a TypedDict, or any type pydantic
reads, such as ``int``, ``list[float]`` or a ``Literal``) becomes one more tool of
the run, so that the model's result travels the road every call does: checked
against its schema by the dispatcher, refused with the validator's words when it
does not fit, recorded when it does. The model calls ``final_result`` (its
parameters are the type's object schema, or ``{"result": ...}`` for any other
type); a script calls ``final(result)``. Nothing else about the tool is special:
the loop ends the run once a call of it was recorded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pydantic

from .._exceptions import UsageError
from ._schema import JsonSchema
from ._tool import Caller, Tool
from ._toolbox import Toolbox

__all__ = [
    "ACCEPTED",
    "OUTPUT_TOOL",
    "SCRIPT_OUTPUT",
    "OutputSpec",
    "OutputTool",
    "output_of",
    "output_tool",
]

#: The tool a model calls to end its run with the result.
OUTPUT_TOOL = "final_result"
#: The function a script calls to end its run with the result.
SCRIPT_OUTPUT = "final"
#: What the call of the output tool returns (the run ends: the model sees it only in a
#: conversation that goes on).
ACCEPTED = "Final result accepted."

_DESCRIPTION = "Give the final result of the task. The run ends once it is accepted."


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """An output type, read once: its validator, and the schema the model is shown."""

    type: Any
    adapter: pydantic.TypeAdapter[Any]
    schema: JsonSchema

    @classmethod
    def of(cls, output_type: Any) -> OutputSpec:
        """The spec of `output_type`; `UsageError` if pydantic cannot read it as a type."""
        try:
            adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(output_type)
            schema = adapter.json_schema()
        except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError) as exc:
            raise UsageError(
                f"output_type={output_type!r} cannot be an output type: {exc}"
            ) from exc
        except TypeError as exc:
            raise UsageError(f"output_type={output_type!r} is not a type: {exc}") from exc
        return cls(output_type, adapter, schema)

    @property
    def name(self) -> str:
        return getattr(self.type, "__name__", None) or repr(self.type)

    @property
    def is_object(self) -> bool:
        """Whether the schema is an object with named fields, usable as a call's parameters."""
        return self.schema.get("type") == "object" and "properties" in self.schema

    def dump(self, value: Any) -> Any:
        """`value` as JSON data (what the written form of a result keeps)."""
        return self.adapter.dump_python(value, mode="json")

    def text(self, value: Any) -> str:
        """`value` as JSON text (the run's answer)."""
        return json.dumps(self.dump(value), ensure_ascii=False)

    def load(self, data: Any) -> Any:
        """The typed value JSON data writes down; `pydantic.ValidationError` if it does not fit."""
        return self.adapter.validate_json(json.dumps(data))


class OutputTool(Tool):
    """The tool a run ends with; its arguments are validated by the output type itself.

    `wrapped` says the value is the ``result`` argument rather than the arguments as
    a whole.
    """

    spec: OutputSpec
    wrapped: bool

    def convert_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        # A pydantic.ValidationError here is what the dispatcher words for the model.
        self.value_of(arguments)
        return {}

    def value_of(self, arguments: Mapping[str, Any]) -> Any:
        """The typed value a call's (recorded) arguments give; `pydantic.ValidationError`
        if they do not fit the type."""
        data = arguments.get("result") if self.wrapped else dict(arguments)
        return self.spec.load(data)


def _parameters(spec: OutputSpec, wrapped: bool) -> JsonSchema:
    if not wrapped:
        return dict(spec.schema)
    inner = {k: v for k, v in spec.schema.items() if k != "$defs"}
    defs = dict(spec.schema.get("$defs", {}))  # references stay valid from the top
    name = spec.name
    if spec.is_object and name.isidentifier() and name not in defs:
        # A definition of its own, so that a stub names the class as the type is named.
        defs[name] = inner
        inner = {"$ref": f"#/$defs/{name}"}
    parameters: JsonSchema = {
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
    }
    if defs:
        parameters["$defs"] = defs
    return parameters


def _accept(**_: Any) -> str:
    return ACCEPTED


def output_tool(spec: OutputSpec, caller: Caller, tools: Toolbox) -> OutputTool:
    """The output tool of a run whose calls `caller` makes, over its `tools`.

    A model calls ``final_result`` with the type's fields as arguments (any other type
    as ``result``); a script calls ``final(result)``. `UsageError` if one of `tools`
    already has that name.
    """
    name = SCRIPT_OUTPUT if caller == "script" else OUTPUT_TOOL
    if name in tools:
        raise UsageError(
            f"a tool is named {name!r}, which is the name of the output tool of a run with "
            "an output_type: rename the tool"
        )
    wrapped = caller == "script" or not spec.is_object
    # Its positional parameters are those of the schema: ``result`` alone when wrapped.
    tool = OutputTool.from_schema(
        name,
        _DESCRIPTION,
        _parameters(spec, wrapped),
        _accept,
        returns={"type": "string"},
        callers=(caller,),
    )
    tool.spec = spec
    tool.wrapped = wrapped
    return tool


def output_of(tools: Toolbox) -> OutputTool | None:
    """The output tool among `tools`, if the run has one."""
    return next((t for t in tools if isinstance(t, OutputTool)), None)
