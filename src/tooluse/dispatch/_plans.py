"""Running a plan: its steps as waves of calls, placeholders filled from results.

`run_plan` is a generator, like the loop: it yields each wave of calls (every
step whose inputs are ready, independent steps together) and receives their
outcomes, so the dispatcher validates, approves and records plan calls exactly
as it does JSON calls. A step that fails does not stop its siblings; the steps
that need it are not run. A call identical to one an earlier plan of the run
made successfully is answered with that result instead of being made again, so
a corrected plan reuses what is done.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._messages import ToolCall
from .._records import CallRecord, Outcome, RejectedCall, render_result
from ..conventions._plan import PlanEvaluationError, PlanProgram, PlanStep, evaluate
from ..conventions._plan_eval import Budget
from ..policy._approval import ApprovalRequest

__all__ = ["PlanRun", "StepResult", "run_plan"]

#: Calls one plan may make in all.
MAX_PLAN_CALLS = 1_000
#: Characters of a done step's value shown when a plan fails.
_SHOWN = 300

StepStatus = Literal["done", "failed", "not run"]


@dataclass(slots=True)
class StepResult:
    name: str
    line: int
    status: StepStatus = "not run"
    value: Any = None
    error: str | None = None
    calls: int = 0
    reused: int = 0


@dataclass(slots=True)
class PlanRun:
    """How a plan went: each step's state, the outcomes of the calls it made."""

    id: str
    steps: list[StepResult]
    #: New outcomes, in the order they ended (reused results are not among them).
    outcomes: list[Outcome] = field(default_factory=list)
    pending: list[ApprovalRequest] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.status == "done" for s in self.steps)

    @property
    def result(self) -> Any:
        return self.steps[-1].value

    def report(self, shown: str | None = None) -> str:
        """What the model is shown: the result, or where the plan failed and why.

        ``shown`` stands for the result's text (a handle for a large result).
        """
        calls = sum(s.calls for s in self.steps)
        reused = sum(s.reused for s in self.steps)
        made = f"{calls} call(s)" + (f", {reused} reused from an earlier plan" if reused else "")
        if self.ok:
            text = render_result(self.result) if shown is None else shown
            return f"The plan ran {len(self.steps)} step(s) ({made}). Result:\n" + text
        counts = dict.fromkeys(("done", "failed", "not run"), 0)
        for step in self.steps:
            counts[step.status] += 1
        lines = [
            f"The plan did not finish ({made}): {counts['done']} step(s) done, "
            f"{counts['failed']} failed, {counts['not run']} not run."
        ]
        for step in self.steps:
            if step.status == "done":
                shown = render_result(step.value)
                if len(shown) > _SHOWN:
                    shown = shown[:_SHOWN] + f"... [{len(shown) - _SHOWN:,} characters more]"
                lines.append(f"{step.name} (line {step.line}) done: {shown}")
            elif step.status == "failed":
                lines.append(f"{step.name} (line {step.line}) failed: {step.error}")
            else:
                lines.append(f"{step.name} (line {step.line}) not run: {step.error}")
        lines.append(
            "Send a corrected plan to go on: calls that succeeded are reused, not made again."
        )
        return "\n".join(lines)


@dataclass(slots=True)
class _Wave:
    """The calls of one wave, and which step each belongs to."""

    calls: list[ToolCall] = field(default_factory=list)
    owners: list[tuple[str, int]] = field(default_factory=list)  # (step, item index)
    reused: dict[str, CallRecord] = field(default_factory=dict)  # call id -> earlier record


def run_plan(
    program: PlanProgram,
    plan_id: str,
    *,
    reuse: Callable[[str, Mapping[str, Any]], CallRecord | None] = lambda _n, _a: None,
    earlier: Mapping[str, Outcome] = {},
) -> Generator[list[ToolCall], Sequence[Outcome | ApprovalRequest], PlanRun]:
    """Run `program`; yields waves of calls, receives their outcomes, returns the `PlanRun`.

    `reuse` finds an earlier successful call with the same name and arguments;
    `earlier` holds outcomes this plan already had before it paused for approval.
    """
    results = {s.name: StepResult(s.name, s.line) for s in program.steps}
    run = PlanRun(plan_id, list(results.values()))
    values: dict[str, Any] = {}
    waiting = list(program.steps)
    budget = MAX_PLAN_CALLS
    # One budget for all the plan's expressions: its limits bound the plan, not each one.
    spending = Budget()
    while waiting:
        wave = _Wave()
        items: dict[str, list[Any]] = {}
        progressed = False
        for step in list(waiting):
            state = results[step.name]
            dead = [n for n in step.needs if _dead(results[n])]
            if dead:
                state.error = f"it needs {', '.join(dead)}, which did not finish"
                waiting.remove(step)
                progressed = True
                continue
            if any(results[n].status != "done" for n in step.needs):
                continue
            waiting.remove(step)
            progressed = True
            if step.kind == "value":
                assert step.source is not None
                try:
                    values[step.name] = state.value = evaluate(step.source, values, spending)
                    state.status = "done"
                except PlanEvaluationError as exc:
                    state.status, state.error = "failed", str(exc)
                continue
            try:
                argument_sets = _argument_sets(step, values, spending, most=budget)
            except PlanEvaluationError as exc:
                state.status, state.error = "failed", str(exc)
                continue
            except _TooManyCalls as exc:
                state.status = "failed"
                state.error = (
                    f"it would make {exc.count} calls and a plan makes at most "
                    f"{MAX_PLAN_CALLS:,} in all"
                )
                continue
            budget -= len(argument_sets)
            items[step.name] = [None] * len(argument_sets)
            state.calls = len(argument_sets)
            assert step.tool is not None
            for index, arguments in enumerate(argument_sets):
                suffix = f"_{index + 1}" if step.kind == "map" else ""
                call_id = f"{plan_id}_{step.name}{suffix}"
                previous = reuse(step.tool, arguments)
                if previous is not None and call_id not in earlier:
                    wave.reused[call_id] = previous
                    state.reused += 1
                    items[step.name][index] = previous.result
                    continue
                text = json.dumps(arguments, ensure_ascii=False, default=str)
                wave.calls.append(ToolCall(call_id, step.tool, text))
                wave.owners.append((step.name, index))
        if wave.calls:
            fresh = [c for c in wave.calls if c.id not in earlier]
            answered: list[Outcome | ApprovalRequest] = list((yield fresh)) if fresh else []
            by_id: dict[str, Outcome | ApprovalRequest] = {
                c.id: earlier[c.id] for c in wave.calls if c.id in earlier
            }
            for outcome in answered:
                key = outcome.call_id if isinstance(outcome, ApprovalRequest) else outcome.id
                by_id[key] = outcome
            run.outcomes.extend(o for o in answered if not isinstance(o, ApprovalRequest))
            run.pending.extend(o for o in answered if isinstance(o, ApprovalRequest))
            if run.pending:
                return run
            _settle(
                wave,
                by_id=by_id,
                items=items,
                results=results,
                values=values,
                program=program,
            )
        else:
            for name, collected in items.items():
                _finish_step(results[name], collected, values, program)
        if not progressed and not wave.calls:
            break
    for step in waiting:
        results[step.name].error = results[step.name].error or "it was never ready"
    return run


def _dead(step: StepResult) -> bool:
    return step.status == "failed" or (step.status == "not run" and step.error is not None)


class _TooManyCalls(Exception):
    """A map step would make more calls than the plan has left; `count` says how many."""

    def __init__(self, count: str) -> None:
        super().__init__(count)
        self.count = count


def _argument_sets(
    step: PlanStep, values: Mapping[str, Any], spending: Budget, *, most: int
) -> list[dict[str, Any]]:
    """The arguments of each call `step` makes; `_TooManyCalls` past `most` calls."""
    if step.kind == "call":
        if most < 1:
            raise _TooManyCalls("1")
        return [_arguments(step, values, spending)]
    assert step.source is not None and step.variable is not None
    source = evaluate(step.source, values, spending)
    if isinstance(source, Mapping):
        source = list(source)
    if not isinstance(source, list | tuple | set):
        raise PlanEvaluationError(
            f"cannot call {step.tool} for each item of {step.text.split('for', 1)[-1].strip()}: "
            f"it is not a list but {render_result(source)[:80]!r}"
        )
    # Known before any argument is worked out, unless a condition may leave items out.
    if step.condition is None and len(source) > most:
        raise _TooManyCalls(f"{len(source):,}")
    sets: list[dict[str, Any]] = []
    for item in source:
        scope = {**values, step.variable: item}
        if step.condition is not None and not evaluate(step.condition, scope, spending):
            continue
        if len(sets) == most:
            raise _TooManyCalls(f"more than {most:,}")
        sets.append(_arguments(step, scope, spending))
    return sets


def _arguments(step: PlanStep, scope: Mapping[str, Any], spending: Budget) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, expression in step.arguments:
        try:
            out[name] = evaluate(expression, scope, spending)
        except PlanEvaluationError as exc:
            raise PlanEvaluationError(f"argument '{name}': {exc}") from None
    return out


def _settle(
    wave: _Wave,
    *,
    by_id: Mapping[str, Outcome | ApprovalRequest],
    items: dict[str, list[Any]],
    results: dict[str, StepResult],
    values: dict[str, Any],
    program: PlanProgram,
) -> None:
    failures: dict[str, list[str]] = {}
    for call, (step_name, index) in zip(wave.calls, wave.owners, strict=True):
        outcome = by_id.get(call.id)
        if isinstance(outcome, CallRecord) and outcome.ok:
            items[step_name][index] = outcome.result
            continue
        if isinstance(outcome, CallRecord | RejectedCall):
            error = outcome.error or "failed"
        else:
            error = "no outcome"
        failures.setdefault(step_name, []).append(f"{call.name}({_short(call.arguments)}): {error}")
    for name, collected in items.items():
        if name in failures:
            state = results[name]
            state.status = "failed"
            shown = failures[name][:3]
            more = len(failures[name]) - len(shown)
            state.error = "; ".join(shown) + (f"; and {more} more call(s) failed" if more else "")
            continue
        _finish_step(results[name], collected, values, program)


def _finish_step(
    state: StepResult, collected: list[Any], values: dict[str, Any], program: PlanProgram
) -> None:
    step = next(s for s in program.steps if s.name == state.name)
    value = collected if step.kind == "map" else collected[0]
    values[state.name] = state.value = value
    state.status = "done"


def _short(arguments: str, limit: int = 120) -> str:
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return arguments[:limit]
    if isinstance(decoded, dict):
        text = ", ".join(f"{k}={v!r}" for k, v in decoded.items())
    else:
        text = arguments
    return text if len(text) <= limit else text[:limit] + "..."
