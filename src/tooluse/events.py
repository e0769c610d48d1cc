"""The typed events of a run: what the JSONL trace records and sinks receive.

Every event is a frozen dataclass with a `kind` (what happened, as a stream
names it), a `tag` (its name in a trace, the same as `kind` unless the class
says otherwise), a timestamp `t` (seconds since the epoch) and one dict form,
`to_dict`, which is exactly the line a `JsonlTrace` writes::

    {"event": TAG, "v": SCHEMA_VERSION, ...fields..., "t": T}

One run makes one sequence of these events. A sink (the trace, ``on_event``,
OpenTelemetry) takes those whose class is `traced`; `Agent.stream` gives
those whose class is `streamed`. The ends of calls and scripts, context moves
and approval requests are both, the very same objects: ``CallEnd`` and
``CallRejected`` share ``kind`` ``call_end`` (their base `CallOutcome`),
``ContextOffload`` and ``ContextCompress`` share ``context`` (`ContextMove`).

`event_from_dict` reads any such line back into its class; a line written
before the schema carried ``"v"`` reads the same (its keys are the same), and
``run_resumed`` lines of that release read as `ApprovalDecided`. A tag this
release does not know, or a line whose fields do not fit, reads as
`UnknownEvent` carrying the dict, so a newer or damaged trace still loads.

Consumers match on the classes (``match event: case CallEnd(record=r): ...``),
never on the tag strings. The docs page ``docs/events.md`` lists every event
and its dict form.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, get_args

from ._messages import Usage
from ._records import CallRecord, Outcome, RejectedCall, ScriptRecord
from .policy._approval import ApprovalRequest

__all__ = [
    "CONTEXT_TOOLS",
    "SCHEMA_VERSION",
    "AnswerChecked",
    "ApprovalDecided",
    "ApprovalNeeded",
    "CallEnd",
    "CallOutcome",
    "CallRejected",
    "CallStart",
    "ContextCompress",
    "ContextMove",
    "ContextOffload",
    "Event",
    "Feedback",
    "HandleStored",
    "HandleUsed",
    "InternalError",
    "ModelDelta",
    "ModelReply",
    "ModelRequest",
    "Paused",
    "PlanEnd",
    "PlanStep",
    "Resumed",
    "RoundEnd",
    "RunEnd",
    "RunStart",
    "ScopeFixed",
    "ScriptEnd",
    "ScriptOutput",
    "ScriptStart",
    "UnknownEvent",
    "call_outcome",
    "context_move",
    "event_from_dict",
]

#: The version of the dict form every event writes as ``"v"``.
SCHEMA_VERSION = 1


def _now() -> float:
    return time.time()


@dataclass(frozen=True, slots=True)
class Event:
    """The base of every event: its `kind`, its trace `tag` and its time `t`."""

    #: What happened, as consumers (and the stream) name it.
    kind: ClassVar[str] = "event"
    #: The event's name in its dict form (``"event"``); `kind` unless a class sets it.
    tag: ClassVar[str] = "event"
    #: Whether sinks (the trace, ``on_event``, OpenTelemetry) are given it.
    traced: ClassVar[bool] = True
    #: Whether `Agent.stream` gives it.
    streamed: ClassVar[bool] = False
    # Two events are equal when they say the same thing, whenever they were made.
    t: float = field(default_factory=_now, kw_only=True, compare=False)

    def __init_subclass__(cls) -> None:
        # (No zero-argument super here: a slotted dataclass is a copy of its class.)
        if "tag" not in cls.__dict__ and "kind" in cls.__dict__:
            cls.tag = cls.kind

    def _body(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The event's one dict form (a trace line); `event_from_dict` reads it back."""
        return {"event": self.tag, "v": SCHEMA_VERSION, **self._body(), "t": self.t}

    @classmethod
    def _from_body(cls, data: Mapping[str, Any], t: float) -> Event:
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        """The event `to_dict` wrote (`ValueError` if `data` is not this class's form)."""
        tag = data.get("event")
        if cls is not Event and tag not in _TAGS_OF.get(cls, (cls.tag,)):
            raise ValueError(f"a {tag!r} event is not a {cls.__name__}")
        if cls is Event:
            return event_from_dict(data)
        t = data.get("t", 0.0)
        try:
            return cls._from_body(data, float(t))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not a {tag!r} event: {type(exc).__name__}: {exc}") from exc


# --- the run ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunStart(Event):
    """A run began: its task, model, convention and the tools it may call."""

    kind: ClassVar[str] = "run_start"
    task: str
    model: str
    convention: str
    tools: tuple[str, ...]
    chosen_by: str | None = None
    """How ``auto`` chose the convention, when it did."""
    scope: tuple[str, ...] | None = None
    """The tools with side effects the run may call, when fixed before it."""

    def _body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "task": self.task,
            "model": self.model,
            "convention": self.convention,
        }
        if self.chosen_by:
            body["chosen_by"] = self.chosen_by
        body["tools"] = list(self.tools)
        if self.scope:
            body["scope"] = list(self.scope)
        return body

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> RunStart:
        scope = d.get("scope")
        return cls(
            str(d["task"]),
            str(d["model"]),
            str(d["convention"]),
            tuple(str(x) for x in d.get("tools", ())),
            d.get("chosen_by"),
            tuple(str(x) for x in scope) if scope is not None else None,
            t=t,
        )


@dataclass(frozen=True, slots=True)
class RunEnd(Event):
    """A run ended; the counts and usage are those of its `RunResult`."""

    kind: ClassVar[str] = "run_end"
    status: str
    answer: str | None
    error: str | None
    rounds: int
    calls: int
    rejected: int
    usage: Mapping[str, Any]
    duration_s: float
    untrusted_in_answer: tuple[Mapping[str, Any], ...] = ()

    def _body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "status": self.status,
            "answer": self.answer,
            "error": self.error,
            "rounds": self.rounds,
            "calls": self.calls,
            "rejected": self.rejected,
            "usage": dict(self.usage),
            "duration_s": self.duration_s,
        }
        if self.untrusted_in_answer:
            body["untrusted_in_answer"] = [dict(s) for s in self.untrusted_in_answer]
        return body

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> RunEnd:
        return cls(
            str(d["status"]),
            d.get("answer"),
            d.get("error"),
            int(d.get("rounds", 0)),
            int(d.get("calls", 0)),
            int(d.get("rejected", 0)),
            dict(d.get("usage") or {}),
            float(d.get("duration_s", 0.0)),
            tuple(dict(s) for s in d.get("untrusted_in_answer") or ()),
            t=t,
        )


@dataclass(frozen=True, slots=True)
class InternalError(Event):
    """The runtime itself failed; the run ends with status ``error``."""

    kind: ClassVar[str] = "internal_error"
    traceback: str

    def _body(self) -> dict[str, Any]:
        return {"traceback": self.traceback}

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> InternalError:
        return cls(str(d.get("traceback", "")), t=t)


@dataclass(frozen=True, slots=True)
class ScopeFixed(Event):
    """The run's scope, named by the model from the task before the first round."""

    kind: ClassVar[str] = "scope"
    tools: tuple[str, ...]
    by: str
    usage: Mapping[str, Any]
    problem: str | None = None

    def _body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"tools": list(self.tools), "by": self.by}
        if self.problem:
            body["problem"] = self.problem
        body["usage"] = dict(self.usage)
        return body

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> ScopeFixed:
        return cls(
            tuple(str(x) for x in d["tools"]),
            str(d.get("by", "")),
            dict(d.get("usage") or {}),
            d.get("problem"),
            t=t,
        )


# --- the model -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelRequest(Event):
    """A request went to the model in round `round`, with `messages` in the conversation."""

    kind: ClassVar[str] = "model_request"
    round: int
    messages: int

    def _body(self) -> dict[str, Any]:
        return {"round": self.round, "messages": self.messages}

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> ModelRequest:
        return cls(int(d.get("round", 0)), int(d.get("messages", 0)), t=t)


@dataclass(frozen=True, slots=True)
class ModelDelta(Event):
    """A piece of the model's text in round `round`, as its backend handed it over.

    Streams give these; a trace does not record them (the reply holds the text).
    """

    kind: ClassVar[str] = "text"
    traced: ClassVar[bool] = False
    streamed: ClassVar[bool] = True
    text: str
    round: int

    def _body(self) -> dict[str, Any]:
        return {"text": self.text, "round": self.round}

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> ModelDelta:
        return cls(str(d["text"]), int(d.get("round", 0)), t=t)


@dataclass(frozen=True, slots=True)
class ModelReply(Event):
    """The model's reply in round `round`: the assistant message as the OpenAI shape."""

    kind: ClassVar[str] = "model_response"
    round: int
    message: Mapping[str, Any]
    usage: Mapping[str, Any]
    finish_reason: str | None = None

    def _body(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "message": self.message,
            "usage": self.usage,
            "finish_reason": self.finish_reason,
        }

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> ModelReply:
        return cls(
            int(d.get("round", 0)),
            dict(d.get("message") or {}),
            dict(d.get("usage") or {}),
            d.get("finish_reason"),
            t=t,
        )


@dataclass(frozen=True, slots=True)
class RoundEnd(Event):
    """Round `round` ended (its reply acted on); `usage` is None if the request failed.

    Streams give these; a trace does not record them.
    """

    kind: ClassVar[str] = "round_end"
    traced: ClassVar[bool] = False
    streamed: ClassVar[bool] = True
    round: int
    usage: Usage | None

    def _body(self) -> dict[str, Any]:
        return {"round": self.round, "usage": None if self.usage is None else self.usage.to_dict()}

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> RoundEnd:
        usage = d.get("usage")
        return cls(int(d["round"]), None if usage is None else Usage.from_dict(usage), t=t)


@dataclass(frozen=True, slots=True)
class Feedback(Event):
    """The runtime told the model something (a format error, an unmade call) in `round`."""

    kind: ClassVar[str] = "feedback"
    round: int
    text: str

    def _body(self) -> dict[str, Any]:
        return {"round": self.round, "text": self.text}

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> Feedback:
        return cls(int(d.get("round", 0)), str(d["text"]), t=t)


#: What became of an answer `AnswerChecked` tells of.
CheckOutcome = Literal["noted", "corrected", "kept"]


@dataclass(frozen=True, slots=True)
class AnswerChecked(Event):
    """The model's final answer in `round` was checked against the run's results
    (``Agent(check_answers=True)``); only answers the check has something to say
    about are told.

    `outcome` is ``noted`` (the answer contradicts what it compares: `note`, sent
    to the model, says how, and the run goes on for one more answer), then, at the
    next answer, ``corrected`` (it passes the check: the run ends with it) or
    ``kept`` (it still contradicts, `note` says how: the run ends with it all the
    same, since a run is noted once). `answer` is the answer checked.
    """

    kind: ClassVar[str] = "answer_check"
    streamed: ClassVar[bool] = True
    round: int
    outcome: CheckOutcome
    answer: str
    note: str = ""

    def _body(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "outcome": self.outcome,
            "answer": self.answer,
            "note": self.note,
        }

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> AnswerChecked:
        outcome = str(d["outcome"])
        if outcome not in get_args(CheckOutcome):
            raise ValueError(f"unknown outcome {outcome!r}")
        return cls(
            int(d.get("round", 0)),
            outcome,  # type: ignore[arg-type]  # checked just above
            str(d.get("answer", "")),
            str(d.get("note", "")),
            t=t,
        )


# --- calls -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CallStart(Event):
    """A call begins: its name is known (its arguments may still be arriving).

    `id` is the call's id where the wire gives one at its start; `index` its
    place in the reply (or in its script). Streams give these; a trace records
    the call once it ended.
    """

    kind: ClassVar[str] = "call_start"
    traced: ClassVar[bool] = False
    streamed: ClassVar[bool] = True
    id: str | None
    name: str
    round: int
    index: int

    def _body(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "round": self.round, "index": self.index}

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> CallStart:
        return cls(d.get("id"), str(d["name"]), int(d["round"]), int(d.get("index", 0)), t=t)


class CallOutcome:
    """A call ended, whichever way: `CallEnd` (it ran) or `CallRejected` (refused).

    Not an event class of its own, only what the two share: match on it for every
    ended call (``kind`` ``call_end``); the dict form is the record's, flat.
    """

    __slots__ = ()
    kind: ClassVar[str] = "call_end"
    streamed: ClassVar[bool] = True
    record: Outcome

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def round(self) -> int:
        return self.record.round

    def _body(self) -> dict[str, Any]:
        return self.record.to_dict()


@dataclass(frozen=True, slots=True)
class CallEnd(CallOutcome, Event):
    """A call the runtime executed ended; its dict form is the record's, flat."""

    tag: ClassVar[str] = "call"
    record: CallRecord

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> CallEnd:
        return cls(CallRecord.from_dict(dict(d)), t=t)


@dataclass(frozen=True, slots=True)
class CallRejected(CallOutcome, Event):
    """A call refused before it ran (invalid, or denied); the dict is the record's, flat."""

    tag: ClassVar[str] = "rejected"
    record: RejectedCall

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> CallRejected:
        return cls(RejectedCall.from_dict(dict(d)), t=t)


def call_outcome(outcome: Outcome) -> CallEnd | CallRejected:
    """The event of a call that ended as `outcome` says."""
    return CallEnd(outcome) if isinstance(outcome, CallRecord) else CallRejected(outcome)


# --- scripts and plans -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScriptStart(Event):
    """A script (code convention) starts. Streams give these."""

    kind: ClassVar[str] = "script_start"
    traced: ClassVar[bool] = False
    streamed: ClassVar[bool] = True
    id: str
    code: str
    round: int

    def _body(self) -> dict[str, Any]:
        return {"id": self.id, "code": self.code, "round": self.round}

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> ScriptStart:
        return cls(str(d["id"]), str(d["code"]), int(d.get("round", 0)), t=t)


@dataclass(frozen=True, slots=True)
class ScriptOutput(Event):
    """One line a script printed (without its newline), as it printed it. Streams only."""

    kind: ClassVar[str] = "script_output"
    traced: ClassVar[bool] = False
    streamed: ClassVar[bool] = True
    id: str
    line: str

    def _body(self) -> dict[str, Any]:
        return {"id": self.id, "line": self.line}

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> ScriptOutput:
        return cls(str(d["id"]), str(d["line"]), t=t)


def _record_fields(script: ScriptRecord | ScriptEnd) -> dict[str, Any]:
    """The fields a `ScriptEnd` shares with its `ScriptRecord`: all but ``replayed``,
    which the event holds as call ids."""
    return {f.name: getattr(script, f.name) for f in fields(ScriptRecord) if f.name != "replayed"}


@dataclass(frozen=True, slots=True)
class ScriptEnd(Event):
    """A script ended, as its `ScriptRecord` says; `replayed` holds call ids.

    A script that stopped at a call waiting for approval ends with status
    ``paused`` (its `record` is then None); resumed, it ends again.
    """

    kind: ClassVar[str] = "script_end"
    tag: ClassVar[str] = "script"
    streamed: ClassVar[bool] = True
    id: str
    code: str
    status: str
    stdout: str
    error: str | None
    round: int = 0
    calls: int = 0
    truncated: bool = False
    duration_s: float = 0.0
    repairs: tuple[str, ...] = ()
    replayed: tuple[str, ...] = ()
    # The record the event was made from; not part of the dict form or of equality.
    _record: ScriptRecord | None = field(default=None, kw_only=True, compare=False, repr=False)

    @property
    def record(self) -> ScriptRecord | None:
        """The script's record, None if it paused: the one the run made, or for an event
        read from a trace one rebuilt from the fields (its replayed calls by id only)."""
        if self.status == "paused":
            return None
        if self._record is not None:
            return self._record
        return ScriptRecord(**_record_fields(self))

    @classmethod
    def of(cls, record: ScriptRecord) -> ScriptEnd:
        """The event of a script that ended as `record` says."""
        return cls(
            **_record_fields(record),
            replayed=tuple(c.id for c in record.replayed),
            _record=record,
        )

    def _body(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "code": self.code,
            "status": self.status,
            "stdout": self.stdout,
            "error": self.error,
            "round": self.round,
            "calls": self.calls,
            "truncated": self.truncated,
            "duration_s": self.duration_s,
            "repairs": list(self.repairs),
            "replayed": list(self.replayed),
        }

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> ScriptEnd:
        return cls(
            str(d["id"]),
            str(d["code"]),
            str(d["status"]),
            str(d.get("stdout", "")),
            d.get("error"),
            int(d.get("round", 0)),
            int(d.get("calls", 0)),
            bool(d.get("truncated", False)),
            float(d.get("duration_s", 0.0)),
            tuple(str(x) for x in d.get("repairs", ())),
            tuple(str(x) for x in d.get("replayed", ())),
            t=t,
        )


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One step of a plan as it ended (a row of `PlanEnd`, not an event)."""

    name: str
    line: int
    status: str
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "line": self.line, "status": self.status, "error": self.error}


@dataclass(frozen=True, slots=True)
class PlanEnd(Event):
    """A plan (plan convention) ran in `round`: each step's outcome, and the report."""

    kind: ClassVar[str] = "plan"
    id: str
    round: int
    code: str
    ok: bool
    steps: tuple[PlanStep, ...]
    content: str

    def _body(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "round": self.round,
            "code": self.code,
            "ok": self.ok,
            "steps": [s.to_dict() for s in self.steps],
            "content": self.content,
        }

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> PlanEnd:
        steps = tuple(
            PlanStep(str(s["name"]), int(s.get("line", 0)), str(s["status"]), s.get("error"))
            for s in d.get("steps", ())
        )
        return cls(
            str(d["id"]),
            int(d.get("round", 0)),
            str(d.get("code", "")),
            bool(d.get("ok", False)),
            steps,
            str(d.get("content", "")),
            t=t,
        )


# --- the context -----------------------------------------------------------------------


class ContextMove:
    """Messages left the window: `ContextOffload` or `ContextCompress`.

    Not an event class of its own, only what the two share (``kind`` ``context``).
    `by` is ``harness`` (the budget made room) or ``agent`` (a context tool the
    model called: `call_id`, and `ids` are the message ids it named).
    """

    __slots__ = ()
    kind: ClassVar[str] = "context"
    streamed: ClassVar[bool] = True
    #: ``offload`` or ``compress``.
    action: ClassVar[str] = ""
    by: str
    ids: tuple[str, ...]
    round: int
    call_id: str | None

    def _body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"by": self.by, "ids": list(self.ids), "round": self.round}
        if self.call_id is not None:
            body["call_id"] = self.call_id
        return body


def _context_fields(d: Mapping[str, Any]) -> tuple[str, tuple[str, ...], int, str | None]:
    call_id = d.get("call_id")
    return (
        str(d.get("by", "")),
        tuple(str(i) for i in d.get("ids", ())),
        int(d.get("round", 0)),
        None if call_id is None else str(call_id),
    )


@dataclass(frozen=True, slots=True)
class ContextOffload(ContextMove, Event):
    """Messages left the window for the store, moved by the ``harness`` or the ``agent``."""

    tag: ClassVar[str] = "context_offload"
    action: ClassVar[str] = "offload"
    by: str
    ids: tuple[str, ...]
    round: int = 0
    call_id: str | None = None

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> ContextOffload:
        return cls(*_context_fields(d), t=t)


@dataclass(frozen=True, slots=True)
class ContextCompress(ContextMove, Event):
    """Messages of the window were replaced by a summary (the agent's ``context_compress``)."""

    tag: ClassVar[str] = "context_compress"
    action: ClassVar[str] = "compress"
    by: str
    ids: tuple[str, ...]
    round: int = 0
    call_id: str | None = None

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> ContextCompress:
        return cls(*_context_fields(d), t=t)


#: The context tools an agent may call, and the context event each successful call is.
CONTEXT_TOOLS: Mapping[str, type[ContextOffload | ContextCompress]] = {
    "context_offload": ContextOffload,
    "context_compress": ContextCompress,
}


def context_move(record: CallRecord) -> ContextOffload | ContextCompress | None:
    """The context event of a context tool call that succeeded (`CONTEXT_TOOLS`), else None.

    Its `ids` are those the call named (``span_ids``).
    """
    cls = CONTEXT_TOOLS.get(record.name)
    if cls is None or not record.ok:
        return None
    named = record.arguments.get("span_ids") or ()
    if isinstance(named, str):
        ids: tuple[str, ...] = (named,)
    else:
        ids = tuple(str(i) for i in named) if isinstance(named, list | tuple) else ()
    return cls("agent", ids, record.round, record.id)


# --- results kept by reference ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HandleStored(Event):
    """A result over the run's result limit was kept whole: the model was shown `handle`.

    `call_id` is the call (or plan) whose recorded result it is; `shape` is what the
    model was told of it (``list of 2,000 dicts with keys sku, name, price``), `chars`
    the length of its text.
    """

    kind: ClassVar[str] = "handle"
    tag: ClassVar[str] = "handle_stored"
    streamed: ClassVar[bool] = True
    handle: str
    call_id: str
    shape: str
    chars: int
    round: int = 0

    def _body(self) -> dict[str, Any]:
        return {
            "handle": self.handle,
            "call_id": self.call_id,
            "shape": self.shape,
            "chars": self.chars,
            "round": self.round,
        }

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> HandleStored:
        return cls(
            str(d["handle"]),
            str(d["call_id"]),
            str(d.get("shape", "")),
            int(d.get("chars", 0)),
            int(d.get("round", 0)),
            t=t,
        )


@dataclass(frozen=True, slots=True)
class HandleUsed(Event):
    """The arguments of call `call_id` (to tool `name`) named `handles`; the tool was
    given the values they stand for."""

    kind: ClassVar[str] = "handle_used"
    handles: tuple[str, ...]
    call_id: str
    name: str
    round: int = 0

    def _body(self) -> dict[str, Any]:
        return {
            "handles": list(self.handles),
            "call_id": self.call_id,
            "name": self.name,
            "round": self.round,
        }

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> HandleUsed:
        return cls(
            tuple(str(h) for h in d["handles"]),
            str(d["call_id"]),
            str(d.get("name", "")),
            int(d.get("round", 0)),
            t=t,
        )


# --- approvals -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ApprovalNeeded(Event):
    """Calls wait for a decision: a run stops with status ``needs_approval``, and a
    durable run waits in its record (one event per call, once it is published there)."""

    kind: ClassVar[str] = "approval"
    tag: ClassVar[str] = "approval_needed"
    streamed: ClassVar[bool] = True
    pending: tuple[ApprovalRequest, ...]

    @property
    def requests(self) -> tuple[ApprovalRequest, ...]:
        """`pending` (the name the stream's event had)."""
        return self.pending

    @property
    def round(self) -> int:
        return self.pending[0].round if self.pending else 0

    def _body(self) -> dict[str, Any]:
        return {"pending": [p.to_dict() for p in self.pending]}

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> ApprovalNeeded:
        return cls(tuple(ApprovalRequest.from_dict(p) for p in d["pending"]), t=t)


@dataclass(frozen=True, slots=True)
class Paused(Event):
    """The run paused in round `round` for the calls of the `ApprovalNeeded` before it."""

    kind: ClassVar[str] = "paused"
    round: int

    def _body(self) -> dict[str, Any]:
        return {"round": self.round}

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> Paused:
        return cls(int(d.get("round", 0)), t=t)


@dataclass(frozen=True, slots=True)
class ApprovalDecided(Event):
    """Decisions were given for the pending calls (by their ids), before a resume."""

    kind: ClassVar[str] = "approval_decided"
    decisions: tuple[str, ...]

    def _body(self) -> dict[str, Any]:
        return {"decisions": list(self.decisions)}

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> ApprovalDecided:
        return cls(tuple(str(x) for x in d.get("decisions", ())), t=t)


@dataclass(frozen=True, slots=True)
class Resumed(Event):
    """A paused run goes on in round `round` (the turn, script or plan it stopped in)."""

    kind: ClassVar[str] = "resumed"
    round: int

    def _body(self) -> dict[str, Any]:
        return {"round": self.round}

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> Resumed:
        return cls(int(d.get("round", 0)), t=t)


@dataclass(frozen=True, slots=True)
class UnknownEvent(Event):
    """A trace line of a tag this release does not know, or whose fields do not fit."""

    kind: ClassVar[str] = "unknown"
    data: Mapping[str, Any]
    problem: str = ""

    # An unknown line's tag is the line's own.
    @property
    def tag(self) -> str:  # type: ignore[override]
        return str(self.data.get("event", "?"))

    def _body(self) -> dict[str, Any]:
        return {k: v for k, v in self.data.items() if k not in ("event", "v", "t")}

    def to_dict(self) -> dict[str, Any]:
        return dict(self.data)

    @classmethod
    def _from_body(cls, d: Mapping[str, Any], t: float) -> UnknownEvent:
        return cls(dict(d), t=t)


_CLASSES: tuple[type[Event], ...] = (
    RunStart,
    RunEnd,
    InternalError,
    ScopeFixed,
    ModelRequest,
    ModelDelta,
    ModelReply,
    RoundEnd,
    Feedback,
    AnswerChecked,
    CallStart,
    CallEnd,
    CallRejected,
    ScriptStart,
    ScriptOutput,
    ScriptEnd,
    PlanEnd,
    ContextOffload,
    ContextCompress,
    HandleStored,
    HandleUsed,
    ApprovalNeeded,
    Paused,
    ApprovalDecided,
    Resumed,
)

#: Tags each class reads: its own, and the name an earlier release wrote it under.
_TAGS_OF: dict[type[Event], tuple[str, ...]] = {
    ApprovalDecided: ("approval_decided", "run_resumed")
}

_BY_TAG: dict[str, type[Event]] = {
    tag: cls for cls in _CLASSES for tag in _TAGS_OF.get(cls, (cls.tag,))
}


def event_from_dict(data: Mapping[str, Any]) -> Event:
    """The event of a trace line; `UnknownEvent` for a tag or fields this release cannot read.

    Lines without ``"v"`` (the release before it was written) read the same.
    """
    cls = _BY_TAG.get(str(data.get("event")))
    raw_t = data.get("t", 0.0)
    t = float(raw_t) if isinstance(raw_t, int | float) else 0.0
    if cls is None:
        return UnknownEvent(dict(data), "unknown event", t=t)
    try:
        return cls.from_dict(data)
    except ValueError as exc:
        return UnknownEvent(dict(data), str(exc), t=t)
