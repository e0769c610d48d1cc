"""tooluse: a runtime for language-model agents that call tools.

The names below are loaded on first use (PEP 562): ``import tooluse`` costs the
exceptions alone, so a process that needs one part (an MCP server, the sandbox's
host, a command's ``--help``) does not pay for pydantic, jsonschema and the agent
loop. ``from tooluse import Agent`` imports what ``Agent`` needs, once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._exceptions import (
    AlreadyResumedError,
    InvalidCallError,
    MediaError,
    ModelAuthError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelError,
    ModelRateLimitError,
    ModelResponseError,
    ModelRetry,
    ModelServerError,
    ModelTimeoutError,
    ResumeError,
    ToolDefinitionError,
    ToolUseError,
    UsageError,
)

if TYPE_CHECKING:
    from ._expect import Expect
    from ._messages import Message, ToolCall, Usage
    from ._records import CallRecord, RejectedCall
    from .dispatch._dispatch import DirectRun, Dispatcher, Ledger
    from .dispatch._scripts import ScriptRun, arun_script, run_script
    from .media import Audio, Image, Resource
    from .policy._approval import (
        Approval,
        ApprovalPolicy,
        ApprovalRecord,
        ApprovalRequest,
        ProvenancePolicy,
    )
    from .policy._approval_store import ApprovalStore
    from .policy._provenance import FREE_TEXT, Suspicious
    from .run._agent import Agent
    from .run._conversation import Conversation, ConversationStore
    from .run._limits import Limits
    from .run._result import RunResult, RunStatus, RunUsage
    from .run._stream import (
        ApprovalEvent,
        CallEndEvent,
        CallStartEvent,
        ContextEvent,
        DoneEvent,
        RoundEndEvent,
        RunStream,
        ScriptEndEvent,
        ScriptOutputEvent,
        ScriptStartEvent,
        StreamEvent,
        SyncRunStream,
        TextEvent,
    )
    from .run._trace import JsonlTrace, read_trace
    from .tools import RunContext, Tool, Toolbox, ToolExample, tool

_LAZY: dict[str, str] = {
    "Agent": ".run._agent",
    "Approval": ".policy._approval",
    "ApprovalEvent": ".run._stream",
    "ApprovalPolicy": ".policy._approval",
    "ApprovalRecord": ".policy._approval",
    "ApprovalRequest": ".policy._approval",
    "ApprovalStore": ".policy._approval_store",
    "Audio": ".media",
    "CallEndEvent": ".run._stream",
    "CallRecord": "._records",
    "CallStartEvent": ".run._stream",
    "ContextEvent": ".run._stream",
    "Conversation": ".run._conversation",
    "ConversationStore": ".run._conversation",
    "DirectRun": ".dispatch._dispatch",
    "Dispatcher": ".dispatch._dispatch",
    "DoneEvent": ".run._stream",
    "Expect": "._expect",
    "Image": ".media",
    "FREE_TEXT": ".policy._provenance",
    "JsonlTrace": ".run._trace",
    "Ledger": ".dispatch._dispatch",
    "Limits": ".run._limits",
    "Message": "._messages",
    "ProvenancePolicy": ".policy._approval",
    "RejectedCall": "._records",
    "Resource": ".media",
    "RoundEndEvent": ".run._stream",
    "RunContext": ".tools",
    "RunResult": ".run._result",
    "RunStatus": ".run._result",
    "RunStream": ".run._stream",
    "RunUsage": ".run._result",
    "ScriptEndEvent": ".run._stream",
    "ScriptOutputEvent": ".run._stream",
    "ScriptRun": ".dispatch._scripts",
    "ScriptStartEvent": ".run._stream",
    "StreamEvent": ".run._stream",
    "Suspicious": ".policy._provenance",
    "SyncRunStream": ".run._stream",
    "TextEvent": ".run._stream",
    "Tool": ".tools",
    "ToolCall": "._messages",
    "ToolExample": ".tools",
    "Toolbox": ".tools",
    "Usage": "._messages",
    "arun_script": ".dispatch._scripts",
    "read_trace": ".run._trace",
    "run_script": ".dispatch._scripts",
    "tool": ".tools",
}

__all__ = [
    "FREE_TEXT",
    "Agent",
    "AlreadyResumedError",
    "Approval",
    "ApprovalEvent",
    "ApprovalPolicy",
    "ApprovalRecord",
    "ApprovalRequest",
    "ApprovalStore",
    "Audio",
    "CallEndEvent",
    "CallRecord",
    "CallStartEvent",
    "ContextEvent",
    "Conversation",
    "ConversationStore",
    "DirectRun",
    "Dispatcher",
    "DoneEvent",
    "Expect",
    "Image",
    "InvalidCallError",
    "JsonlTrace",
    "Ledger",
    "Limits",
    "MediaError",
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
    "Resource",
    "ResumeError",
    "RoundEndEvent",
    "RunContext",
    "RunResult",
    "RunStatus",
    "RunStream",
    "RunUsage",
    "ScriptEndEvent",
    "ScriptOutputEvent",
    "ScriptRun",
    "ScriptStartEvent",
    "StreamEvent",
    "Suspicious",
    "SyncRunStream",
    "TextEvent",
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


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    # Kept, so the next lookup does not come back here.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
