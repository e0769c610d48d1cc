"""Prompt tokens for the five example tools: our JSON tool block and code-convention prompt
beside the peers' equivalents, all counted with o200k_base in the same run.

    python bench/prompt_size.py

JSON tool blocks are counted as compact JSON of the chat-completions ``tools``
array, which is what goes over the wire. A peer that is not installed is
reported, not estimated.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# `examples` ships with the checkout, not with the package: find it beside bench/.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples.seed_tools import toolbox
from tooluse._tokens import count_tokens
from tooluse.conventions import CodeConvention

FUNCTIONS = [t.function for t in toolbox]


def compact(value: Any) -> int:
    return count_tokens(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def ours_json() -> int:
    return compact(toolbox.to_openai())


def ours_code_prompt() -> int:
    return count_tokens(CodeConvention().prepare(toolbox, None).system_prompt or "")


def ours_stubs() -> int:
    return count_tokens(toolbox.stub_module())


def pydantic_ai_json() -> int:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    seen: dict[str, Any] = {}

    def reply(messages: Any, info: AgentInfo) -> ModelResponse:
        seen["tools"] = info.function_tools
        return ModelResponse(parts=[TextPart("ok")])

    Agent(FunctionModel(reply), tools=FUNCTIONS).run_sync("hi")
    return compact(
        [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters_json_schema,
                },
            }
            for t in seen["tools"]
        ]
    )


def openai_agents_json() -> int:
    from agents import function_tool
    from agents.models.chatcmpl_converter import Converter

    return compact([Converter.tool_to_openai(function_tool(f)) for f in FUNCTIONS])


def _smol_tools() -> list[Any]:
    from smolagents import tool as smol_tool

    return [smol_tool(f) for f in FUNCTIONS]


def smolagents_json() -> int:
    from smolagents.models import get_tool_json_schema

    return compact([get_tool_json_schema(t) for t in _smol_tools()])


def smolagents_code_prompt() -> int:
    from smolagents import CodeAgent
    from smolagents.models import Model

    class Unused(Model):  # type: ignore[misc]
        def generate(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    agent = CodeAgent(tools=_smol_tools(), model=Unused(model_id="unused"))
    return count_tokens(agent.system_prompt)


def smolagents_stubs() -> int:
    tools = _smol_tools()
    return count_tokens("\n\n".join(t.to_code_prompt() for t in tools))


ROWS: list[tuple[str, str, Callable[[], int]]] = [
    ("tooluse", "JSON tool schemas", ours_json),
    ("pydantic-ai", "JSON tool schemas", pydantic_ai_json),
    ("openai-agents", "JSON tool schemas", openai_agents_json),
    ("smolagents", "JSON tool schemas", smolagents_json),
    ("tooluse", "code-convention prompt (whole)", ours_code_prompt),
    ("smolagents", "CodeAgent system prompt (whole)", smolagents_code_prompt),
    # As reported by Patel et al. (2026) for their programmatic-calling prompt.
    ("Patel et al.", "fixed block of programmatic calling", lambda: 3122),
    ("tooluse", "stub module alone", ours_stubs),
    ("smolagents", "tool stubs alone", smolagents_stubs),
]


def main() -> None:
    print(f"{'who':<15}{'what':<38}{'o200k tokens':>13}")
    print("-" * 66)
    results: list[dict[str, Any]] = []
    for who, what, measure in ROWS:
        try:
            tokens: int | None = measure()
            shown = f"{tokens:>13,}"
        except ImportError as exc:
            tokens, shown = None, f"{'not installed (' + str(exc.name) + ')':>13}"
        print(f"{who:<15}{what:<38}{shown}")
        results.append({"who": who, "what": what, "tokens": tokens})
    print(json.dumps({"bench": "prompt_size", "tokenizer": "o200k_base", "rows": results}))


if __name__ == "__main__":
    main()
