"""The exported names are the public contract: a change here must be deliberate."""

from __future__ import annotations

import importlib
import pkgutil

import tooluse
import tooluse.context
import tooluse.models


def test_top_level_exports() -> None:
    assert sorted(tooluse.__all__) == sorted(
        [
            "Agent",
            "TextEvent",
            "StreamEvent",
            "SyncRunStream",
            "ScriptStartEvent",
            "ScriptOutputEvent",
            "ScriptEndEvent",
            "RunStream",
            "RoundEndEvent",
            "DoneEvent",
            "ContextEvent",
            "CallStartEvent",
            "CallEndEvent",
            "ApprovalEvent",
            "Approval",
            "FREE_TEXT",
            "ApprovalPolicy",
            "ApprovalRecord",
            "ApprovalRequest",
            "ApprovalStore",
            "AlreadyResumedError",
            "CallRecord",
            "Conversation",
            "ConversationStore",
            "DirectRun",
            "Dispatcher",
            "Expect",
            "InvalidCallError",
            "Image",
            "Audio",
            "Resource",
            "MediaError",
            "JsonlTrace",
            "Ledger",
            "Limits",
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
            "ProvenancePolicy",
            "RejectedCall",
            "ResumeError",
            "RunContext",
            "RunResult",
            "RunStatus",
            "RunUsage",
            "Suspicious",
            "ScriptRun",
            "Tool",
            "ToolCall",
            "ToolDefinitionError",
            "ToolExample",
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


def _public_modules() -> list[str]:
    """``tooluse`` and every module under it whose dotted name has no underscore part."""
    names = [info.name for info in pkgutil.walk_packages(tooluse.__path__, "tooluse.")]
    public = [n for n in names if not any(part.startswith("_") for part in n.split("."))]
    return ["tooluse", *sorted(public)]


def test_every_public_module_exports_what_it_lists() -> None:
    for name in _public_modules():
        module = importlib.import_module(name)
        exported = getattr(module, "__all__", None)
        assert exported is not None, f"{name} has no __all__"
        assert len(set(exported)) == len(exported), f"{name}.__all__ repeats a name"
        for attr in exported:
            assert hasattr(module, attr), f"{name}.{attr}"


def test_subpackages_export_their_core_names() -> None:
    assert {"Model", "ModelRequest", "ModelResponse", "ScriptedModel", "LocalModel"} <= set(
        tooluse.models.__all__
    )
    # The README puts a budget on the window with ContextPolicy; users import it from here.
    assert {"ContextPolicy", "ContextStore"} <= set(tooluse.context.__all__)
