"""Running a model's script in the sandbox, with every tool call sent to the dispatcher.

Inside the sandbox the tool functions are proxies; each call arrives here by
name, is mapped back from the stub's Python names to the tool's schema names,
and goes through the same validation, execution and record as a JSON call.
This sits above both: the sandbox knows nothing of tools.

::

    with Sandbox() as sb:
        r = run_script(sb, script, tools=box, timeout=10)
    r.stdout, r.error, r.calls, r.truncated
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ._dispatch import DirectRun, Dispatcher, Ledger
from ._exceptions import UsageError
from ._records import CallRecord, Outcome, RejectedCall, ScriptRecord
from .sandbox import DirectCall, ExecResult, ProxySpec, Sandbox, ToolReply
from .tools import Tool, Toolbox

__all__ = ["ScriptRun", "ScriptRunner", "arun_script", "run_script"]


@dataclass(slots=True)
class ScriptRun:
    """What `run_script` returns: the script's outcome and the calls it made."""

    status: str
    stdout: str
    error: str | None
    calls: list[CallRecord]
    rejected: list[RejectedCall]
    truncated: bool
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class _Direct:
    """A dispatcher's `DirectRun` as the sandbox runs it: its record becomes the reply."""

    __slots__ = ("_reply", "_run")

    def __init__(self, run: DirectRun, reply: Callable[[Outcome], ToolReply]) -> None:
        self._run = run
        self._reply = reply

    @property
    def timeout(self) -> float | None:
        return self._run.timeout

    def run(self) -> ToolReply | None:
        record = self._run.run()
        return None if record is None else self._reply(record)

    def abandon(self, reason: str | None) -> ToolReply | None:
        record = self._run.abandon(reason)
        return None if record is None else self._reply(record)


class ScriptRunner:
    """Runs scripts against a toolbox: one warm sandbox, one dispatcher.

    The scripts of one runner are retries of each other as far as the `Ledger` goes:
    use one runner per run.
    """

    def __init__(
        self,
        tools: Toolbox,
        dispatcher: Dispatcher,
        sandbox: Sandbox,
        *,
        module: str = "tools",
        timeout: float = 30.0,
    ) -> None:
        self.dispatcher = dispatcher
        self.sandbox = sandbox
        self.module = module
        self.timeout = timeout
        self.ledger = Ledger()
        signatures = tools.stub_signatures()
        # The proxies bind arguments by the very signatures the stubs show.
        self._proxies = [
            ProxySpec(s.function, [p for p, _ in s.params], positional=s.positional)
            for s in signatures
        ]
        # Python names the stubs use in place of the schema's (``from_`` for ``from``).
        self._by_function = {
            s.function: (s.tool, {p: k for p, k in s.params if p != k}) for s in signatures
        }

    async def run(
        self, code: str, *, script_id: str, round_: int = 0, repairs: Sequence[str] = ()
    ) -> tuple[ScriptRecord, list[Outcome]]:
        outcomes: list[Outcome] = []
        numbers = itertools.count(1)  # taken as each call arrives: parallel calls overlap

        def next_id() -> str:
            return f"{script_id}.{next(numbers)}"

        def handler(
            function: str, arguments: dict[str, object]
        ) -> ToolReply | Awaitable[ToolReply]:
            # A plain function, so that a call the dispatcher answers at once (a quick
            # sync tool, a refusal, a replay) is answered without a task per call.
            tool_name, names = self._by_function[function]
            schema_arguments: dict[str, Any] = {names.get(k, k): v for k, v in arguments.items()}
            outcome = self.dispatcher.call_nowait(
                tool_name,
                schema_arguments,
                call_id=next_id(),
                round_=round_,
                source="script",
                ledger=self.ledger,
            )
            if isinstance(outcome, CallRecord | RejectedCall):
                return reply(outcome)
            return reply_later(outcome)

        def direct(function: str, arguments: dict[str, object]) -> DirectCall | ToolReply | None:
            # On the sandbox's channel thread, for a call the script waits on alone: a sync
            # tool runs right there, with no turn of the event loop.
            tool_name, names = self._by_function[function]
            if names:
                arguments = {names.get(k, k): v for k, v in arguments.items()}
            outcome = self.dispatcher.call_direct(
                tool_name,
                arguments,
                call_id=next_id,
                round_=round_,
                source="script",
                ledger=self.ledger,
            )
            if outcome is None:
                return None
            if isinstance(outcome, CallRecord | RejectedCall):
                return reply(outcome)
            return _Direct(outcome, reply)

        async def reply_later(pending: Awaitable[Outcome]) -> ToolReply:
            return reply(await pending)

        def reply(outcome: Outcome) -> ToolReply:
            outcomes.append(outcome)
            if isinstance(outcome, RejectedCall):
                return ToolReply.fail(outcome.error, kind="validation")
            if outcome.error is not None:
                return ToolReply.fail(outcome.error, kind="tool")
            return ToolReply.ok(outcome.result)

        result: ExecResult = await self.sandbox.execute(
            code,
            tools=self._proxies,
            handler=handler,
            direct=direct,
            timeout=self.timeout,
            module_name=self.module,
        )
        self.ledger.script_ended(result.status == "ok")
        record = ScriptRecord(
            id=script_id,
            code=code,
            status=result.status,
            stdout=result.stdout,
            error=result.error,
            round=round_,
            calls=len(outcomes),
            truncated=result.truncated,
            duration_s=result.duration_s,
            repairs=tuple(repairs),
            replayed=tuple(o for o in outcomes if isinstance(o, CallRecord) and o.replayed),
        )
        return record, outcomes


def run_script(
    sandbox: Sandbox,
    script: str,
    tools: Toolbox | Iterable[Tool | Callable[..., Any]],
    *,
    timeout: float = 10.0,
) -> ScriptRun:
    """Run ``script`` in ``sandbox`` with ``tools`` (a Toolbox or tools) as its ``tools`` module.

    Each call the script makes is validated and executed on the host by the dispatcher,
    exactly like a JSON call; the result lists every call. Not callable inside an event
    loop: await `arun_script` there.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(arun_script(sandbox, script, tools, timeout=timeout))
    raise UsageError("run_script() was called inside a running event loop; await arun_script()")


async def arun_script(
    sandbox: Sandbox,
    script: str,
    tools: Toolbox | Iterable[Tool | Callable[..., Any]],
    *,
    timeout: float = 10.0,
) -> ScriptRun:
    """`run_script` for async code."""
    box = tools if isinstance(tools, Toolbox) else Toolbox(tools)
    dispatcher = Dispatcher(box)
    try:
        runner = ScriptRunner(box, dispatcher, sandbox, timeout=timeout)
        record, outcomes = await runner.run(script, script_id="script")
    finally:
        dispatcher.close()
    return ScriptRun(
        status=record.status,
        stdout=record.stdout,
        error=record.error,
        calls=[o for o in outcomes if isinstance(o, CallRecord)],
        rejected=[o for o in outcomes if isinstance(o, RejectedCall)],
        truncated=record.truncated,
        duration_s=record.duration_s,
    )
