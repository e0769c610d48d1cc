"""AgentDojo's tools as tooluse tools, with annotations read off the suite itself.

Each AgentDojo `Function` becomes a raw-schema `Tool` whose schema is the
function's own input model and whose call goes through AgentDojo's own
`FunctionsRuntime.run_function` against the run's environment, so a tool does
exactly what it does in AgentDojo (argument coercion, errors, state changes).
Results are the functions' return values as JSON data; an error the runtime
reports (``ValueError: …``) is what the model is shown.

Two annotations decide what a defence sees, and both are derived the same way
for every tool of every suite, never per task (`tool_facts`):

- ``side_effects``: a tool has side effects when a call of it changed the
  environment. Every user and injection task's ground-truth calls are replayed
  in order on a fresh environment and the environment is compared before and
  after each call; a tool with one changing call has side effects. Reading
  mail (`get_unread_emails` marks it read) and fetching a page (`get_webpage`
  logs the request) count, as they change state someone else can observe.
- ``trust``: a tool is untrusted when text an attacker placed in the
  environment reaches its results. The same replay runs with a canary in every
  injection vector AgentDojo declares (its own method for finding where a task
  can be attacked); a tool whose result ever held a canary is untrusted.

A tool no ground truth calls is given the worst case: untrusted, with side
effects. Functions shared by several suites (the calendar, e-mail) pool their
side-effect observations, since that is a property of the code; trust is per
suite, since it depends on the suite's data.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ... import ModelRetry
from ...tools import Tool, Toolbox, Trust
from ._suites import Suite

__all__ = ["ToolFacts", "build_toolbox", "tool_facts"]

# Where AgentDojo's canary method marks injection vectors.
_CANARY = "<CANARY---{}--->"


@dataclass(frozen=True, slots=True)
class ToolFacts:
    """What the replay showed about one tool of one suite.

    `calls` counts the ground-truth calls observed; with none, the tool gets
    the worst case and `observed` is False.
    """

    name: str
    side_effects: bool
    untrusted: bool
    calls: int

    @property
    def observed(self) -> bool:
        return self.calls > 0

    @property
    def trust(self) -> Trust:
        return "untrusted" if self.untrusted else "trusted"


_FACTS: dict[tuple[str, str], dict[str, ToolFacts]] = {}


def tool_facts(suite: Suite) -> dict[str, ToolFacts]:
    """Each tool's annotations for `suite`, by tool name (computed once per process)."""
    key = (suite.version, suite.name)
    if key not in _FACTS:
        changes: dict[Callable[..., Any], bool] = {}
        for other in suite.siblings():
            _replay(other, changes, canaries=None)
        canaried: dict[str, bool] = {}
        counts = _replay(suite, {}, canaries=canaried)
        facts = {}
        for function in suite.tools:
            n = counts.get(function.name, 0)
            facts[function.name] = ToolFacts(
                name=function.name,
                side_effects=changes.get(function.run, True),
                untrusted=canaried.get(function.name, True) if n else True,
                calls=n,
            )
        _FACTS[key] = facts
    return _FACTS[key]


def _replay(
    suite: Suite, changes: dict[Callable[..., Any], bool], *, canaries: dict[str, bool] | None
) -> dict[str, int]:
    """Run every task's ground truth call by call; note changes and canaries seen.

    `changes` maps a tool's function to whether one of its calls changed the
    environment; `canaries`, when given, maps a tool's name to whether one of
    its results held a canary. Returns how many calls each tool received.
    """
    from agentdojo.functions_runtime import FunctionsRuntime

    vectors = suite.raw.get_injection_vector_defaults()
    marks = [_CANARY.format(vector) for vector in vectors]
    # Loading parses the suite's YAML, which takes long: load once, copy per task.
    loaded = suite.raw.load_and_inject_default_environment(dict(zip(vectors, marks, strict=True)))
    runtime = FunctionsRuntime(suite.tools)
    by_name = {f.name: f for f in suite.tools}
    counts: dict[str, int] = {}
    for task in suite.all_tasks():
        env = loaded.model_copy(deep=True)
        if hasattr(task, "init_environment"):
            env = task.init_environment(env)
        for call in task.ground_truth(env.model_copy(deep=True)):
            function = by_name.get(call.function)
            if function is None:
                continue
            before = env.model_dump()
            result, _ = runtime.run_function(env, call.function, call.args)
            counts[call.function] = counts.get(call.function, 0) + 1
            changes[function.run] = changes.get(function.run, False) or env.model_dump() != before
            if canaries is not None:
                text = repr(_plain(result))
                seen = any(mark in text for mark in marks)
                canaries[call.function] = canaries.get(call.function, False) or seen
    return counts


def _plain(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value, fallback=str)


def build_toolbox(
    suite: Suite,
    runtime: Any,
    environment: Any,
    *,
    annotate: Callable[[ToolFacts], dict[str, Any]] | None = None,
) -> Toolbox:
    """The suite's tools, each calling AgentDojo's `runtime` on `environment`.

    `annotate` turns a tool's facts into keyword arguments for
    `Tool.from_schema` (by default ``side_effects`` and ``trust``).
    """
    facts = tool_facts(suite)
    annotate = annotate or (lambda f: {"side_effects": f.side_effects, "trust": f.trust})
    return Toolbox(
        _tool(function, runtime, environment, annotate(facts[function.name]))
        for function in suite.tools
    )


def _tool(function: Any, runtime: Any, environment: Any, annotations: dict[str, Any]) -> Tool:
    name = function.name

    def call(**arguments: Any) -> Any:
        result, error = runtime.run_function(environment, name, arguments)
        if error is not None:
            raise ModelRetry(error)
        return result

    return Tool.from_schema(
        name,
        function.description,
        _schema(function.parameters.model_json_schema()),
        call,
        **annotations,
    )


def _schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema without pydantic's titles, which only repeat the names."""
    cleaned = copy.deepcopy(schema)
    for node in _nodes(cleaned):
        node.pop("title", None)
    return cleaned


def _nodes(schema: Any) -> Iterable[dict[str, Any]]:
    if isinstance(schema, dict):
        yield schema
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                for sub in value.values():
                    yield from _nodes(sub)
            elif key != "properties":
                yield from _nodes(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _nodes(item)
