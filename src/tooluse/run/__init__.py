"""A run: the `Agent`, its loop over model rounds, streams, traces and the result."""

from ._agent import Agent
from ._conversation import Conversation, ConversationInfo, ConversationStore, Turn
from ._limits import Limits
from ._result import RunResult, RunStatus, RunUsage
from ._trace import JsonlTrace, read_trace

__all__ = [
    "Agent",
    "Conversation",
    "ConversationInfo",
    "ConversationStore",
    "JsonlTrace",
    "Limits",
    "RunResult",
    "RunStatus",
    "RunUsage",
    "Turn",
    "read_trace",
]
