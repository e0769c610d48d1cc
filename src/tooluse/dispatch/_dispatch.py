"""The dispatcher: the only place a tool runs.

JSON calls and calls made from a script take the same path, one step per module:

    run(calls) · call(name, arguments) · call_nowait(…) · call_direct(…)
        │
    validate   Validator.prepare (_validation.py) ─────────→ RejectedCall: nothing ran
        │ Prepared: the tool, the arguments as recorded, the function's kwargs
    approve    Gate.decide (_approval.py), for a run with a policy, when it asks
        │        about the tool ──→ denied: RejectedCall · deferred: ApprovalRequest
    schedule   Dispatcher._schedule: the Ledger answers? ──→ CallRecord, replayed
        │ Execution: the record to fill, the tool, its timeout
    execute    Runner (_running.py): take a slot of max_concurrency, run the tool
        │        under its timeout where it answers soonest (see `Runner`)
        │ its value, what it raised, or nothing (its timeout ran out)
    record     Execution.conclude ─────────────────────────→ CallRecord; slot freed

Every outcome (a record, a replay, a refusal) is also handed to ``on_ended`` the moment
it is made: the run keeps it even if the turn or script that made the call is stopped
before the outcome reaches its loop.

Validation refuses a call with the text the model is shown: an unknown tool (with
"did you mean"), argument text too large or not JSON, arguments that do not fit the
schema or the function's types, a caller the tool's ``callers`` leave out. The
approval step sits on this one path, so one policy covers the model's calls and
a script's calls alike; a call that needs it never takes the shortcuts that skip
the event loop (`call_direct` hands it back). The `Ledger` answers a call that repeats, in the retry
of a failed script, a side effect that already succeeded. A call refused or answered
from the ledger never waits for a slot.

In a durable run (``durable``, see `tooluse.durable`) every call, whoever makes it, is
decided and given its step in the run's record one at a time in the order it arrives,
so that a recovered run meets its recorded calls in the places they were recorded;
the tools then run side by side. The approval step waits for a deferred decision in
the run's record (a script's call pauses the script instead), and the execution is a
recorded step.

`run` (one turn of JSON calls) and `call` (one call by name) are the entry points;
`call_nowait` and `call_direct` are `call` for a script's adapter, returning whatever
is ready at once without a task.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .._messages import ToolCall
from .._records import CallRecord, Outcome, RejectedCall
from ..policy._approval import Approval, ApprovalRequest, Gate
from ..tools import RunContext, Tool, Toolbox
from ._handles import Handles
from ._ledger import Ledger
from ._running import DirectRun, Execution, Runner
from ._validation import Prepared, Validator, arguments_text, caller_of

__all__ = ["DirectRun", "Dispatcher", "DurableCalls", "Ledger"]

_T = TypeVar("_T")


class ReservedCall(Protocol):
    """A durable call whose place in the record is taken, running (see `DurableCalls`)."""

    #: A write call begun in an execution that crashed: it may be in doubt.
    may_be_in_doubt: bool

    async def ended(self) -> tuple[CallRecord | None, bool]:
        """The call's record and whether it ran now (False: it came from the record); a
        None record for a write call in doubt, which did not run."""
        ...


class DurableCalls(Protocol):
    """Where a durable run records its calls (implemented by `tooluse.durable`)."""

    def one_at_a_time(self, work: Callable[[], Awaitable[_T]]) -> Awaitable[_T]:
        """`work` done alone, after the calls that arrived before it, in the run's record."""
        ...

    async def began(self, tool: Tool) -> str:
        """The execution a call began in (recorded for a write call)."""
        ...

    def reserve(
        self, record: CallRecord, tool: Tool, start: Callable[[], Awaitable[CallRecord]], began: str
    ) -> ReservedCall:
        """The call's step, its place in the record taken now, running in the background."""
        ...

    async def decision(self, request: ApprovalRequest) -> Approval:
        """The decision on a deferred call, waited for in the run's record."""
        ...


class Dispatcher:
    """Validates and executes calls against a toolbox.

    Args:
        tools: the tools that may be called.
        timeout: default seconds per call (a tool's own ``timeout`` wins);
            None waits forever.
        max_concurrency: calls executing at once, across all callers.
        max_calls_per_turn: calls of one turn beyond this are refused.
        max_argument_bytes: argument text beyond this is refused unread.
        gate: the run's approval step (see `Gate`); None runs every valid call.
        unloaded: with tool search, the refusal text for the model's call of a
            tool it has not loaded (None: the call may run).
        on_ended: given each outcome the moment it is made: a call concluded (or
            given up on by its caller), answered from the ledger, or refused. The
            caller's own return comes later, or never if the caller is stopped
            first: this is how a run keeps every call, whatever stops it.
        deps: the run's dependencies, given to each tool that takes a `RunContext`.
        durable: the record of a durable run (see `DurableCalls`); None for a plain run.
        handles: the run's results kept by reference (see `Handles`): a string argument
            that is exactly a handle is given to the tool as the value it names.
    """

    def __init__(
        self,
        tools: Toolbox,
        *,
        timeout: float | None = 60.0,
        max_concurrency: int = 16,
        max_calls_per_turn: int = 128,
        max_argument_bytes: int = 1_000_000,
        gate: Gate | None = None,
        unloaded: Callable[[str], str | None] | None = None,
        on_ended: Callable[[Outcome], None] | None = None,
        deps: Any = None,
        durable: DurableCalls | None = None,
        handles: Handles | None = None,
    ) -> None:
        self.timeout = timeout
        self.deps = deps
        self.durable = durable
        self.on_ended = on_ended
        self.max_calls_per_turn = max_calls_per_turn
        self.gate = gate
        self._validator = Validator(
            tools, max_argument_bytes=max_argument_bytes, unloaded=unloaded, handles=handles
        )
        self._runner = Runner(max_concurrency)

    @property
    def tools(self) -> Toolbox:
        return self._validator.tools

    @property
    def max_argument_bytes(self) -> int:
        return self._validator.max_argument_bytes

    @property
    def running(self) -> int:
        """Calls holding a slot of ``max_concurrency``: running, or about to."""
        return self._runner.running

    @property
    def waiting(self) -> int:
        """Calls waiting for a slot of ``max_concurrency`` to free up."""
        return self._runner.waiting

    @property
    def abandoned(self) -> int:
        """Calls given up on (timed out, or their caller stopped) whose tool still runs."""
        return self._runner.abandoned

    @property
    def left_behind(self) -> tuple[asyncio.Future[Any], ...]:
        """Async tools given up on that still run: their event loop must not wait for them."""
        return self._runner.left_behind

    def close(self) -> None:
        """Stop the worker threads; a sync tool still running is abandoned, not joined."""
        self._runner.close()

    def _refused(self, outcome: RejectedCall) -> RejectedCall:
        if self.on_ended is not None:
            self.on_ended(outcome)
        return outcome

    async def run(
        self, calls: Sequence[ToolCall], *, round_: int = 0, source: str = "json"
    ) -> list[Outcome | ApprovalRequest]:
        """Validate and execute one turn's calls concurrently, in the calls' order.

        One call failing, timing out or being refused never loses its
        siblings' results. Calls the approval policy asks about are decided one
        after the other before any runs; a deferred one comes back as its
        `ApprovalRequest`, not run, while its allowed siblings run.
        """
        if self.durable is not None:
            return await self._run_durably(calls, round_=round_, source=source)
        if len(calls) == 1 and self.max_calls_per_turn >= 1:
            # Most turns make one call: the same steps as below, without their lists.
            only = self._validator.prepare(calls[0], round_=round_, source=source)
            if isinstance(only, RejectedCall):
                return [self._refused(only)]
            if self._asks(only):
                approved = await self._approve(only, round_=round_, source=source)
                if not isinstance(approved, Prepared):
                    return [approved]
                only = approved
            # A call that often ends at once: no coroutine to await.
            ended = self._execute(only, round_=round_, source=source, alone=True)
            return [ended if isinstance(ended, CallRecord) else await ended]
        outcomes: list[Outcome | ApprovalRequest | None] = [None] * len(calls)
        ready: list[tuple[int, Prepared]] = []
        for index, call in enumerate(calls):
            if index >= self.max_calls_per_turn:
                outcomes[index] = self._refused(
                    self._validator.reject(
                        call,
                        f"not run: this turn made {len(calls):,} calls and at most "
                        f"{self.max_calls_per_turn} run per turn; make the rest in the next turn",
                        round_=round_,
                        source=source,
                    )
                )
                continue
            checked: Prepared | RejectedCall | ApprovalRequest = self._validator.prepare(
                call, round_=round_, source=source
            )
            if isinstance(checked, RejectedCall):
                self._refused(checked)
            elif isinstance(checked, Prepared) and self._asks(checked):
                checked = await self._approve(checked, round_=round_, source=source)
            if isinstance(checked, Prepared):
                ready.append((index, checked))
            else:
                outcomes[index] = checked
        if len(ready) == 1:
            index, prepared = ready[0]
            # Most turns make one call, which often ends at once: no coroutine to await.
            ended = self._execute(prepared, round_=round_, source=source, alone=True)
            outcomes[index] = ended if isinstance(ended, CallRecord) else await ended
        elif ready:
            records = await asyncio.gather(
                *(
                    _settled(self._execute(p, round_=round_, source=source, alone=False))
                    for _, p in ready
                )
            )
            for (index, _), record in zip(ready, records, strict=True):
                outcomes[index] = record
        return [o for o in outcomes if o is not None]

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str,
        *,
        call_id: str,
        round_: int = 0,
        source: str = "script",
        ledger: Ledger | None = None,
    ) -> Outcome | ApprovalRequest:
        """Validate and execute one call given by name (how scripts call tools).

        With a ``ledger``, a call that replays the failed script before it is
        answered from there (see `Ledger`). A call the approval policy deferred
        comes back as its `ApprovalRequest`, not run.
        """
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
        outcome = self.call_nowait(
            name, text, call_id=call_id, round_=round_, source=source, ledger=ledger
        )
        return outcome if isinstance(outcome, CallRecord | RejectedCall) else await outcome

    def call_nowait(
        self,
        name: str,
        arguments: dict[str, Any] | str,
        *,
        call_id: str,
        round_: int = 0,
        source: str = "script",
        ledger: Ledger | None = None,
    ) -> Outcome | Awaitable[Outcome | ApprovalRequest]:
        """Like `call`, but an outcome that is ready at once is returned as it is.

        ``arguments`` is the argument text, or the object it decodes to (JSON values
        only, as a script's call arrives). A refused call, a replay from the ledger, or
        a quick sync tool called while no other call runs (see `Runner`) needs no task;
        anything else comes back as an awaitable of the outcome, which starts the call
        when first awaited.
        """
        if isinstance(arguments, str):
            prepared = self._validator.prepare(
                ToolCall(call_id, name, arguments), round_=round_, source=source
            )
        else:
            prepared = self._validator.prepare_decoded(
                call_id, name, arguments, round_=round_, source=source
            )
        if isinstance(prepared, RejectedCall):
            return self._refused(prepared)
        if self.durable is not None:
            return self._durably(prepared, round_=round_, source=source, ledger=ledger)
        if self._asks(prepared):
            return self._approve_and_execute(prepared, round_=round_, source=source, ledger=ledger)
        return self._execute(prepared, round_=round_, source=source, alone=True, ledger=ledger)

    def call_direct(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        call_id: str | Callable[[], str],
        round_: int = 0,
        source: str = "script",
        ledger: Ledger | None = None,
    ) -> Outcome | DirectRun | None:
        """Check a call on the caller's own thread, to run a sync tool right there.

        For a caller that is not the event loop and can wait for the tool itself (the
        sandbox's channel thread, while a script waits on one call): no thread handoff
        and no turn of the event loop. Returns None, having done nothing, when the tool
        is unknown or async or no slot of the concurrency limit is free; the caller then
        makes the call the usual way (`call_nowait`). Otherwise ``call_id`` (or what it
        returns) names the call, and the result is the refused call, the replay from the
        ledger, or a `DirectRun` holding a slot: the caller runs it, and the timeout is
        the caller's to enforce with `DirectRun.abandon`.
        """
        tool = self.tools.get(name)
        if (
            self.durable is not None  # a durable run's calls are recorded on the event loop
            or tool is None
            or tool.is_async
            or (self.gate is not None and self.gate.asks_about(tool))
            or not self._runner.take_slot_now()
        ):
            return None
        try:
            if not isinstance(call_id, str):
                call_id = call_id()
            prepared = self._validator.prepare_decoded(
                call_id, name, arguments, round_=round_, source=source
            )
            scheduled = (
                self._refused(prepared)
                if isinstance(prepared, RejectedCall)
                else self._schedule(prepared, round_=round_, source=source, ledger=ledger)
            )
        except BaseException:
            self._runner.give_slot_from_thread()
            raise
        if isinstance(scheduled, Execution):
            return self._runner.direct(scheduled)
        self._runner.give_slot_from_thread()
        return scheduled

    def _asks(self, prepared: Prepared) -> bool:
        return self.gate is not None and self.gate.asks_about(prepared.tool)

    async def _approve(
        self, prepared: Prepared, *, round_: int, source: str
    ) -> Prepared | RejectedCall | ApprovalRequest:
        """The call as approved (arguments edited, maybe), refused, or deferred."""
        checked = await self._decide(prepared, round_=round_, source=source)
        return self._refused(checked) if isinstance(checked, RejectedCall) else checked

    async def _decide(
        self, prepared: Prepared, *, round_: int, source: str, in_doubt: bool = False
    ) -> Prepared | RejectedCall | ApprovalRequest:
        assert self.gate is not None
        tool = prepared.tool
        decision, request = await self.gate.decide(
            tool,
            prepared.arguments,
            call_id=prepared.id,
            caller=caller_of(source),
            round_=round_,
            in_doubt=in_doubt,
        )
        if decision.decision == "defer" and self.durable is not None and source != "script":
            # A durable run waits in its record for the decision, however long it takes.
            # A script's call is deferred as in a plain run: the script pauses, and the
            # run waits for the decision with no script running (see `Agent`).
            decision = await self.durable.decision(request)
        if decision.decision == "defer":
            return request
        if decision.decision == "deny":
            return self._validator.reject(
                ToolCall(prepared.id, tool.name, arguments_text(prepared.arguments)),
                f"the call to {tool.name} was denied: {decision.reason or 'not approved'}",
                round_=round_,
                source=source,
                kind="denied",
            )
        if decision.arguments is None:
            return prepared
        edited = self._validator.prepare_decoded(
            prepared.id, tool.name, decision.arguments, round_=round_, source=source
        )
        if isinstance(edited, Prepared):
            edited.repairs += ("the arguments were edited when the call was approved",)
        return edited

    async def _approve_and_execute(
        self, prepared: Prepared, *, round_: int, source: str, ledger: Ledger | None
    ) -> Outcome | ApprovalRequest:
        checked = await self._approve(prepared, round_=round_, source=source)
        if not isinstance(checked, Prepared):
            return checked
        return await _settled(
            self._execute(checked, round_=round_, source=source, alone=True, ledger=ledger)
        )

    def _execute(
        self,
        prepared: Prepared,
        *,
        round_: int,
        source: str,
        alone: bool,
        ledger: Ledger | None = None,
    ) -> CallRecord | Awaitable[CallRecord]:
        """Schedule and execute a call from the event loop; a record if it ended at once.

        ``alone``: nothing else the caller started waits on this call's siblings, so a
        quick sync tool may be waited for on its thread (see `Runner`).
        """
        scheduled = self._schedule(prepared, round_=round_, source=source, ledger=ledger)
        if isinstance(scheduled, CallRecord):
            return scheduled
        return self._runner.start(scheduled, alone=alone)

    def _schedule(
        self, prepared: Prepared, *, round_: int, source: str, ledger: Ledger | None
    ) -> CallRecord | Execution:
        """The call's record if the ledger answers it, else its execution, ready to run."""
        tool = prepared.tool
        record = CallRecord(
            id=prepared.id,
            name=tool.name,
            arguments=prepared.arguments,
            round=round_,
            repairs=prepared.repairs,
            source=source,
        )
        if ledger is not None and tool.side_effects:
            earlier = ledger.replay(tool.name, record.arguments, tool.effects)
            if earlier is not None:
                record.result = earlier.result
                record.replayed = True
                record.started_at = time.time()
                ledger.write(record, tool.effects)
                if self.gate is not None:
                    self.gate.note(record, tool)
                if self.on_ended is not None:
                    self.on_ended(record)
                return record
        timeout = tool.timeout if tool.timeout is not None else self.timeout
        after = self.gate.note if self.gate is not None else None
        kwargs = prepared.kwargs
        if tool.context_parameter is not None:
            # Given on the host, after validation: no model, script or record sees it.
            context = RunContext(self.deps, call_id=record.id, tool=tool.name)
            kwargs = {**kwargs, tool.context_parameter: context}
        return Execution(record, tool, kwargs, timeout, ledger, after=after, ended=self.on_ended)

    # --- a durable run's calls ----------------------------------------------------------

    async def _run_durably(
        self, calls: Sequence[ToolCall], *, round_: int, source: str
    ) -> list[Outcome | ApprovalRequest]:
        """`run` for a durable run: each call validated and decided in turn, then executed
        side by side with the others."""
        outcomes: list[Outcome | ApprovalRequest | None] = []
        started: list[tuple[int, Awaitable[Outcome | ApprovalRequest]]] = []
        for index, call in enumerate(calls):
            if index >= self.max_calls_per_turn:
                outcomes.append(
                    self._refused(
                        self._validator.reject(
                            call,
                            f"not run: this turn made {len(calls):,} calls and at most "
                            f"{self.max_calls_per_turn} run per turn; make the rest in the "
                            "next turn",
                            round_=round_,
                            source=source,
                        )
                    )
                )
                continue
            checked = self._validator.prepare(call, round_=round_, source=source)
            if isinstance(checked, RejectedCall):
                outcomes.append(self._refused(checked))
            else:
                outcomes.append(None)
                started.append(
                    (index, self._durably(checked, round_=round_, source=source, ledger=None))
                )
        # Started in the calls' order, they take their places in the record in that order,
        # and run side by side (see `_durably`).
        ended = await asyncio.gather(*(work for _, work in started))
        for (index, _), outcome in zip(started, ended, strict=True):
            outcomes[index] = outcome
        return [o for o in outcomes if o is not None]

    async def _durably(
        self, prepared: Prepared, *, round_: int, source: str, ledger: Ledger | None
    ) -> Outcome | ApprovalRequest:
        """Decide and execute one call of a durable run.

        The call is decided, and its step given its place in the run's record, alone and
        in the order the calls arrive; its tool then runs while later calls take their
        places, so calls made together run side by side (one that waits for another
        does not wait forever), and a recovered run meets them in the same places.
        """
        durable = self.durable
        assert durable is not None

        async def work() -> Outcome | ApprovalRequest | _Running:
            checked: Prepared | RejectedCall | ApprovalRequest = prepared
            if self._asks(prepared):
                checked = await self._approve(prepared, round_=round_, source=source)
            if not isinstance(checked, Prepared):
                return checked
            return await self._reserve(
                checked, durable, round_=round_, source=source, ledger=ledger
            )

        started = await durable.one_at_a_time(work)
        if not isinstance(started, _Running):
            return started
        record, ran = await started.reserved.ended()
        assert record is not None  # only a write begun in a crashed execution is in doubt
        return self._recorded(record, ran, started.execution, ledger)

    async def _reserve(
        self,
        prepared: Prepared,
        durable: DurableCalls,
        *,
        round_: int,
        source: str,
        ledger: Ledger | None,
    ) -> Outcome | ApprovalRequest | _Running:
        """Give an approved call its step in the record, or its outcome from the ledger.

        A write call that began before a crash may be in doubt: it is settled here, alone,
        and not run again unless the approval step, asked with ``in_doubt``, allows it.
        """
        scheduled = self._schedule(prepared, round_=round_, source=source, ledger=ledger)
        if isinstance(scheduled, CallRecord):
            return scheduled
        execution = scheduled

        def start() -> Awaitable[CallRecord]:
            return _settled(self._runner.start(execution, alone=False))

        began = await durable.began(execution.tool)
        reserved = durable.reserve(execution.record, execution.tool, start, began)
        if not reserved.may_be_in_doubt:
            return _Running(reserved, execution)
        record, ran = await reserved.ended()
        if record is not None:
            return self._recorded(record, ran, execution, ledger)
        if self.gate is None:  # a durable agent always has a gate; kept safe anyway
            return self._refused(self._in_doubt_refusal(prepared, round_, source, None))
        again = await self._decide(prepared, round_=round_, source=source, in_doubt=True)
        if not isinstance(again, Prepared):
            return self._refused(again) if isinstance(again, RejectedCall) else again
        return await self._reserve(again, durable, round_=round_, source=source, ledger=ledger)

    def _recorded(
        self, record: CallRecord, ran: bool, execution: Execution, ledger: Ledger | None
    ) -> CallRecord:
        if not ran:
            # Answered from the record: what the execution would have told, told now. It
            # is the call that ran before the crash, not a replay the model is told of.
            if self.gate is not None:
                self.gate.note(record, execution.tool)
            if ledger is not None and execution.tool.side_effects and record.ok:
                ledger.write(record, execution.tool.effects)
            if self.on_ended is not None:
                self.on_ended(record)
        return record

    def _in_doubt_refusal(
        self, prepared: Prepared, round_: int, source: str, reason: str | None
    ) -> RejectedCall:
        return self._validator.reject(
            ToolCall(prepared.id, prepared.tool.name, arguments_text(prepared.arguments)),
            f"the call to {prepared.tool.name} was not run again: it started before the run "
            f"crashed and never ended, so it may have taken effect{reason or ''}",
            round_=round_,
            source=source,
            kind="denied",
        )


@dataclass(frozen=True, slots=True)
class _Running:
    """A durable call whose step has its place in the record, and its execution."""

    reserved: ReservedCall
    execution: Execution


async def _settled(outcome: CallRecord | Awaitable[CallRecord]) -> CallRecord:
    return outcome if isinstance(outcome, CallRecord) else await outcome
