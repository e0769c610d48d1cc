"""`RunResult`: everything a run produced."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Literal, overload

from pydantic import ValidationError
from typing_extensions import TypeVar

from .._exceptions import UsageError
from .._messages import Message, Usage
from .._records import CallRecord, RejectedCall, ScriptRecord
from .._written import VERSION, read, version_of, write
from ..policy._approval import ApprovalRecord, ApprovalRequest
from ..policy._provenance import Suspicious
from ..tools._output import OutputSpec
from ._state import Paused, paused_from_dict, paused_to_dict

__all__ = ["RESULT_VERSION", "RunResult", "RunStatus", "RunUsage"]

#: The version of the form `RunResult.to_dict` writes; absent (0) in earlier releases.
RESULT_VERSION = 1
#: The versions `RunResult.from_dict` reads.
READ_VERSIONS = (0, 1)

#: The type of `RunResult.output`; a result of a run without one is a ``RunResult[Any]``.
OutputT = TypeVar("OutputT", default=Any)
_T = TypeVar("_T")

RunStatus = Literal[
    "completed", "max_rounds", "truncated", "cycle", "cancelled", "needs_approval", "error"
]


@dataclass(slots=True)
class RunUsage:
    """Token usage per round and in total.

    `asides` are requests made outside the rounds (the scope question, see
    `tooluse.policy._scope`); the totals count them.
    """

    rounds: list[Usage] = field(default_factory=list)
    asides: list[Usage] = field(default_factory=list)

    @property
    def input_tokens(self) -> int:
        return sum(u.input_tokens for u in [*self.rounds, *self.asides])

    @property
    def output_tokens(self) -> int:
        return sum(u.output_tokens for u in [*self.rounds, *self.asides])

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def source(self) -> str:
        """``provider``, ``o200k``, ``mixed`` or ``none``: where the numbers came from."""
        sources = {u.source for u in [*self.rounds, *self.asides]}
        if not sources:
            return "none"
        return sources.pop() if len(sources) == 1 else "mixed"

    def to_dict(self) -> dict[str, Any]:
        """The written form: the totals (for a reader), then each request's usage."""
        totals = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "source": self.source,
        }
        return {**totals, **write(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunUsage:
        """The usage `to_dict` wrote; the totals are counted again, not read."""
        return read(cls, data, ignore=("input_tokens", "output_tokens", "source"))


@dataclass(slots=True)
class RunResult(Generic[OutputT]):
    """The outcome of `Agent.run`.

    `status` is ``completed`` (the model answered), ``max_rounds`` (the round
    limit stopped it), ``truncated`` (the answer covers fewer items than the
    request needs), ``cycle`` (the model kept repeating an identical call with
    an identical result), ``cancelled`` (Ctrl-C, or the task running `arun`
    was cancelled; a call cut short is not recorded), ``needs_approval`` (the
    approval policy deferred a call: `pending` lists the requests, and
    `Agent.resume` continues the run once they are decided) or ``error`` (the
    model backend failed; `error` says how). Whatever the status, everything
    recorded up to the stop is kept.

    `approvals` logs every decision the approval policy, a resume or the
    run's memory of denials took. `to_dict` keeps everything, the paused state
    included, and `from_dict` reads it back: a paused run can be resumed in
    another process.

    `untrusted_in_answer`, under a policy that tracks provenance
    (``approval="provenance"``), names the identifiers and names the answer
    repeats that only untrusted results held (`Provenance.repeated`): what a
    reader of the answer should know came from a mail, a web page or a file,
    such as a recommendation an injected text planted. They are reported, not
    removed.

    `sink_errors` counts the trace events a sink (the trace file, `on_event`)
    failed to take; they never change the run.

    `output`, in a run with an output type, is the value the run ended with, of
    that type (`answer` is its JSON text); None when the run has no output type
    or did not end with a valid value. The written form keeps it as JSON, read
    back typed by ``from_dict(data, output_type=...)``.
    """

    answer: str | None
    status: RunStatus
    calls: list[CallRecord]
    rejected: list[RejectedCall]
    scripts: list[ScriptRecord]
    messages: list[Message]
    usage: RunUsage
    rounds: int
    error: str | None = None
    duration_s: float = 0.0
    model: str = ""
    convention: str = ""
    sink_errors: int = 0
    pending: list[ApprovalRequest] = field(default_factory=list)
    approvals: list[ApprovalRecord] = field(default_factory=list)
    #: Where a ``needs_approval`` run stopped (what `Agent.resume` needs).
    paused: Paused | None = None
    #: Whether this paused result was resumed already, as an earlier release wrote it
    #: down; `Agent.resume` leaves the result it is given unchanged and refuses a second
    #: resume through the `ApprovalStore`.
    resumed: bool = False
    #: The tools with side effects the run was limited to (None: no scope).
    scope: tuple[str, ...] | None = None
    #: What the answer repeats that only untrusted results held.
    untrusted_in_answer: list[Suspicious] = field(default_factory=list)
    #: The typed value a run with an output type ended with.
    output: OutputT | None = None

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    def to_dict(self) -> dict[str, Any]:
        """The written form: JSON values, with ``version``; each part in its own form.

        ``output`` is written only when the run has one.
        """
        # Without an output, the form is the one earlier releases wrote and read.
        exclude = {*_PARTS, "output"} if self.output is None else set(_PARTS)
        return {
            **write(self, version=RESULT_VERSION, exclude=exclude, mode="json"),
            "usage": self.usage.to_dict(),
            "calls": [c.to_dict() for c in self.calls],
            "rejected": [r.to_dict() for r in self.rejected],
            "scripts": [s.to_dict() for s in self.scripts],
            "messages": [m.to_dict() for m in self.messages],
            "pending": [p.to_dict() for p in self.pending],
            "approvals": [a.to_dict() for a in self.approvals],
            "paused": paused_to_dict(self.paused) if self.paused is not None else None,
            "untrusted_in_answer": [s.to_dict() for s in self.untrusted_in_answer],
        }

    @overload
    @classmethod
    def from_dict(cls, data: dict[str, Any], *, output_type: type[_T]) -> RunResult[_T]: ...
    @overload
    @classmethod
    def from_dict(cls, data: dict[str, Any], *, output_type: Any = None) -> RunResult: ...
    @classmethod
    def from_dict(cls, data: dict[str, Any], *, output_type: Any = None) -> RunResult:
        """The result `to_dict` wrote (its JSON read back), by this release or an earlier one.

        `output` is read as `output_type` when given, else left as the JSON it was
        written as. Raises `UsageError` naming the version for a form this release
        does not read (`ResumeError`, one kind of it, for the paused state inside),
        and one saying what is wrong with a result, or a part of it, that is not one.
        """
        version_of(data, "the result", READ_VERSIONS)
        calls = [CallRecord.from_dict(c) for c in data.get("calls", ())]
        by_id = {c.id: c for c in calls}
        paused = data.get("paused")
        # The parts are read by their own forms; the rest by the class's declaration.
        parts: dict[str, Any] = {
            "usage": RunUsage.from_dict(data.get("usage", {})),
            "calls": calls,
            "rejected": [RejectedCall.from_dict(r) for r in data.get("rejected", ())],
            "scripts": [ScriptRecord.from_dict(s, by_id) for s in data.get("scripts", ())],
            "messages": [Message.from_dict(m) for m in data.get("messages", ())],
            "pending": [ApprovalRequest.from_dict(p) for p in data.get("pending", ())],
            "approvals": [ApprovalRecord.from_dict(a) for a in data.get("approvals", ())],
            "paused": paused_from_dict(paused) if paused is not None else None,
            "untrusted_in_answer": [
                Suspicious.from_dict(s) for s in data.get("untrusted_in_answer", ())
            ],
        }
        rest = {k: v for k, v in data.items() if k not in _PARTS and k != VERSION}
        result = read(cls, {"rounds": 0, **rest, **parts})
        if output_type is not None and result.output is not None:
            try:
                result.output = OutputSpec.of(output_type).load(result.output)
            except ValidationError as exc:
                raise UsageError(
                    f"the result's output cannot be read as {output_type!r}: {exc}"
                ) from exc
        return result


#: The fields of `RunResult` written in their own forms (the rest by `RunResult`'s).
_PARTS = (
    "usage",
    "calls",
    "rejected",
    "scripts",
    "messages",
    "pending",
    "approvals",
    "paused",
    "untrusted_in_answer",
)
