"""A run: the `Agent`, its loop over model rounds, streams, traces and the result."""

from ._agent import Agent
from ._result import RunResult, RunStatus, RunUsage
from ._trace import JsonlTrace, read_trace

__all__ = ["Agent", "JsonlTrace", "RunResult", "RunStatus", "RunUsage", "read_trace"]
