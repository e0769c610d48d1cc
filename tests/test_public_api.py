"""The exported names are the public contract: a change here must be deliberate."""

from __future__ import annotations

import tooluse
import tooluse.models
import tooluse.tools


def test_top_level_exports() -> None:
    assert sorted(tooluse.__all__) == sorted(
        [
            "Agent",
            "CallRecord",
            "Dispatcher",
            "Expect",
            "JsonlTrace",
            "Ledger",
            "Message",
            "ModelAuthError",
            "ModelBadRequestError",
            "ModelConnectionError",
            "ModelError",
            "ModelRateLimitError",
            "ModelResponseError",
            "ModelRetry",
            "ModelServerError",
            "ModelTimeoutError",
            "RejectedCall",
            "RunResult",
            "RunStatus",
            "RunUsage",
            "ScriptRun",
            "Tool",
            "ToolCall",
            "ToolDefinitionError",
            "ToolUseError",
            "Toolbox",
            "Usage",
            "UsageError",
            "arun_script",
            "read_trace",
            "run_script",
            "tool",
        ]
    )
    for name in tooluse.__all__:
        assert hasattr(tooluse, name), name


def test_subpackage_exports_resolve() -> None:
    for module in (tooluse.models, tooluse.tools):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"
    assert {"Model", "ModelRequest", "ModelResponse", "ScriptedModel"} <= set(
        tooluse.models.__all__
    )
