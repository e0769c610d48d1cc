"""Exceptions raised by tooluse.

Three families are kept apart: errors meant for the developer (usage mistakes),
errors from the machinery (a model backend, the sandbox), and errors meant for
the model (a call it wrote that cannot be used, a tool asking it to try again).
A failed *run* is not an exception: it is a `RunResult` whose status says what
happened. Every class below is importable from ``tooluse`` or from the
subpackage named beside it.

    ToolUseError
    ├── UsageError                 the library was called wrongly
    │   ├── ToolDefinitionError    a tool cannot be turned into a schema
    │   ├── ResumeError            a paused run cannot be resumed with those decisions
    │   │   └── AlreadyResumedError  that paused state was resumed already
    │   ├── GrammarError           llguidance refused a grammar (tooluse.decoding)
    │   ├── ItemIdConflictError    an item id already names other text (tooluse.context)
    │   ├── UnknownRunError        no durable run has that id (tooluse.durable)
    │   ├── NotPendingError        no call of that run waits for that decision (tooluse.durable)
    │   ├── RunVersionError        a durable run was started with other tools (tooluse.durable)
    │   ├── MediaError             a media value is bad or too large (tooluse.media)
    │   ├── BenchDataError         a suite's data is missing or malformed (tooluse.eval)
    │   │   └── TaskFileError      a task file of your own cannot be read (tooluse.eval)
    │   └── ModelFileError         a local model file is missing or fails its hash (tooluse.models)
    │       └── ModelDownloadError a model could not be downloaded (tooluse.models)
    ├── ModelError                 a model backend failed
    │   ├── ModelAuthError         credentials missing or refused (not retried)
    │   ├── ModelBadRequestError   the request was rejected as invalid (not retried)
    │   ├── ModelRateLimitError    429 after all retries
    │   ├── ModelTimeoutError      no answer in time after all retries
    │   ├── ModelConnectionError   the server could not be reached after all retries
    │   ├── ModelServerError       5xx after all retries
    │   └── ModelResponseError     the backend answered with a malformed body
    ├── SandboxError               the sandbox engine failed (tooluse.sandbox)
    │   └── SandboxUnavailable     isolation="required", and no isolated sandbox can start
    ├── DurableError               durable runs could not be recorded or recovered (tooluse.durable)
    │   ├── DurableStoreError      their database cannot be opened, reached or read
    │   └── RunDivergedError       a recovered run asked for other steps than it recorded
    ├── MCPError                   an MCP server could not be used (tooluse.mcp)
    │   ├── MCPStartError          the server did not start, or did not finish the handshake
    │   ├── MCPConnectionError     the connection was lost: the server exited or stopped answering
    │   └── MCPCallError           the server answered a call with a protocol error
    └── InvalidCallError           a call as the model wrote it cannot be used
        ├── ArgumentsError         its arguments are not a JSON object (tooluse.tools)
        ├── CallSyntaxError        text does not read as calls (tooluse.conventions)
        ├── PlanError              a plan cannot run as written (tooluse.conventions)
        └── PlanEvaluationError    a plan's expression failed while it ran (tooluse.conventions)

Outside the tree, on purpose, because they are signals rather than failures:

    ModelRetry                     raised by tool code: the message goes to the model
    tools.ToolError                raised inside a sandboxed script when a call fails
                                   on the host; it never reaches the host
    SandboxWarning                 a RuntimeWarning: scripts run without isolation

`GrammarError`, `ArgumentsError` and `CallSyntaxError` are also `ValueError`s, as
they were before they joined the tree; `MediaError` is one too, so that pydantic words
it as a validation error when a tool's argument is a bad image.
"""

from __future__ import annotations

__all__ = [
    "AlreadyResumedError",
    "DurableError",
    "DurableStoreError",
    "InvalidCallError",
    "MediaError",
    "ModelAuthError",
    "ModelBadRequestError",
    "ModelConnectionError",
    "ModelError",
    "ModelRateLimitError",
    "ModelResponseError",
    "ModelRetry",
    "ModelServerError",
    "ModelTimeoutError",
    "NotPendingError",
    "ResumeError",
    "RunDivergedError",
    "RunVersionError",
    "ToolDefinitionError",
    "ToolUseError",
    "UnknownRunError",
    "UsageError",
]


class ToolUseError(Exception):
    """Base class of every exception tooluse raises on purpose."""


class UsageError(ToolUseError):
    """The library was used in a way it does not support."""


class ToolDefinitionError(UsageError):
    """A function or schema cannot be turned into a tool."""


class ResumeError(UsageError):
    """A paused run cannot be resumed: it did not pause, or the decisions do not fit it."""


class AlreadyResumedError(ResumeError):
    """The paused state was resumed already, from this copy or another.

    Each approval is used once: the decisions a paused run was resumed with cannot
    run its calls again through a copy of it (see `ApprovalStore`).
    """


class MediaError(UsageError, ValueError):
    """A media value is not what it says (not an image, truncated, an unknown MIME
    type) or is larger than the configured limit."""


class UnknownRunError(UsageError):
    """No durable run has the id given."""


class NotPendingError(UsageError):
    """A decision was given for a call that does not wait for one in that durable run."""


class RunVersionError(UsageError):
    """A durable run was started by an agent with other tools, convention or release.

    It is recovered only by an agent like the one that started it: recorded steps
    answered for other tools would go another way than they did.
    """


class DurableError(ToolUseError):
    """Durable runs could not be recorded or recovered."""


class DurableStoreError(DurableError):
    """The database of durable runs cannot be opened, reached, or read by this release."""


class RunDivergedError(DurableError):
    """A recovered run asked for another step than the one its record holds at that place.

    The run is left as recorded: nothing is run in place of the recorded step.
    """


class ModelError(ToolUseError):
    """A model backend failed to produce a response."""

    #: Whether the backend's retry policy applies to this failure.
    retryable: bool = False


class ModelAuthError(ModelError):
    """Credentials were missing or refused."""


class ModelBadRequestError(ModelError):
    """The backend rejected the request as invalid."""


class ModelRateLimitError(ModelError):
    """The backend kept answering 429 (too many requests)."""

    retryable = True


class ModelTimeoutError(ModelError):
    """The backend did not answer in time."""

    retryable = True


class ModelConnectionError(ModelError):
    """The backend could not be reached."""

    retryable = True


class ModelServerError(ModelError):
    """The backend kept failing with a server error (5xx)."""

    retryable = True


class ModelResponseError(ModelError):
    """The backend answered, but the body was not a usable response."""


class InvalidCallError(ToolUseError):
    """A tool call as the model wrote it cannot be used.

    The message is written for the model: the runtime sends it back as the
    call's error so that the model can correct the call.
    """


class ModelRetry(Exception):
    """Raised inside a tool to send `message` to the model as the call's error.

    Use it when the model can fix the problem itself (a bad id, a date in the
    wrong format); the message should say how.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
