"""Our MCP server under pydantic-ai's MCP client, driven by one of its agents.

The agent's model is pydantic-ai's `FunctionModel`, scripted here: it calls a tool
with a misspelled argument, reads the error our dispatcher wrote, calls again
correctly and answers with the result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from examples.seed_tools import toolbox
from tooluse.mcp import ToolServer

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models.function import AgentInfo


async def test_a_pydantic_ai_agent_uses_our_tools_and_reads_our_errors() -> None:
    # Imported here: pydantic-ai takes over a second to import, which each test worker
    # would otherwise pay while collecting.
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    events: list[dict[str, Any]] = []
    seen: dict[str, Any] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen["tools"] = {t.name: t.parameters_json_schema for t in info.function_tools}
        returned = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if not returned:
            arguments = {"base": "USD", "traget": "EUR"}
        elif returned[-1].outcome == "retried":
            seen["error"] = returned[-1].content
            arguments = {"base": "USD", "target": "EUR"}
        else:
            return ModelResponse(parts=[TextPart(f"The rate is {returned[-1].content}.")])
        return ModelResponse(parts=[ToolCallPart("get_exchange_rate", arguments)])

    server = ToolServer(toolbox, on_event=events.append)
    async with server.serving_http() as url:
        agent = Agent(FunctionModel(model), toolsets=[MCPToolset(url)])
        result = await agent.run("Convert 100 USD to EUR")
    server.close()

    assert seen["tools"] == {
        t["function"]["name"]: t["function"]["parameters"] for t in toolbox.to_openai()
    }
    assert seen["error"] == events[0]["error"]  # what our dispatcher wrote
    assert "did you mean 'target'" in seen["error"]
    assert [(e["event"], e["name"]) for e in events] == [
        ("rejected", "get_exchange_rate"),
        ("call", "get_exchange_rate"),
    ]
    assert result.output == f"The rate is {events[1]['result']}."
