"""Toolbox names: refused when two tools would be one, and kept apart from the helpers."""

from __future__ import annotations

from typing import Any

import pytest

from tooluse import Agent, Limits, Tool, Toolbox, ToolDefinitionError
from tooluse.context._window import ContextPolicy
from tooluse.models import ScriptedModel
from tooluse.sandbox._types import RESERVED_NAMES


def raw(name: str, properties: dict[str, Any] | None = None) -> Tool:
    def run(**arguments: Any) -> str:
        return f"{name} {sorted(arguments.items())}"

    schema = {"type": "object", "properties": properties or {}}
    return Tool.from_schema(name, f"The {name} tool.", schema, run)


def test_names_that_become_one_python_name_are_refused_naming_both() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Toolbox([raw("files.read"), raw("files-read")])
    message = str(info.value)
    assert "'files.read'" in message and "'files-read'" in message and "files_read" in message


def test_adding_or_merging_a_clashing_name_is_refused() -> None:
    box = Toolbox([raw("files_read")])
    with pytest.raises(ToolDefinitionError, match=r"'files_read' and 'files\.read'"):
        box.add(raw("files.read"))
    assert box.names == ["files_read"]
    with pytest.raises(ToolDefinitionError, match="'files_read' and 'files-read'"):
        box.merged(Toolbox([raw("files-read")]))


def test_parameters_that_become_one_python_name_are_refused() -> None:
    clash = raw("lookup", {"user-id": {"type": "string"}, "user_id": {"type": "string"}})
    with pytest.raises(ToolDefinitionError) as info:
        Toolbox([clash])
    message = str(info.value)
    assert "'lookup'" in message and "'user-id'" in message and "'user_id'" in message


def test_same_name_is_still_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="two tools are named 'ping'"):
        Toolbox([raw("ping"), raw("ping")])


def test_tools_named_like_the_tool_modules_helpers_are_renamed_in_stubs() -> None:
    box = Toolbox([raw(name) for name in sorted(RESERVED_NAMES)])
    functions = {s.tool: s.function for s in box.stub_signatures()}
    assert functions == {name: f"{name}_" for name in RESERVED_NAMES}
    source = box.stub_module()
    assert all(f"def {name}_(" in source and f"def {name}(" not in source for name in functions)
    with pytest.raises(ToolDefinitionError, match="'parallel' and 'parallel_'"):
        Toolbox([raw("parallel"), raw("parallel_")])


def test_a_tool_named_parallel_runs_beside_the_helper(agents: list[Agent]) -> None:
    script = (
        "import tools\nprint(tools.parallel_())\nprint(tools.parallel(tools.parallel_, [{}, {}]))\n"
    )
    model = ScriptedModel([{"content": f"```python\n{script}```"}, {"content": "done"}])
    agent = Agent(model, [raw("parallel")], convention="code", limits=Limits(script_timeout=20))
    agents.append(agent)
    result = agent.run("task")
    assert result.status == "completed", result.error
    assert [c.name for c in result.calls] == ["parallel"] * 3
    printed = result.scripts[0].stdout.splitlines()
    assert printed == ["parallel []", "['parallel []', 'parallel []']"]


def test_agent_refuses_a_tool_that_clashes_with_a_context_tool() -> None:
    model = ScriptedModel([{"content": "unused"}])
    for name in ("context_query", "context.query"):
        with pytest.raises(ToolDefinitionError, match="context_query"):
            Agent(model, [raw(name)], context=ContextPolicy())
    # Without the context tools the name is free.
    Agent(model, [raw("context_query")], context=ContextPolicy(agent_tools=False))
    Agent(model, [raw("context_query")])
