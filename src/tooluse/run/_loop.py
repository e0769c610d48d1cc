"""The agent loop as a generator of effects.

`agent_flow` never waits on anything itself: it yields `AskModel` and
`RunCalls` and receives the model's response or the calls' outcomes. The
drivers in `_agent.py` do the waiting. This keeps the loop readable in one
screen and free of I/O.

A call the approval policy defers comes back as an `ApprovalRequest`: the loop
records what did run, notes where it stopped (a `Paused` shape: a turn, a script
or a plan) and ends with status ``needs_approval``. Started again with that
state, it first finishes the stopped turn, script or plan, then goes on with the
next round.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .. import events as ev
from .._exceptions import ModelError
from .._messages import Message, ToolCall, Usage
from .._records import (
    Answered,
    CallRecord,
    Outcome,
    RejectedCall,
    ScriptRecord,
    call_identity,
    render_result,
)
from .._tokens import count_tokens
from ..context._prefix import Conversation
from ..context._window import ContextWindow
from ..conventions import Answer, Calls, Convention, Plan, Prepared, Retry, Script
from ..conventions._plan import PlanConvention, PlanError, PlanProgram
from ..dispatch._handles import Handles
from ..dispatch._plans import PlanRun, run_plan
from ..models import ModelRequest, ModelResponse, ToolChoice
from ..policy._approval import ApprovalRequest
from ..tools import Tool
from ..tools._output import OutputTool
from ._answercheck import NOTE_START, contradiction, echo
from ._comparecheck import refuted_comparison
from ._numbercheck import (
    NUMBER_NOTE,
    GivenNumbers,
    found_already,
    numbers_in,
    unseen_numbers,
    written,
)
from ._result import RunResult, RunStatus, RunUsage
from ._state import Paused, PausedPlan, PausedScript, PausedTurn
from ._unitcheck import UnitMismatch, unit_mismatch

__all__ = ["AskModel", "LoopConfig", "RunCalls", "RunState", "agent_flow", "keep_unrecorded"]


@dataclass(frozen=True, slots=True)
class AskModel:
    request: ModelRequest


@dataclass(frozen=True, slots=True)
class RunCalls:
    calls: Sequence[ToolCall]
    round: int
    source: str = "json"


@dataclass(frozen=True, slots=True)
class RunScript:
    """Run `code`; the driver answers with what `ScriptRunner.run` returns.

    ``replay`` and ``awaited`` resume a script paused for approval.
    """

    id: str
    code: str
    round: int
    repairs: Sequence[str]
    replay: Sequence[Answered] = ()
    awaited: Sequence[str] = ()


Effect = AskModel | RunCalls | RunScript

#: Characters of a refused over-long argument text the conversation keeps.
_ECHO_KEEP = 1_000
#: After a script that ran without calling any tool: what it printed came from
#: the script's own literals and arithmetic, which a small model often takes for
#: looked-up facts.
NO_CALL_NOTE = (
    "Note: this script called no tool, so nothing it printed was looked up. If the "
    "task needs facts from the tools, call them in a new script; do not type in values."
)
#: After a first answer that names a tool as if calling it (`` `get_rate` ``,
#: ``get_rate(...)``, "the get_rate function") while no tool has run: a small
#: model often describes a call, or what it would return, instead of making it.
UNMADE_CALL_NOTE = (
    "Note: your reply names the tool {name} but no tool has been called, so nothing in "
    "it was looked up. If the task needs a tool's result, call the tool now; otherwise "
    "give your answer again."
)
#: For a reply in plain text in a run with an output type, unless the convention words
#: its own (`Prepared.output_note`).
OUTPUT_NOTE = (
    "Your reply was plain text, but this task ends only with a call to {name}: call it "
    "with your answer."
)
#: Sent, once a run, for an answer that writes out a call to a tool right after a
#: call failed: small models explain the corrected call instead of making it.
UNMADE_RETRY_NOTE = (
    "Note: your reply writes out a call to {name}, but a call written in an answer is "
    "not made: nothing has run since the error. If the task still needs that call, make "
    "it now; otherwise give your answer again."
)
#: Sent, once a run, for an answer that hands the user one of the tools to run as a
#: command (a line of a code block that starts with its name): small models explain
#: how to do a task by hand instead of calling the tool that does it.
HANDED_OVER_NOTE = (
    "Note: your reply tells the user to run {name}, but {name} is one of your tools and "
    "runs for real when you call it. If the task needs it, call it now; otherwise give "
    "your answer again."
)
#: Sent, once a run, for an answer that says the model cannot act (execute commands,
#: access the user's files or system) while no tool has run: small models trained
#: as chat assistants say so even with tools in front of them.
REFUSAL_NOTE = (
    "Note: your reply says you cannot do this, but your tools run for real on the "
    "user's behalf. If one of them does what was asked, call it now; otherwise give "
    "your answer again."
)

#: Sent, once a run, for an answer right after a script that stopped with an error
#: when some of its calls had returned: a small model writes a whole script before it
#: sees any result (looking up an identifier it made up after listing the real ones),
#: then answers with the failure although the values it needed were printed.
FAILED_SCRIPT_NOTE = (
    "Note: your script stopped with an error, so it did not do the whole task. Write it "
    "again and run it, using the values your tools returned above in place of any you "
    "assumed. If the error means the task cannot be done, give your answer again."
)


#: How a note of `_numbercheck` is known again in a resumed run's messages.
_NUMBER_NOTE_END = NUMBER_NOTE.split("}", 2)[-1][:40]


@dataclass(frozen=True, slots=True)
class LoopConfig:
    max_rounds: int = 10
    cycle_note_at: int = 3
    cycle_limit: int | None = 5
    count_tokens: bool = True
    max_result_chars: int = 50_000
    #: Argument text beyond this is refused unread, and the reply that made
    #: the call keeps only its start: it would be sent again every round.
    max_argument_chars: int = 1_000_000
    #: Overrides the convention's tool choice until a call has run.
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    #: The names the model may call tools by; an answer that names one as if
    #: calling it before any tool has run gets `UNMADE_CALL_NOTE`, and one right
    #: after a failed call gets `UNMADE_RETRY_NOTE`; one note a run.
    tool_names: frozenset[str] = frozenset()
    #: Check a final answer against the run's results (`tooluse.run._answercheck`):
    #: one that contradicts them gets one note a run, and one more round.
    check_answers: bool = False


@dataclass(slots=True)
class RunState:
    """Everything the run has recorded so far; kept whatever happens."""

    emit: Callable[[ev.Event], None]
    #: Whether anyone listens; events are not even built otherwise.
    tracing: bool = True
    #: Whether a pause tells `ApprovalNeeded` itself (a durable run tells it later,
    #: once the pending calls are published in its record).
    tells_pending: bool = True
    #: Ids of the calls whose end has been told (a script's, as they ended): told once.
    told: set[str] = field(default_factory=set)
    messages: list[Message] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    rejected: list[Any] = field(default_factory=list)
    scripts: list[ScriptRecord] = field(default_factory=list)
    usage: RunUsage = field(default_factory=RunUsage)
    rounds: int = 0
    status: RunStatus = "error"
    answer: str | None = None
    #: The typed value the run ended with (a run with an output type).
    output: Any = None
    error: str | None = None
    #: Calls waiting for a decision, and where the run stopped for them.
    pending: list[ApprovalRequest] = field(default_factory=list)
    paused: Paused | None = None
    call_ids: set[str] = field(default_factory=set)
    count_tokens: bool = True
    #: The budgeted window, when the agent has a context policy.
    context: ContextWindow | None = None
    #: Results over the result limit, kept by reference (None: shown clipped instead).
    handles: Handles | None = None
    #: o200k tokens of all messages so far, kept as messages are added so a
    #: round costs the same however long the conversation is.
    context_tokens: int = 0
    last_tokens: int = 0
    #: Tools loaded during the run (tool search), appended to a native tool list.
    extra_tools: Callable[[], Sequence[Tool]] | None = None
    #: Whether the run has had `UNMADE_CALL_NOTE` or another note of `_unmade_call_note`.
    noted_unmade_call: bool = False
    #: Whether a note asked for a call (those above, and the answer check's note on a
    #: unit), and how many calls had run when it was sent: rounds ask for a call until
    #: one more has run.
    call_asked: bool = False
    calls_at_note: int = 0
    #: Whether the run has had the answer check's note.
    noted_answer: bool = False
    #: The numbers the task, the user and the tools have given, for the note on a call
    #: that takes others (`_numbercheck`); and whether the run has had that note.
    given: GivenNumbers = field(default_factory=GivenNumbers)
    noted_numbers: bool = False
    #: The messages again, for the requests to show without a copy each round
    #: (`messages` is handed out with the result, which may change it).
    sent: Conversation = field(default_factory=Conversation)
    _repeats: dict[tuple[str, str, str], int] = field(default_factory=dict)
    # How many turns made each failing call (name, arguments) that failed.
    _failures: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, message: Message) -> Message:
        message.id = f"m{len(self.messages) + 1}"
        self.messages.append(message)
        self.sent.append(message)
        if self.context is not None:
            self.context.add(message)
        if self.count_tokens:
            self.last_tokens = message_tokens(message)
            self.context_tokens += self.last_tokens
        return message

    def restore(self, result: RunResult) -> None:
        """Take up a paused run's record, to resume it; ``result`` is left as it was.

        The lists and messages are copied (the run numbers and windows its own); the
        records in them are kept as they are, since nothing changes a record once made.
        """
        recorded = {c.id: c for c in result.calls} if self.handles is not None else {}
        for message in result.messages:
            self.add(replace(message))
            self.call_ids.update(call.id for call in message.tool_calls)
            record = recorded.get(message.tool_call_id or "") if message.role == "tool" else None
            if record is not None and self.handles is not None and message.content:
                # The handles shown before the pause still name their results.
                self.handles.adopt(message.content, record.id, record.result)
        self.calls.extend(result.calls)
        self.rejected.extend(result.rejected)
        self.scripts.extend(result.scripts)
        self.usage = RunUsage(list(result.usage.rounds), list(result.usage.asides))
        self.rounds = result.rounds
        self.pending = list(result.pending)
        # A run is noted once, across its pauses too.
        self.noted_answer = any(
            m.role == "user" and (m.content or "").startswith(NOTE_START) for m in result.messages
        )
        self.noted_numbers = any(
            m.role == "user" and _NUMBER_NOTE_END in (m.content or "") for m in result.messages
        )


def _delivered(state: RunState, output: OutputTool | None, since: int) -> bool:
    """Whether a call of the output tool ran among the calls recorded from `since`; the run
    then ends with its value (the last one's, if several ran)."""
    if output is None:
        return False
    for record in reversed(state.calls[since:]):
        if record.name == output.name and record.ok:
            # The dispatcher accepted these very arguments: reading them again cannot fail.
            state.output = output.value_of(record.arguments)
            state.status, state.answer = "completed", output.spec.text(state.output)
            return True
    return False


def message_tokens(message: Message) -> int:
    """o200k tokens of a message, plus a small constant for its role wrapper."""
    text = message.content or ""
    for call in message.tool_calls:
        text += call.name + call.arguments
    return count_tokens(text) + 4


def _unique_ids(state: RunState, calls: Sequence[ToolCall]) -> list[ToolCall]:
    """Give every call an id no other call of the run has.

    Some servers number calls per message (``call_0`` in every turn); a tool
    message must answer exactly one call, so repeated ids get a suffix.
    """
    taken = state.call_ids
    out: list[ToolCall] = []
    for call in calls:
        call_id = call.id
        if call_id not in taken:  # as most are
            taken.add(call_id)
            out.append(call)
            continue
        n = 2
        while f"{call.id}~{n}" in taken:
            n += 1
        call_id = f"{call.id}~{n}"
        taken.add(call_id)
        out.append(ToolCall(call_id, call.name, call.arguments))
    return out


def _echo(call: ToolCall, limit: int) -> ToolCall:
    """The call as the conversation keeps it: over-long arguments cut, with a note.

    Such a call is refused for its size; the refusal tells the model why.
    """
    if len(call.arguments) <= limit:
        return call
    keep = min(limit, _ECHO_KEEP)
    cut = len(call.arguments) - keep
    note = f"... [{cut:,} characters cut: the arguments were over the size limit]"
    return ToolCall(call.id, call.name, call.arguments[:keep] + note)


def _record_outcomes(state: RunState, outcomes: Sequence[Outcome]) -> None:
    for outcome in outcomes:
        if isinstance(outcome, CallRecord):
            state.calls.append(outcome)
        else:
            state.rejected.append(outcome)
        if state.tracing and outcome.id not in state.told:
            state.told.add(outcome.id)
            state.emit(ev.call_outcome(outcome))
            used = state.handles.used.get(outcome.id) if state.handles is not None else None
            if used:
                state.emit(ev.HandleUsed(used, outcome.id, outcome.name, outcome.round))
            # A context tool that ran moved messages out of the window.
            moved = ev.context_move(outcome) if isinstance(outcome, CallRecord) else None
            if moved is not None:
                state.emit(moved)


def keep_unrecorded(state: RunState, outcomes: Sequence[Outcome]) -> None:
    """Record the outcomes the loop has not: calls that ended in a turn or script that was
    cut short (a cancellation, Ctrl-C, a stream left early), whose reply never reached it."""
    if not outcomes:
        return
    recorded = {id(o) for o in state.calls}
    recorded.update(id(o) for o in state.rejected)
    _record_outcomes(state, [o for o in outcomes if id(o) not in recorded])


def _pause(
    state: RunState,
    pending: list[ApprovalRequest],
    paused: Paused,
    script: ScriptRecord | None = None,
) -> None:
    """Stop the run for `pending`; a `script` that stopped for them ends ``paused``."""
    state.status = "needs_approval"
    state.pending = pending
    state.paused = paused
    names = ", ".join(sorted({p.tool for p in pending}))
    state.error = f"{len(pending)} call(s) wait for approval: {names}"
    if state.tracing:
        if state.tells_pending:
            state.emit(ev.ApprovalNeeded(tuple(pending)))
        if script is not None:
            state.emit(ev.ScriptEnd.of(script))
        state.emit(ev.Paused(paused.round))


def _split(
    outcomes: Sequence[Outcome | ApprovalRequest],
) -> tuple[list[Outcome], list[ApprovalRequest]]:
    ended = [o for o in outcomes if not isinstance(o, ApprovalRequest)]
    if len(ended) == len(outcomes):
        return ended, []
    return ended, [o for o in outcomes if isinstance(o, ApprovalRequest)]


def _finish_turn(
    state: RunState,
    outcomes: Sequence[Outcome],
    *,
    new: Sequence[Outcome],
    notes: Sequence[str],
    round_: int,
    config: LoopConfig,
    task: str = "",
) -> bool:
    """Answer a turn's calls in the conversation; False if a cycle ends the run.

    ``new`` are the outcomes not recorded yet (a resumed turn recorded the others).
    """
    if config.check_answers and not state.noted_numbers:
        state.given.update(state.messages)  # before this turn's results: none is a source
    # Each result is written out once, for the conversation and the cycle count alike.
    executed: list[tuple[CallRecord, str]] = []
    for outcome in outcomes:
        whole = outcome.content
        failed = not isinstance(outcome, CallRecord) or not outcome.ok
        handles = state.handles
        if (
            handles is not None
            and len(whole) > handles.limit
            and isinstance(outcome, CallRecord)
            and outcome.ok
        ):
            # A large result the model passes on by its handle, never by copying it.
            content = _by_reference(state, outcome.id, outcome.result, whole, round_)
        elif state.context is not None:
            content = whole  # the window stores what is over its limit
        else:
            content = _clip(whole, config.max_result_chars)
        if isinstance(outcome, CallRecord):
            executed.append((outcome, whole))
        state.add(
            Message("tool", content, tool_call_id=outcome.id, name=outcome.name, is_error=failed)
        )
    _record_outcomes(state, new)
    cycle = _cycle_note(state, executed, config)
    failing = _failure_note(state, outcomes, config)
    if state.status == "cycle":
        return False
    more = [*notes, cycle] if cycle else list(notes)
    if failing:
        more.append(failing)
    more.extend(_near_misses(outcomes, task))
    if config.check_answers and not state.noted_numbers:
        number = _number_note(state, outcomes)
        if number is not None:
            more.append(number)
    if more:
        state.add(Message("user", "\n".join(more)))
        if state.tracing:
            state.emit(ev.Feedback(round_, "\n".join(more)))
    return True


def _calls_turn(
    state: RunState,
    calls: Sequence[ToolCall],
    *,
    task: str,
    notes: Sequence[str],
    round_: int,
    config: LoopConfig,
    earlier: Sequence[Outcome] = (),
) -> Generator[Effect, Any, bool]:
    """Run a turn's calls (those not in ``earlier``); False if the run stops here."""
    done = {o.id: o for o in earlier} if earlier else {}
    todo = [c for c in calls if c.id not in done] if done else list(calls)
    reply: list[Outcome | ApprovalRequest] = yield RunCalls(todo, round_)
    ended, pending = _split(reply)
    for outcome in ended:
        done[outcome.id] = outcome
    if pending:
        _record_outcomes(state, ended)
        paused = PausedTurn(
            task=task, round=round_, calls=tuple(calls), done=tuple(done), notes=tuple(notes)
        )
        _pause(state, pending, paused)
        return False
    outcomes = [done[c.id] for c in calls]
    return _finish_turn(
        state, outcomes, new=ended, notes=notes, round_=round_, config=config, task=task
    )


def _script_turn(
    state: RunState, task: str, effect: RunScript, config: LoopConfig
) -> Generator[Effect, Any, bool]:
    """Run a script; False if it paused for approval or a failing call ends the run."""
    record, every, answered = yield effect
    ended, pending = _split(every)
    _record_outcomes(state, ended)
    if pending:
        paused = PausedScript(
            task=task,
            round=effect.round,
            script_id=effect.id,
            code=effect.code,
            repairs=tuple(effect.repairs),
            answered=tuple(answered),
        )
        _pause(state, pending, paused, record)
        return False
    state.scripts.append(record)
    content = record.content
    made = [o for o in ended if isinstance(o, CallRecord)]
    if record.status == "ok" and not record.stdout.strip() and made:
        # A script that printed nothing still learned something: the model answers from
        # its calls' results instead of guessing what they were.
        content = _clip(_results_of(made, config), config.max_result_chars)
    elif record.status == "ok" and not every and not answered:
        content = f"{content}\n{NO_CALL_NOTE}" if content else NO_CALL_NOTE
    state.add(
        Message(
            "tool",
            content,
            tool_call_id=effect.id,
            name="python",
            is_error=record.status != "ok",
        )
    )
    if state.tracing:
        state.emit(ev.ScriptEnd.of(record))
    cycle = _script_cycle_note(state, effect.code, content, config)
    failing = _failure_note(state, ended, config)
    if state.status == "cycle":
        return False
    notes = [note for note in (cycle, failing) if note]
    if notes:
        state.add(Message("user", "\n".join(notes)))
        if state.tracing:
            state.emit(ev.Feedback(effect.round, "\n".join(notes)))
    return True


def _plan_turn(
    state: RunState,
    task: str,
    program: PlanProgram,
    plan_id: str,
    *,
    round_: int,
    earlier: Sequence[Outcome] = (),
) -> Generator[Effect, Any, bool]:
    """Run a plan, wave after wave, in one round; False if it paused for approval."""
    done = {o.id: o for o in earlier}
    previous = {
        call_identity(c.name, c.arguments): c for c in state.calls if c.source == "plan" and c.ok
    }
    runner = run_plan(
        program,
        plan_id,
        reuse=lambda name, args: previous.get(call_identity(name, args)),
        earlier=done,
    )
    try:
        wave = next(runner)
        while True:
            wave = runner.send((yield RunCalls(wave, round_, source="plan")))
    except StopIteration as stop:
        run: PlanRun = stop.value
    _record_outcomes(state, run.outcomes)
    if run.pending:
        ended = (*done, *(o.id for o in run.outcomes))
        paused = PausedPlan(task=task, round=round_, plan_id=plan_id, code=program.code, done=ended)
        _pause(state, run.pending, paused)
        return False
    if run.ok and state.handles is not None:
        text = render_result(run.result)  # written once, whatever its size
        if len(text) > state.handles.limit:
            text = _by_reference(state, plan_id, run.result, text, round_)
        report = run.report(text)
    else:
        report = run.report()
    state.add(Message("tool", report, tool_call_id=plan_id, name="plan", is_error=not run.ok))
    if state.tracing:
        state.emit(
            ev.PlanEnd(
                plan_id,
                round_,
                program.code,
                run.ok,
                tuple(ev.PlanStep(s.name, s.line, s.status, s.error) for s in run.steps),
                report,
            )
        )
    return True


def _resume(
    state: RunState, paused: Paused, config: LoopConfig, convention: Convention
) -> Generator[Effect, Any, bool]:
    """Finish the turn, script or plan a run was paused in; False if the run stops again."""
    if state.tracing:
        state.emit(ev.Resumed(paused.round))
    awaited = [p.key for p in state.pending]
    state.pending = []
    if isinstance(paused, PausedScript):
        effect = RunScript(
            paused.script_id,
            paused.code,
            paused.round,
            paused.repairs,
            replay=paused.answered,
            awaited=awaited,
        )
        return (yield from _script_turn(state, paused.task, effect, config))
    finished = {o.id: o for o in [*state.calls, *state.rejected] if o.id in paused.done}
    earlier = [finished[i] for i in paused.done if i in finished]
    if isinstance(paused, PausedTurn):
        return (
            yield from _calls_turn(
                state,
                paused.calls,
                task=paused.task,
                notes=paused.notes,
                round_=paused.round,
                config=config,
                earlier=earlier,
            )
        )
    program = _paused_program(state, paused, convention)
    if program is None:
        return False
    turn = _plan_turn(
        state, paused.task, program, paused.plan_id, round_=paused.round, earlier=earlier
    )
    return (yield from turn)


def _paused_program(
    state: RunState, paused: PausedPlan, convention: Convention
) -> PlanProgram | None:
    """The paused plan read again over this run's tools; None (the run ends) if it cannot be."""
    if not isinstance(convention, PlanConvention):
        state.status = "error"
        state.error = (
            f"the run paused in a plan, and this agent's convention ({convention.name}) "
            "does not run plans: resume it with the plan convention"
        )
        return None
    try:
        return convention.read_plan(paused.code)
    except PlanError as exc:
        state.status = "error"
        state.error = f"the paused plan can no longer be read over this agent's tools: {exc}"
        return None


#: What one call's result may take of a silent script's message.
_SILENT_RESULT_CHARS = 2_000


def _results_of(calls: Sequence[CallRecord], config: LoopConfig) -> str:
    """A silent script's calls and what each returned, each result shortened."""
    each = max(min(_SILENT_RESULT_CHARS, config.max_result_chars // max(len(calls), 1)), 200)
    lines = ["The script printed nothing. Its calls returned:"]
    for call in calls:
        arguments = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
        lines.append(f"{call.name}({arguments}) -> {_clip(call.content, each)}")
    return "\n".join(lines)


def _by_reference(state: RunState, call_id: str, value: Any, text: str, round_: int) -> str:
    """What the model sees of a result over the limit: its handle, shape and a preview."""
    assert state.handles is not None
    kept = state.handles.keep(call_id, value, text)
    assert kept is not None  # the caller checked the limit
    if state.tracing:
        state.emit(ev.HandleStored(kept.handle, call_id, kept.shape, kept.chars, round_))
    return state.handles.shown(kept, text)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 2 // 3], text[-(limit // 3) :]
    return f"{head}\n[... {len(text) - len(head) - len(tail):,} characters cut ...]\n{tail}"


def _round_usage(
    state: RunState, response: ModelResponse, tools_tokens: int, config: LoopConfig
) -> Usage:
    if response.usage is not None:
        return response.usage
    if not config.count_tokens:
        return Usage()
    output = state.last_tokens  # the reply was appended last
    if state.context is not None:
        # what the request carried: the window before the reply joined it
        sent = state.context.total - state.context.last_tokens
        return Usage(sent + tools_tokens, output, "o200k")
    return Usage(state.context_tokens - output + tools_tokens, output, "o200k")


def _cycle_note(
    state: RunState, records: Sequence[tuple[CallRecord, str]], config: LoopConfig
) -> str | None:
    """Count identical call+result repeats; return a note for the model if it loops.

    ``records`` are the turn's calls, each with its content.
    """
    worst: CallRecord | None = None
    worst_count = 0
    for record, content in records:
        key = (*call_identity(record.name, record.arguments), content)
        count = state._repeats[key] = state._repeats.get(key, 0) + 1
        if count > worst_count:
            worst, worst_count = record, count
    if worst is None or worst_count < config.cycle_note_at:
        return None  # as most turns are: the note's words are not even put together
    return _repeated(
        state,
        worst_count,
        config,
        stopped=f"{worst.name} was called {worst_count} times with the same arguments and "
        "returned the same result each time; the run was stopped",
        note=f"Note: {worst.name} has now returned the same result {worst_count} times for "
        "the same arguments. Calling it again will not change the result: use what you "
        "have or try something different.",
    )


def _script_cycle_note(state: RunState, code: str, content: str, config: LoopConfig) -> str | None:
    """Count runs of the same script with the same output, as `_cycle_note` counts calls.

    Tools that report failure in their result rather than by raising (``{"error":
    ...}``) leave the failure check nothing to see, and a small model can write one
    script round after round.
    """
    key = ("python", code.strip(), content)
    count = state._repeats[key] = state._repeats.get(key, 0) + 1
    return _repeated(
        state,
        count,
        config,
        stopped=f"the same script ran {count} times and gave the same output each time; "
        "the run was stopped",
        note=f"Note: this script has now run {count} times with the same output. Running "
        "it again will not change it: answer from what it gave, or write a different script.",
    )


def _repeated(
    state: RunState, count: int, config: LoopConfig, *, stopped: str, note: str
) -> str | None:
    """What `count` identical repeats come to: nothing below `cycle_note_at`, the end of
    the run (status ``cycle``, `stopped` its error) from `cycle_limit`, else `note`."""
    if count < config.cycle_note_at:
        return None
    if config.cycle_limit is not None and count >= config.cycle_limit:
        state.status, state.error = "cycle", stopped
        return None
    return note


#: How alike (difflib's ratio, case aside) an argument and a word of the task must be
#: for the argument to be the word miscopied.
_NEAR = 0.85
#: The user's words a failed call's argument may have meant to copy: addresses, codes, names.
_TASK_TOKEN = re.compile(r"[\w][\w.@+-]*[\w]")


def _near_misses(outcomes: Sequence[Outcome], task: str) -> list[str]:
    """A note for each failed call's argument that nearly copies a word of the task.

    "Quinn.Erikson97@corp.example" where the task writes
    ``quinn.eriksen97@corp.example``: the call failed on a value the user gave,
    miscopied; the note names the task's own, once per argument.
    """
    words = {w for w in _TASK_TOKEN.findall(task) if len(w) >= 6}
    notes: list[str] = []
    for outcome in outcomes:
        if not isinstance(outcome, CallRecord) or outcome.ok:
            continue
        for parameter, value in outcome.arguments.items():
            if not isinstance(value, str) or value in words or len(value) < 6:
                continue
            close = [w for w in words if _alike(value, w)]
            if len(close) == 1:
                notes.append(
                    f"Note: {outcome.name} failed with {parameter}={value!r}, which the task "
                    f"writes as {close[0]!r}."
                )
    return notes


def _number_note(state: RunState, outcomes: Sequence[Outcome]) -> str | None:
    """The note, once a run, for a call of the turn that ran on numbers nobody gave.

    A call whose result another call of the turn returned too, or that the run was
    given already, found nothing new with them (a formula worked beside the
    conversion tool): no note. The round after the note asks for a call, as after the
    other notes that ask for one: the number is to be looked up.
    """
    ran = [o for o in outcomes if isinstance(o, CallRecord) and o.ok]
    for outcome in ran:
        unseen = unseen_numbers(outcome.arguments, state.given.numbers)
        others = [o.content for o in ran if o is not outcome]
        if unseen and not found_already(outcome.content, others, state.given.numbers):
            state.noted_numbers = True
            state.call_asked, state.calls_at_note = True, len(state.calls)
            return NUMBER_NOTE.format(call=outcome.name, numbers=written(unseen))
    return None


def _alike(value: str, word: str) -> bool:
    """Whether `value` is `word` miscopied: alike but for case, a sign or a letter or two."""
    return difflib.SequenceMatcher(None, value.lower(), word.lower()).ratio() >= _NEAR


def _failure_note(state: RunState, outcomes: Sequence[Outcome], config: LoopConfig) -> str | None:
    """Count the turns that made each failing call; a note at the second, a stop after.

    A call with the same arguments that fails again will fail again, whatever else
    the turn did (a sibling whose result changes each time hides it from the cycle
    check). Each failing call counts once per turn; the note comes when one has
    failed in `cycle_note_at` - 1 turns, and the run stops with status ``cycle`` at
    the turn after, unless `cycle_limit` is None.
    """
    seen: dict[tuple[str, str], Outcome] = {}
    for outcome in outcomes:
        if isinstance(outcome, RejectedCall):
            # A denial is a decision, remembered and given again by the approval gate;
            # a call refused as invalid failed on its argument text.
            if outcome.kind != "denied":
                seen.setdefault((outcome.name, outcome.arguments), outcome)
        elif not outcome.ok:
            seen.setdefault(call_identity(outcome.name, outcome.arguments), outcome)
    if not seen:
        return None
    worst: tuple[Outcome, int] | None = None
    for key, outcome in seen.items():
        count = state._failures[key] = state._failures.get(key, 0) + 1
        if worst is None or count > worst[1]:
            worst = (outcome, count)
    note_at = max(config.cycle_note_at - 1, 2)
    if worst is None or worst[1] < note_at:
        return None
    outcome, count = worst
    error = outcome.error or "it failed"
    if config.cycle_limit is not None and count > note_at:
        state.status = "cycle"
        state.error = (
            f"{outcome.name} failed {count} times with the same arguments ({error}); the run "
            "was stopped"
        )
        return None
    return (
        f"Note: {outcome.name} has now failed {count} times with the same arguments: {error}. "
        "The same call will fail again: change its arguments, or answer without it."
    )


def _unmade_call_note(
    state: RunState, answer: str, config: LoopConfig, *, last_round: bool
) -> str | None:
    """A note for an answer that should have been a call, else None.

    `HANDED_OVER_NOTE` for an answer that gives the user a tool to run as a
    command, at any point of the run. While no tool has run, or right after a
    failed call: `REFUSAL_NOTE` for an answer that says the model cannot act on
    the user's system. `UNMADE_CALL_NOTE` for one that names a tool as if
    calling it while no tool has run; `UNMADE_RETRY_NOTE` when the results the
    answer follows hold an error (the model wrote the corrected call out instead
    of making it); `FAILED_SCRIPT_NOTE` when the answer follows a script that
    raised after at least one of its calls had returned. Once a run, and never in
    the last round, where the note would cost the run its answer.
    """
    if last_round or state.noted_unmade_call:
        return None
    names = sorted(config.tool_names)
    for name in names:
        if _hands_over(answer, name):
            return HANDED_OVER_NOTE.format(name=name)
    fresh = not (state.calls or state.scripts)
    failed = not fresh and _follows_a_failed_call(state)
    if (fresh or failed) and names and _REFUSAL.search(answer):
        return REFUSAL_NOTE
    if fresh:
        note = UNMADE_CALL_NOTE
    elif failed:
        note = UNMADE_RETRY_NOTE
    else:
        return None
    for name in names:
        if _names_as_call(answer, name):
            return note.format(name=name)
    if failed and _follows_a_script_that_got_results(state):
        return FAILED_SCRIPT_NOTE
    return None


def _follows_a_script_that_got_results(state: RunState) -> bool:
    """Whether the last reply follows a script that raised after a call of it returned."""
    before = state.messages[-2] if len(state.messages) >= 2 else None
    if before is None or before.role != "tool" or not state.scripts:
        return False
    script = state.scripts[-1]
    if before.tool_call_id != script.id or script.status != "error":
        return False
    prefix = f"{script.id}."
    return any(c.ok for c in state.calls if c.id.startswith(prefix))


def _noted_answer(state: RunState, answer: str, task: str, round_: int, last_round: bool) -> bool:
    """Check a final answer against the run's results; True if it was sent a note.

    The first answer that contradicts them gets the note, unless no round is left
    for another answer; the answer after the note ends the run whatever it says,
    told as ``corrected`` or ``kept``.
    """
    seen = [
        m.content
        for m in state.messages
        if m.role in ("user", "tool") and m.content and not m.content.startswith(NOTE_START)
    ]
    results = [(c.name, c.result) for c in state.calls if c.ok]
    found = (
        echo(answer, task)
        or contradiction(answer, seen)
        or refuted_comparison(answer, results)
        or unit_mismatch(answer, task, results)
    )
    if state.noted_answer:
        if state.tracing:
            outcome: ev.CheckOutcome = "corrected" if found is None else "kept"
            note = "" if found is None else found.note
            state.emit(ev.AnswerChecked(round_, outcome, answer, note))
        return False
    if found is None or last_round:
        return False
    state.noted_answer = True
    if isinstance(found, UnitMismatch):  # the note asks for a conversion: a call
        state.call_asked, state.calls_at_note = True, len(state.calls)
    state.add(Message("user", found.note))
    if state.tracing:
        state.emit(ev.AnswerChecked(round_, "noted", answer, found.note))
    return True


def _follows_a_failed_call(state: RunState) -> bool:
    """Whether the tool results just before the last reply include a failed or refused call."""
    results: list[Message] = []
    for message in reversed(state.messages[:-1]):
        if message.role != "tool":
            break
        results.append(message)
    return any(m.is_error for m in results)


_FENCED = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
#: "I don't have the ability to execute commands on your computer", "as an AI language
#: model, I cannot access your files": a claim about the model's own reach, not about
#: what the tools can do.
_REFUSAL = re.compile(
    r"\bas an ai\b(?: language model)?"
    r"|\b(?:do not|don't|don’t|cannot|can't|can’t|am unable to|'m unable to|am not able to)"
    r"\s+(?:have\s+)?(?:the\s+)?(?:ability|capability|capabilities|access|permission)?"
    r"\s*(?:to\s+)?(?:directly\s+)?"
    r"(?:execute|run|access|interact|perform actions|create|modify|write|delete|move)"
    r"\b[^.\n]{0,60}?"
    r"\b(?:commands?|your (?:local )?(?:machine|computer|system|files?|device|terminal))",
    re.IGNORECASE,
)


def _hands_over(text: str, name: str) -> bool:
    """A line of a code block in `text` starts with `name` as a command: ``mkdir Projects``."""
    line = re.compile(rf"^\s*(?:\$\s*)?{re.escape(name)}(?:[ \t]|$)", re.MULTILINE)
    return any(line.search(block) for block in _FENCED.findall(text))


def _names_as_call(text: str, name: str) -> bool:
    """`name` written as code or a call: quoted, before ``(``, or as a function or tool."""
    word = re.escape(name)
    pattern = rf"`{word}`|\"{word}\"|(?<![\w.]){word}\s*\(|(?<![\w.]){word}\s+(?:function|tool)\b"
    return re.search(pattern, text) is not None


def agent_flow(
    state: RunState,
    task: str,
    prepared: Prepared,
    convention: Convention,
    config: LoopConfig,
    *,
    history: Sequence[Message] = (),
    paused: Paused | None = None,
    output: OutputTool | None = None,
) -> Generator[Effect, Any, None]:
    """Run rounds until an answer, a stop condition, or a model failure.

    `history` continues an earlier conversation (its system prompt, if it has
    one, stands in for this run's). `paused` resumes a run stopped for approval,
    whose state (conversation, calls, pending requests) `state` already holds.
    With `output`, the run's output tool, only a valid call of it ends the run:
    a reply in plain text is told so, and the rounds go on.
    """
    first = 1
    if config.check_answers:
        # A number a tool's own definition states (a default, a range) is given too.
        for t in (*prepared.tools, *prepared.described_tools):
            state.given.numbers.update(numbers_in(_tool_text(t)))
    if paused is not None:
        state.paused = None
        since = len(state.calls)
        if not (yield from _resume(state, paused, config, convention)):
            return
        if _delivered(state, output, since):
            return
        first = paused.round + 1
    else:
        _open_conversation(state, task, prepared, history)
    yield from _rounds(state, prepared, convention, config, task=task, first=first, output=output)


def _open_conversation(
    state: RunState, task: str, prepared: Prepared, history: Sequence[Message]
) -> None:
    if prepared.system_prompt and not (history and history[0].role == "system"):
        state.add(Message("system", prepared.system_prompt))
    for earlier in history:
        copy = Message(
            earlier.role,
            earlier.content,
            earlier.tool_calls,
            earlier.tool_call_id,
            earlier.name,
            is_error=earlier.is_error,
        )
        state.add(copy)
        state.call_ids.update(call.id for call in earlier.tool_calls)
    state.add(Message("user", task))


def _tools_tokens(tools: Sequence[Tool], config: LoopConfig) -> int:
    if not config.count_tokens:
        return 0
    return sum(count_tokens(_tool_text(t)) for t in tools)


def _tool_text(t: Tool) -> str:
    # The examples, where there are any, go with the schema (see `to_openai`).
    examples = json.dumps([dict(e.arguments) for e in t.examples]) if t.examples else ""
    return t.name + t.description + json.dumps(t.parameters) + examples


def _rounds(
    state: RunState,
    prepared: Prepared,
    convention: Convention,
    config: LoopConfig,
    *,
    task: str,
    first: int,
    output: OutputTool | None = None,
) -> Generator[Effect, Any, None]:
    tools: Sequence[Tool] = prepared.tools
    described: Sequence[Tool] = prepared.described_tools
    tools_tokens = _tools_tokens(tools, config)
    for round_ in range(first, config.max_rounds + 1):
        state.rounds = round_
        if state.extra_tools is not None:
            # Appended after the tools the run began with, so a cached prefix holds;
            # a reply format that writes calls as text (a grammar) learns them too.
            if tools:
                loaded = [t for t in state.extra_tools() if t not in tools]
                tools = [*tools, *loaded]
                tools_tokens += _tools_tokens(loaded, config)
            if described:
                described = [*described, *(t for t in state.extra_tools() if t not in described)]
        window: Sequence[Message]
        if state.context is not None:
            moved = state.context.enforce(tools_tokens)
            if moved and state.tracing:
                state.emit(ev.ContextOffload("harness", tuple(moved), round_))
            window = state.context.messages()
        else:
            window = state.sent.so_far()
        choice = prepared.tool_choice
        if config.tool_choice is not None and not state.calls:
            choice = config.tool_choice
        if (
            state.call_asked
            and len(state.calls) == state.calls_at_note
            and tools
            and choice == "auto"
        ):
            # The model's own reply said a tool should be called, or its answer stated a
            # result in another unit: the round after the note asks for a call, which a
            # grammar-constrained model then makes.
            choice = "required"
        request = ModelRequest(
            window,
            tools,
            choice,
            reply_format=prepared.reply_format,
            parallel_tool_calls=config.parallel_tool_calls,
            described_tools=described,
        )
        if state.tracing:
            state.emit(ev.ModelRequest(round_, len(state.messages)))
        try:
            response: ModelResponse = yield AskModel(request)
        except ModelError as exc:
            state.status, state.error = "error", f"{type(exc).__name__}: {exc}"
            return
        response.tool_calls = _unique_ids(state, response.tool_calls)
        limit = config.max_argument_chars
        echoed = tuple(
            [c if len(c.arguments) <= limit else _echo(c, limit) for c in response.tool_calls]
        )
        reply = state.add(Message("assistant", response.content, echoed))
        usage = _round_usage(state, response, tools_tokens, config)
        state.usage.rounds.append(usage)
        if state.tracing:
            state.emit(
                ev.ModelReply(round_, reply.to_openai(), usage.to_dict(), response.finish_reason)
            )
        action = convention.interpret(response)
        if isinstance(action, Answer) and output is not None:
            ask = prepared.output_note or OUTPUT_NOTE.format(name=output.name)
            state.add(Message("user", ask))
            if state.tracing:
                state.emit(ev.Feedback(round_, ask))
            continue
        if isinstance(action, Answer):
            note = _unmade_call_note(
                state, action.text, config, last_round=round_ >= config.max_rounds
            )
            if note is not None:
                state.noted_unmade_call = state.call_asked = True
                state.calls_at_note = len(state.calls)
                state.add(Message("user", note))
                if state.tracing:
                    state.emit(ev.Feedback(round_, note))
                continue
            last_round = round_ >= config.max_rounds
            if config.check_answers and _noted_answer(state, action.text, task, round_, last_round):
                continue
            state.status, state.answer = "completed", action.text
            return
        if isinstance(action, Retry):
            state.add(Message("user", action.feedback))
            if state.tracing:
                state.emit(ev.Feedback(round_, action.feedback))
            continue
        since = len(state.calls)
        if isinstance(action, Script):
            script_id = f"script_{len(state.scripts) + 1}"
            effect = RunScript(script_id, action.code, round_, action.repairs)
            turn = _script_turn(state, task, effect, config)
        elif isinstance(action, Plan):
            plan_id = f"plan_{round_}"  # one plan a round: unique in the run
            turn = _plan_turn(state, task, action.program, plan_id, round_=round_)
        elif isinstance(action, Calls):
            turn = _calls_turn(
                state, action.calls, task=task, notes=action.notes, round_=round_, config=config
            )
        else:
            raise TypeError(f"a convention returned {action!r}")
        if not (yield from turn) or _delivered(state, output, since):
            return
    state.status = "max_rounds"
    if output is not None:
        state.error = (
            f"no final result after {config.max_rounds} rounds: {output.name} was not "
            f"called with a valid {output.spec.name}"
        )
    else:
        state.error = f"no final answer after {config.max_rounds} rounds"
