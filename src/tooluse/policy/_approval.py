"""Approvals: the decision the dispatcher asks for before a call runs.

One policy covers every call of a run, the model's JSON calls and a script's
calls alike, because both reach the same dispatcher::

    call ─→ validate ─→ Gate.decide ─→ allow ─→ execute
                          │   (policy, remembered denial, or a resume's decision)
                          ├─→ deny  ─→ RejectedCall(kind="denied"): the model sees why
                          └─→ defer ─→ ApprovalRequest: the run stops, `needs_approval`

A policy is any callable taking an `ApprovalRequest` and returning an `Approval`
(or True / False), sync or async; `ApprovalPolicy` is the base class for one with
settings. It is asked about calls to tools with side effects only, unless its
``asks`` is ``"all"``. Whatever goes wrong while asking ends as a denial, never as
a call that runs: a policy that raises, one that outlasts its ``timeout``, one
that returns something else.

A denial is remembered by the call's key (the hash of its tool name and
arguments): the same call made again in the run is denied again without asking.
A decision given at resume is bound to that key as well, and is used once.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import ConfigDict

from .._exceptions import UsageError
from .._frozen import frozen, thawed
from .._messages import Message
from .._records import CallRecord, call_key
from .._written import read, write
from ..tools import Caller, Tool
from ._provenance import FREE_TEXT, MIN_CHARS, Provenance, Selections

__all__ = [
    "Approval",
    "ApprovalPolicy",
    "ApprovalRecord",
    "ApprovalRequest",
    "AskWhenInDoubt",
    "Gate",
    "ProvenancePolicy",
    "RunSoFar",
    "as_policy",
    "call_key",
]

#: The version of the form `ApprovalRecord.to_dict` writes (a record may be kept on its own,
#: in an audit log).
WRITTEN_VERSION = 1
#: The versions `ApprovalRecord.from_dict` reads: 0 is the form of earlier releases.
READ_VERSIONS = (0, 1)

Decision = Literal["allow", "deny", "defer"]
#: Who took a decision (see `ApprovalRecord.by`).
DecidedBy = Literal["policy", "decision", "memory", "failure", "scope"]
#: Which calls a policy is asked about.
Asks = Literal["side_effects", "all"]


@dataclass(frozen=True, slots=True)
class Approval:
    """A policy's decision on one call: `allow`, `deny` or `defer`."""

    decision: Decision
    reason: str | None = None
    #: For `allow`: the arguments to run the call with instead of the model's.
    arguments: dict[str, Any] | None = None

    @classmethod
    def allow(cls, arguments: Mapping[str, Any] | None = None) -> Approval:
        """Run the call (with ``arguments`` in place of the model's, if given).

        The arguments are copied now, so changing the dict afterwards changes
        nothing; they are checked against the tool's schema before the call runs.
        """
        return cls("allow", arguments=thawed(arguments) if arguments is not None else None)

    @classmethod
    def deny(cls, reason: str = "denied by the approval policy") -> Approval:
        """Do not run the call; the model is shown ``reason`` as the call's error."""
        return cls("deny", reason)

    @classmethod
    def defer(cls, reason: str | None = None) -> Approval:
        """Stop the run with status ``needs_approval`` until someone decides."""
        return cls("defer", reason)


class RunSoFar:
    """What the run had done when a call was put to the policy.

    `messages` and `calls` are copies, read-only where they hold JSON values,
    made when first read: a policy cannot change the run's record through them.
    """

    __slots__ = ("_calls", "_copies", "_messages", "provenance", "task")

    def __init__(
        self,
        task: str,
        messages: Sequence[Message],
        calls: Sequence[CallRecord],
        provenance: Provenance | None,
    ) -> None:
        self.task = task
        self._messages = tuple(messages)
        self._calls = tuple(calls)
        #: The run's text by trust, when the policy tracks it (see `ProvenancePolicy`).
        self.provenance = provenance
        self._copies: tuple[tuple[Message, ...], tuple[CallRecord, ...]] | None = None

    def _copied(self) -> tuple[tuple[Message, ...], tuple[CallRecord, ...]]:
        if self._copies is None:
            self._copies = (
                tuple(replace(m) for m in self._messages),
                tuple(
                    replace(c, arguments=frozen(c.arguments), result=frozen(c.result))
                    for c in self._calls
                ),
            )
        return self._copies

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation so far."""
        return self._copied()[0]

    @property
    def calls(self) -> tuple[CallRecord, ...]:
        """Every call executed so far, a running script's included."""
        return self._copied()[1]


@dataclass(slots=True)
class ApprovalRequest:
    """One call waiting for a decision, as the policy (or a person) sees it."""

    call_id: str
    tool: str
    arguments: Mapping[str, Any]
    """Read-only (a copy): `Approval.allow` with other arguments runs the call with those."""
    caller: Caller
    """``model`` for a JSON or text call, ``script`` for a call made by a script."""
    reason: str
    """Why it was asked (after a deferral, the reason the policy gave)."""
    round: int = 0
    key: str = ""
    """`call_key` of the tool and arguments; a decision is bound to it."""
    in_doubt: bool = False
    """In a recovered durable run: the call started before the crash and never
    ended, so it may or may not have taken effect. Allowing it runs it again."""
    run: RunSoFar | None = field(default=None, repr=False, compare=False)

    # `run` is never written down (see `to_dict`): pydantic only checks its class.
    __pydantic_config__ = ConfigDict(arbitrary_types_allowed=True)

    def __post_init__(self) -> None:
        # A copy nobody can change: an edit in place would reach the record and not the
        # call (or the call and not the record), never both.
        self.arguments = frozen(self.arguments)
        if not self.key:
            self.key = call_key(self.tool, self.arguments)

    def to_dict(self) -> dict[str, Any]:
        """The written form: the fields but `run`.

        It has no version of its own: a request is written inside a result or a
        trace event, whose version covers it.
        """
        # ``in_doubt`` is written only when set: a request of a plain run reads as it did.
        return write(self, exclude={"run"} if self.in_doubt else {"run", "in_doubt"})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApprovalRequest:
        """The request `to_dict` wrote; one `UsageError` saying what is wrong if not one."""
        return read(cls, data, ignore=("run",))


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    """One decision taken in a run, for the audit: who decided what, and why."""

    call_id: str
    tool: str
    arguments: Mapping[str, Any]
    """The call's arguments as it was asked about (read-only)."""
    caller: Caller
    decision: Decision
    by: DecidedBy
    """``policy`` asked now; ``decision`` given at resume; ``memory`` the same call
    was denied before; ``failure`` the policy raised, timed out or answered wrongly;
    ``scope`` the tool is outside the run's scope (the policy was not asked)."""
    reason: str | None = None
    error: str | None = None
    """What went wrong while asking, for ``failure``."""
    edited: Mapping[str, Any] | None = None
    """For an ``allow`` that gave other arguments: those (read-only). The call ran
    with them if they fit the tool's schema, and its `CallRecord` holds them."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "arguments", frozen(self.arguments))
        if self.edited is not None:
            object.__setattr__(self, "edited", frozen(self.edited))

    def to_dict(self) -> dict[str, Any]:
        """The written form: the fields, with ``version``."""
        return write(self, version=WRITTEN_VERSION)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApprovalRecord:
        """The record `to_dict` (or an earlier release) wrote; one `UsageError` if not one."""
        return read(cls, data, reads=READ_VERSIONS)


PolicyResult = Approval | bool
PolicyFunction = Callable[[ApprovalRequest], PolicyResult | Awaitable[PolicyResult]]


class ApprovalPolicy:
    """A policy with settings; any callable ``(ApprovalRequest) -> Approval`` works too.

    Args:
        check: the function deciding (sync or async); subclasses override `__call__`.
        asks: ``"side_effects"`` (calls to tools with side effects only) or ``"all"``.
        timeout: seconds a decision may take; then the call is denied.
    """

    #: Whether the run notes its text by trust for this policy (`RunSoFar.provenance`).
    tracks_provenance: bool = False
    #: Whether `__call__` is quick and never blocks, so it runs on the event loop
    #: itself; otherwise a sync policy runs on a thread of its own, under the timeout.
    inline: bool = False

    def __init__(
        self,
        check: PolicyFunction | None = None,
        *,
        asks: Asks = "side_effects",
        timeout: float | None = 60.0,
    ) -> None:
        if asks not in ("side_effects", "all"):
            raise UsageError(f"asks must be 'side_effects' or 'all', got {asks!r}")
        if timeout is not None and timeout <= 0:
            raise UsageError(f"an approval timeout must be positive, got {timeout}")
        self._check = check
        self.asks: Asks = asks
        self.timeout = timeout

    def __call__(self, request: ApprovalRequest) -> PolicyResult | Awaitable[PolicyResult]:
        if self._check is None:
            raise NotImplementedError("give ApprovalPolicy a check, or override __call__")
        return self._check(request)

    def is_async(self) -> bool:
        return self._check is not None and inspect.iscoroutinefunction(self._check)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(asks={self.asks!r}, timeout={self.timeout!r})"


class AskWhenInDoubt(ApprovalPolicy):
    """The policy of a durable run given none: every call runs, but a write call in doubt
    (started before a crash, never ended) waits for a person's decision."""

    inline = True

    def __init__(self) -> None:
        super().__init__(timeout=None)

    def __call__(self, request: ApprovalRequest) -> Approval:
        if request.in_doubt:
            return Approval.defer(request.reason)
        return Approval.allow()


class ProvenancePolicy(ApprovalPolicy):
    """Refuse a side-effecting call whose arguments only untrusted results supplied.

    An argument value copied out of the results of a tool marked
    ``trust="untrusted"`` and found nowhere in the task, the system prompt or a
    trusted result is what an injected instruction would plant: an IBAN, an
    e-mail address, a URL. Such a call is denied (the model is told why and may
    go on) or, with ``on_flag="defer"``, put to a person. Every other call is
    allowed. See `tooluse.policy._provenance` for how values are matched and what this
    cannot see.

    Args:
        on_flag: ``"deny"`` or ``"defer"``.
        min_chars: values at least this long, normalised, are tested as
            substrings; a shorter string only as a whole word of untrusted
            prose that no result holds as a field, and a shorter number not.
        free_text: argument names whose values are prose (a message's body):
            only the identifiers inside them are tested. Default `FREE_TEXT`.
        selections: ``"allow"`` passes a value that is a whole field of an
            untrusted result (a channel name of a list) and not in its prose;
            ``"check"`` flags it too.
        asks: as for `ApprovalPolicy`.
    """

    tracks_provenance = True
    inline = True

    def __init__(
        self,
        *,
        on_flag: Literal["deny", "defer"] = "deny",
        min_chars: int = MIN_CHARS,
        free_text: Collection[str] = FREE_TEXT,
        selections: Selections = "allow",
        asks: Asks = "side_effects",
    ) -> None:
        super().__init__(asks=asks, timeout=None)
        if on_flag not in ("deny", "defer"):
            raise UsageError(f"on_flag must be 'deny' or 'defer', got {on_flag!r}")
        if min_chars < 1:
            raise UsageError(f"min_chars must be at least 1, got {min_chars}")
        if selections not in ("allow", "check"):
            raise UsageError(f"selections must be 'allow' or 'check', got {selections!r}")
        self.on_flag = on_flag
        self.min_chars = min_chars
        self.free_text = frozenset(free_text)
        self.selections: Selections = selections

    def __call__(self, request: ApprovalRequest) -> Approval:
        provenance = request.run.provenance if request.run is not None else None
        if provenance is None:
            return Approval.allow()
        found = provenance.suspicious(
            request.arguments,
            min_chars=self.min_chars,
            free_text=self.free_text,
            selections=self.selections,
        )
        if not found:
            return Approval.allow()
        first = found[0]
        reason = (
            f"the value {first.value!r} of argument '{first.argument}' comes from the "
            f"results of {', '.join(first.sources)} (untrusted text), not from the task; "
            "a value only such text supplied is not used for an action"
        )
        return Approval.deny(reason) if self.on_flag == "deny" else Approval.defer(reason)

    def __repr__(self) -> str:
        return (
            f"ProvenancePolicy(on_flag={self.on_flag!r}, min_chars={self.min_chars}, "
            f"selections={self.selections!r})"
        )


def as_policy(approval: ApprovalPolicy | PolicyFunction | str | None) -> ApprovalPolicy | None:
    """What ``Agent(approval=...)`` accepts, as a policy: a callable, a policy, a name."""
    if approval is None or isinstance(approval, ApprovalPolicy):
        return approval
    if isinstance(approval, str):
        if approval == "provenance":
            return ProvenancePolicy()
        raise UsageError(
            f"approval={approval!r} names no built-in policy; the built-in one is 'provenance'"
        )
    if not callable(approval):
        raise UsageError(f"approval must be a callable, a policy or 'provenance', not {approval!r}")
    return ApprovalPolicy(approval)


def as_decision(value: object, *, denied: str) -> Approval:
    """A decision from what a policy returned or a resume gave; TypeError if it is none."""
    if isinstance(value, Approval):
        if value.arguments is not None and not isinstance(value.arguments, Mapping):
            raise TypeError(f"an Approval's arguments must be a dict, got {value.arguments!r}")
        return value
    if value is True:
        return Approval.allow()
    if value is False:
        return Approval.deny(denied)
    raise TypeError(f"expected an Approval, True or False, got {value!r}")


class Gate:
    """The approval step of one run's dispatcher: asks, remembers, and logs.

    Args:
        policy: the run's policy.
        task: the run's task (for `RunSoFar` and provenance).
        messages: returns the conversation so far.
        remembers: False for calls that belong to no run (those an MCP server
            answers): each is decided alone, and nothing is kept between calls,
            neither a denial, nor the calls seen, nor the log.
    """

    def __init__(
        self,
        policy: ApprovalPolicy,
        *,
        task: str,
        messages: Callable[[], Sequence[Message]] = tuple,
        provenance: Provenance | None = None,
        remembers: bool = True,
    ) -> None:
        self.policy = policy
        self.task = task
        self.remembers = remembers
        self.messages = messages
        self.provenance = provenance
        if provenance is None and policy.tracks_provenance:
            self.provenance = Provenance()
            self.provenance.trust(task)
        #: The tools with side effects this run may call (None: no limit); see
        #: `tooluse.policy._scope`.
        self.scope: frozenset[str] | None = None
        self.log: list[ApprovalRecord] = []
        self._calls: list[CallRecord] = []
        self._denied: dict[str, str] = {}
        self._granted: dict[str, list[Approval]] = {}
        self._lock = threading.Lock()

    def asks_about(self, tool: Tool) -> bool:
        return tool.side_effects or self.policy.asks == "all"

    def note(self, record: CallRecord, tool: Tool) -> None:
        """A call ended (on any thread): keep it for `RunSoFar`, and its text by trust."""
        if not self.remembers:
            return
        with self._lock:
            self._calls.append(record)
        if self.provenance is not None:
            # An error is text too: an untrusted tool's may quote what it read.
            seen = record.result if record.ok else record.error
            self.provenance.note(tool.name, seen, trusted=tool.trust == "trusted")

    def grant(self, key: str, decision: Approval) -> None:
        """A decision given at resume for the call with this key, used once."""
        with self._lock:
            self._granted.setdefault(key, []).append(decision)

    def remember_denials(self, denied: Mapping[str, str]) -> None:
        with self._lock:
            self._denied.update(denied)

    @property
    def denied(self) -> dict[str, str]:
        with self._lock:
            return dict(self._denied)

    async def decide(
        self,
        tool: Tool,
        arguments: dict[str, Any],
        *,
        call_id: str,
        caller: Caller,
        round_: int,
        in_doubt: bool = False,
    ) -> tuple[Approval, ApprovalRequest]:
        """The decision on a call to ``tool``; never raises for what the policy does.

        ``in_doubt``: the call is one a crashed durable run started and never ended;
        the policy is asked whatever its ``asks``, and `ApprovalRequest.in_doubt` says so.
        """
        if in_doubt:
            reason = (
                f"{tool.name} writes, and its call started before the run crashed and never "
                "ended: it may or may not have taken effect"
            )
        elif tool.side_effects:
            reason = f"{tool.name} has side effects"
        else:
            reason = "the approval policy is asked about every call"
        request = ApprovalRequest(
            call_id, tool.name, arguments, caller, reason, round_, in_doubt=in_doubt
        )
        with self._lock:
            granted = self._granted.get(request.key)
            decision = granted.pop(0) if granted else None
            remembered = self._denied.get(request.key)
        by: DecidedBy
        if self.scope is not None and tool.side_effects and tool.name not in self.scope:
            named = ", ".join(sorted(self.scope)) or "none"
            decision, by, error = (
                Approval.deny(
                    f"{tool.name} is outside this run's scope ({named}), the tools with side "
                    "effects fixed before the run read anything: the task did not ask for it"
                ),
                "scope",
                None,
            )
        elif decision is not None:
            by, error = "decision", None
        elif remembered is not None:
            decision, by, error = Approval.deny(remembered), "memory", None
        else:
            with self._lock:
                request.run = RunSoFar(
                    self.task, tuple(self.messages()), tuple(self._calls), self.provenance
                )
            decision, error = await self._ask(request)
            by = "policy" if error is None else "failure"
        if decision.arguments is not None:
            # The policy may keep its Approval: the call runs with a copy of the run's own,
            # so changing that Approval later changes neither the call nor its record.
            decision = Approval(decision.decision, decision.reason, thawed(decision.arguments))
        if decision.decision == "deny" and self.remembers:
            with self._lock:
                self._denied[request.key] = decision.reason or "denied"
        elif decision.decision == "defer" and decision.reason:
            request.reason = decision.reason
        if not self.remembers:
            return decision, request
        self.log.append(
            ApprovalRecord(
                call_id,
                tool.name,
                request.arguments,
                caller,
                decision.decision,
                by,
                decision.reason,
                error,
                decision.arguments if decision.decision == "allow" else None,
            )
        )
        return decision, request

    async def _ask(self, request: ApprovalRequest) -> tuple[Approval, str | None]:
        """The policy's decision, or a denial and what went wrong."""
        policy = self.policy
        try:
            if policy.inline:
                answer: object = policy(request)
                if inspect.isawaitable(answer):
                    answer = await _within(answer, policy.timeout)
            elif policy.is_async() or inspect.iscoroutinefunction(policy.__call__):
                answer = await _within(policy(request), policy.timeout)  # type: ignore[arg-type]
            else:
                answer = await _on_thread(policy, request, policy.timeout)
            return as_decision(answer, denied="denied by the approval policy"), None
        except TimeoutError:
            error = f"the approval policy gave no decision within {policy.timeout:g} s"
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = f"the approval policy failed: {type(exc).__name__}: {exc}"
        return Approval.deny(f"not approved: {error}"), error


async def _within(awaitable: Awaitable[Any], timeout: float | None) -> Any:
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait((task,), timeout=timeout)
    if not done:
        task.cancel()
        task.add_done_callback(_retrieve)
        raise TimeoutError
    return task.result()


async def _on_thread(
    policy: ApprovalPolicy, request: ApprovalRequest, timeout: float | None
) -> Any:
    """Run a sync policy on a daemon thread: one that hangs is left there, not joined."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def run() -> None:
        try:
            value, error = policy(request), None
        except BaseException as exc:  # delivered to the run, which denies the call
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # the run ended while the policy hung
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=run, name="tooluse-approval", daemon=True).start()
    answer = await _within(future, timeout)
    if inspect.isawaitable(answer):
        answer = await _within(answer, timeout)
    return answer


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()
