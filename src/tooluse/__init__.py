"""tooluse: a runtime for language-model agents that call tools."""

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
from .tools import RunContext, Tool, Toolbox, tool

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
    "ToolUseError",
    "Toolbox",
    "Usage",
    "UsageError",
    "arun_script",
    "read_trace",
    "run_script",
    "tool",
]
