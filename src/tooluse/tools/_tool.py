"""`Tool` and the `@tool` decorator."""

from __future__ import annotations

import copy
import enum
import functools
import inspect
import json
import keyword
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Self, overload

import pydantic

from .._exceptions import ToolDefinitionError
from ._docstrings import parse_docstring
from ._schema import JsonSchema, clean_schema, described_function, function_schema
from ._validate import ArgumentChecker, ArgumentsError

__all__ = ["CALLERS", "Caller", "Tool", "ToolExample", "Trust", "tool"]

#: Who makes a call: the model itself (a JSON or text call), or a script it wrote.
Caller = Literal["model", "script"]
#: Whether a tool's results may carry text from outside the run (mail, web pages, files).
Trust = Literal["trusted", "untrusted"]
CALLERS: frozenset[Caller] = frozenset(("model", "script"))
Effects = Literal["read", "idempotent", "write"]
EFFECTS: tuple[Effects, ...] = ("read", "idempotent", "write")

# Integers from here on are left to pydantic: float() fails on them, or soon will.
_FLOAT_LIMIT = 2**1023
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$")


class _Unset(enum.Enum):
    # An enum member: one value, kept as itself through pickling (process pools, Ray).
    NO_RESULT = "no result"

    def __repr__(self) -> str:
        return "NO_RESULT"


#: A `ToolExample` without a result (a result may be ``None`` itself).
NO_RESULT = _Unset.NO_RESULT


@dataclass(frozen=True, slots=True)
class ToolExample:
    """One example call of a tool: its arguments and, if given, what it returned.

    ``@tool(examples=[...])`` takes these or plain dicts of the same shape,
    ``{"arguments": {...}, "result": ...}``. The arguments must pass the tool's
    parameter schema; the result is shown as given.
    """

    arguments: Mapping[str, Any]
    result: Any = NO_RESULT

    @property
    def has_result(self) -> bool:
        return self.result is not NO_RESULT


#: What ``examples=`` takes: `ToolExample`s or ``{"arguments": ..., "result": ...}`` dicts.
Examples = Iterable[ToolExample | Mapping[str, Any]]


@dataclass(eq=False)
class Tool:
    """A callable the model may use, with everything needed to describe and check it.

    Build one with `@tool` from a typed function, or with `Tool.from_schema`
    from a JSON Schema that comes from elsewhere (an MCP server, BFCL).
    Calling a `Tool` calls the underlying function directly.
    """

    name: str
    description: str
    parameters: JsonSchema
    function: Callable[..., Any]
    returns: JsonSchema | None = None
    timeout: float | None = None
    side_effects: bool = False
    positional: tuple[str, ...] = ()
    #: What calling it twice costs: ``read`` (nothing: it changes nothing),
    #: ``idempotent`` (it changes something, and a repeat with the same arguments
    #: changes nothing more) or ``write`` (a repeat acts again). Without it, a tool
    #: with ``side_effects`` writes and one without reads.
    effects: Effects | None = None
    #: ``untrusted``: the results carry outside text (mail, web pages, files), which
    #: the provenance policy watches for in the arguments of later calls.
    trust: Trust = "trusted"
    #: Who may call the tool: the model directly, a script it wrote, or both.
    callers: frozenset[Caller] = CALLERS
    #: Hints about the tool's behaviour from where it came from, such as an MCP
    #: server's ``readOnlyHint`` and ``destructiveHint``; empty for a typed function.
    annotations: Mapping[str, Any] = field(default_factory=dict)
    #: How many times a failed call runs again before its error is recorded (see `tool`).
    retries: int = 0
    #: A ``write`` tool's own word that running it again after a failure is safe:
    #: without it, a write tool may not declare ``retries``.
    retry_writes: bool = False
    #: Example calls shown to the model beside the schema (see `tool`'s ``examples``).
    examples: tuple[ToolExample, ...] = ()
    _adapter: pydantic.TypeAdapter[Any] | None = field(default=None, repr=False)
    # Parameters that need no pydantic model (see `function_schema`): their types by name.
    _scalars: dict[str, type] | None = field(default=None, repr=False)
    #: The parameter given the run's `RunContext` (see `tooluse.RunContext`), if any.
    context_parameter: str | None = None
    _async_of: tuple[Callable[..., Any], bool] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ToolDefinitionError(
                f"tool name {self.name!r} is not usable: 1-64 characters, letters, digits, "
                "'_', '.', '-', not starting with a digit"
            )
        if self.parameters.get("type", "object") != "object":
            raise ToolDefinitionError(
                f"tool {self.name!r}: parameters must be an object schema, "
                f"got type {self.parameters.get('type')!r}"
            )
        if self.timeout is not None and self.timeout <= 0:
            raise ToolDefinitionError(f"tool {self.name!r}: timeout must be positive")
        if self.trust not in ("trusted", "untrusted"):
            raise ToolDefinitionError(
                f"tool {self.name!r}: trust must be 'trusted' or 'untrusted', got {self.trust!r}"
            )
        self.callers = _callers(self.name, self.callers)
        self.effects, self.side_effects = _effects(self.name, self.effects, self.side_effects)
        _check_retries(self.name, self.effects, self.retries, self.retry_writes)
        self.parameters.setdefault("type", "object")
        self.parameters.setdefault("properties", {})
        if not self.positional:
            self.positional = tuple(self.parameters["properties"])
        self.examples = _examples(self.name, self.examples, self.parameters)

    def with_examples(self, examples: Examples) -> Tool:
        """A copy of this tool showing `examples` (checked as ``@tool(examples=...)`` checks).

        For a tool built elsewhere, such as one an MCP server describes.
        """
        copied = copy.copy(self)
        copied.examples = _examples(self.name, examples, self.parameters)
        return copied

    @property
    def is_async(self) -> bool:
        # Asked on every call: remembered for the function it was asked about.
        known = self._async_of
        if known is None or known[0] is not self.function:
            known = self._async_of = (self.function, inspect.iscoroutinefunction(self.function))
        return known[1]

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.parameters.get("required", ()))

    def convert_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Turn validated JSON arguments into the function's Python arguments.

        Typed tools get pydantic models, dataclasses and the like built from
        the nested JSON; raw-schema tools get the JSON values unchanged.
        """
        if self._scalars is not None:
            # Schema-valid JSON scalars are what pydantic would pass, but for JSON's
            # numbers: 3.0 for an int parameter becomes 3, and 3 for a float 3.0.
            kwargs = dict(arguments)
            for name, value in arguments.items():
                kind = self._scalars.get(name)
                if kind is int and type(value) is float:
                    kwargs[name] = int(value)
                elif kind is float and type(value) is int:
                    if abs(value) >= _FLOAT_LIMIT:
                        break  # beyond a float: pydantic refuses it in its own words
                    kwargs[name] = float(value)
            else:
                return kwargs
        if self._adapter is None:
            # A copy: a tool that mutates its arguments must not rewrite the record.
            return copy.deepcopy(dict(arguments))
        model = self._adapter.validate_python(dict(arguments))
        return {name: getattr(model, name) for name in type(model).model_fields}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        side_effects: bool = False,
        trust: Trust = "trusted",
        callers: Iterable[Caller] = CALLERS,
        localns: Mapping[str, Any] | None = None,
        effects: Effects | None = None,
        retries: int = 0,
        retry_writes: bool = False,
        examples: Examples = (),
    ) -> Self:
        """Build a tool from a typed function (what `@tool` does)."""
        doc = parse_docstring(inspect.getdoc(described_function(fn)))
        schema = function_schema(fn, doc, localns=localns)
        tool_name = name or getattr(fn, "__name__", "")
        if not tool_name or tool_name == "<lambda>":
            raise ToolDefinitionError(
                f"a tool needs a name: pass name=... for lambdas and partials ({fn!r})"
            )
        return cls(
            name=tool_name,
            description=description if description is not None else schema.description,
            parameters=schema.parameters,
            function=fn,
            returns=schema.returns,
            timeout=timeout,
            side_effects=side_effects,
            effects=effects,
            retries=retries,
            retry_writes=retry_writes,
            examples=examples,  # type: ignore[arg-type]  # checked and made a tuple on init
            positional=schema.positional,
            trust=trust,
            callers=_callers(tool_name, callers),
            _adapter=schema.arguments_adapter,
            _scalars=schema.scalars,
            context_parameter=schema.context,
        )

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        function: Callable[..., Any] | Callable[..., Awaitable[Any]],
        *,
        returns: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        side_effects: bool = False,
        trust: Trust = "trusted",
        callers: Iterable[Caller] = CALLERS,
        annotations: Mapping[str, Any] | None = None,
        effects: Effects | None = None,
        retries: int = 0,
        retry_writes: bool = False,
        examples: Examples = (),
    ) -> Self:
        """Build a tool from a JSON Schema and a callable taking keyword arguments.

        ``side_effects``, ``effects``, ``retries``, ``retry_writes``, ``trust``,
        ``callers`` and ``examples`` mean what they mean for `tool`.
        """
        if not isinstance(parameters, Mapping):
            raise ToolDefinitionError(f"tool {name!r}: parameters must be a JSON Schema object")
        return cls(
            name=name,
            description=description,
            parameters=clean_schema(dict(parameters)),
            function=function,
            returns=clean_schema(dict(returns)) if returns is not None else None,
            timeout=timeout,
            side_effects=side_effects,
            effects=effects,
            retries=retries,
            retry_writes=retry_writes,
            trust=trust,
            callers=_callers(name, callers),
            annotations=dict(annotations or {}),
            examples=examples,  # type: ignore[arg-type]  # checked and made a tuple on init
        )


def _examples(name: str, given: object, parameters: JsonSchema) -> tuple[ToolExample, ...]:
    """`given` as `ToolExample`s, each checked against the parameters; an error names the first
    that does not fit, by its index."""
    if given is None:
        return ()
    if isinstance(given, str | bytes | Mapping) or not isinstance(given, Iterable):
        raise ToolDefinitionError(
            f"tool {name!r}: examples must be a list of ToolExample or "
            f"{{'arguments': {{...}}, 'result': ...}} dicts, got {type(given).__name__}"
        )
    items = list(given)
    if not items:
        return ()
    checker: ArgumentChecker | None = None
    out: list[ToolExample] = []
    for index, item in enumerate(items):
        where = f"tool {name!r}: example {index}"
        example = _example(where, item)
        try:
            json.dumps(dict(example.arguments), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ToolDefinitionError(f"{where}: arguments must be JSON values ({exc})") from None
        checker = checker or ArgumentChecker(parameters)
        try:
            arguments, _ = checker.check(dict(example.arguments))
        except ArgumentsError as exc:
            raise ToolDefinitionError(f"{where} does not fit the parameters: {exc}") from exc
        out.append(ToolExample(arguments, example.result))
    return tuple(out)


def _example(where: str, item: object) -> ToolExample:
    if isinstance(item, ToolExample):
        example = item
    elif isinstance(item, Mapping):
        unknown = sorted(str(k) for k in item if k not in ("arguments", "result"))
        if "arguments" not in item or unknown:
            said = f"unknown keys {unknown}" if unknown else "no 'arguments'"
            raise ToolDefinitionError(
                f"{where}: a dict example is {{'arguments': {{...}}, 'result': ...}} "
                f"('result' optional); this one has {said}"
            )
        example = ToolExample(item["arguments"], item.get("result", NO_RESULT))
    else:
        raise ToolDefinitionError(
            f"{where}: expected a ToolExample or a dict {{'arguments': {{...}}, 'result': ...}}, "
            f"got {type(item).__name__}"
        )
    if not isinstance(example.arguments, Mapping):
        raise ToolDefinitionError(
            f"{where}: arguments must be a dict of parameter names to values, "
            f"got {type(example.arguments).__name__}"
        )
    return example


def _check_retries(name: str, effects: Effects, retries: object, retry_writes: object) -> None:
    """Refuse retries that are not a count, and retries of a write tool not declared safe."""
    if type(retries) is not int or retries < 0:
        raise ToolDefinitionError(
            f"tool {name!r}: retries must be a whole number of 0 or more, got {retries!r}"
        )
    if type(retry_writes) is not bool:
        raise ToolDefinitionError(
            f"tool {name!r}: retry_writes must be True or False, got {retry_writes!r}"
        )
    if retry_writes and (effects != "write" or not retries):
        raise ToolDefinitionError(
            f"tool {name!r}: retry_writes=True allows the retries of a write tool; this tool "
            f"declares effects={effects!r} and retries={retries}: drop it"
        )
    if effects == "write" and retries and not retry_writes:
        # A failed write may have acted before it failed: running it again could act twice.
        raise ToolDefinitionError(
            f"tool {name!r}: a write tool is not retried, since a failed call may have acted "
            "before it failed; declare effects='idempotent' if a repeat changes nothing more, "
            "or pass retry_writes=True if this tool fails only before it acts"
        )


def _effects(name: str, effects: str | None, side_effects: bool) -> tuple[Effects, bool]:
    """The declared effects and side effects, made to agree; an error if they cannot."""
    if effects is None:
        return ("write" if side_effects else "read"), side_effects
    if effects not in EFFECTS:
        raise ToolDefinitionError(
            f"tool {name!r}: effects must be 'read', 'idempotent' or 'write', got {effects!r}"
        )
    if effects == "read" and side_effects:
        raise ToolDefinitionError(
            f"tool {name!r}: effects='read' says it changes nothing, side_effects=True says it "
            "does; declare one"
        )
    return effects, effects != "read"


def _callers(name: str, callers: Iterable[str]) -> frozenset[Caller]:
    if isinstance(callers, str):
        callers = (callers,)
    chosen = frozenset(callers)
    unknown = sorted(chosen - CALLERS)
    if unknown or not chosen:
        raise ToolDefinitionError(
            f"tool {name!r}: callers must be a non-empty set of 'model' and 'script', "
            f"got {sorted(chosen)!r}"
        )
    return chosen  # type: ignore[return-value]


def python_identifier(name: str) -> str:
    """A valid Python identifier for a tool or parameter name (``from`` → ``from_``)."""
    ident = re.sub(r"\W", "_", name)
    if not ident or ident[0].isdigit():
        ident = "_" + ident
    if keyword.iskeyword(ident) or ident in {"print", "tools"}:
        ident += "_"
    return ident


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    side_effects: bool = False,
    trust: Trust = "trusted",
    callers: Iterable[Caller] = CALLERS,
    localns: Mapping[str, Any] | None = None,
    effects: Effects | None = None,
    retries: int = 0,
    retry_writes: bool = False,
    examples: Examples = (),
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    side_effects: bool = False,
    trust: Trust = "trusted",
    callers: Iterable[Caller] = CALLERS,
    localns: Mapping[str, Any] | None = None,
    effects: Effects | None = None,
    retries: int = 0,
    retry_writes: bool = False,
    examples: Examples = (),
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function (sync or async) into a `Tool`.

    The name is the function's, the description its docstring's prose, and
    the parameters come from the signature with descriptions from the
    docstring's Args / Parameters / :param: entries.

    Annotations are resolved in the function's module. Under
    ``from __future__ import annotations`` a type defined inside a function
    is not found there: define it at module level, or pass
    ``localns=locals()`` from the function that defines it.

    A `functools.partial` works too, given a ``name``: the arguments it binds
    are hidden from the model, and the description comes from the wrapped
    function's docstring.

    Args:
        name: override the tool name.
        description: override the description.
        timeout: seconds after which a call is abandoned with an error.
        side_effects: the tool changes something outside the run; a retried
            script will not run an identical successful call twice, and an
            approval policy is asked before each call (see `Agent`'s ``approval``).
        trust: ``"untrusted"`` for a tool whose results carry text from outside
            the run (mail, web pages, files): the provenance policy refuses a
            side-effecting call whose arguments only such text supplied.
        callers: who may call the tool: ``{"model"}`` (JSON or text calls only),
            ``{"script"}`` (only from a script of the code convention), or both.
            A call from anyone else is refused; the tool is left out of what the
            others are shown.
        localns: names to resolve annotations with after the module's own.
        effects: what a repeat of a call costs: ``"read"`` (the tool changes
            nothing), ``"idempotent"`` (it changes something, but the same call
            again changes nothing more) or ``"write"`` (each call acts again).
            ``idempotent`` and ``write`` mean ``side_effects``; ``side_effects=True``
            alone means ``write``. MCP's ``readOnlyHint`` and ``idempotentHint``
            say the same, and are read and published as these.
        retries: how many times a failed call runs again, at once and within the
            call's timeout, before its error is recorded (its `CallRecord.attempts`
            counts the runs). A failure is an exception the tool raises; a
            `ModelRetry` is a message for the model and is never retried. Only for
            ``read`` and ``idempotent`` tools: a ``write`` call that failed may have
            acted, so a write tool declaring ``retries`` is refused unless it also
            passes ``retry_writes=True``, its word that it fails only before acting.
        retry_writes: allow ``retries`` on a ``write`` tool (see ``retries``).
        examples: example calls, each a `ToolExample` or a dict
            ``{"arguments": {...}, "result": ...}`` (the result is optional). Each
            example's arguments are checked against the parameters when the tool is
            built: one that does not fit is a `ToolDefinitionError` naming its index.
            A model is shown them in its convention's own form: ``examples`` in the
            JSON Schema, ``input_examples`` for Anthropic, doctest lines in the stub
            module, calls in the text and plan prompts. Prefer them to a value in a
            parameter's description, which a model may copy into a real call.
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        built = Tool.from_function(
            f,
            name=name,
            description=description,
            timeout=timeout,
            side_effects=side_effects,
            trust=trust,
            callers=callers,
            localns=localns,
            effects=effects,
            retries=retries,
            retry_writes=retry_writes,
            examples=examples,
        )
        functools.update_wrapper(built, f, updated=())
        # A partial's own __doc__ describes functools.partial, not the tool.
        built.__doc__ = described_function(f).__doc__
        return built

    if fn is not None:
        return wrap(fn)
    return wrap
