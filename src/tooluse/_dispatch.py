"""The dispatcher: the only place a tool runs.

JSON calls and calls made from a script go through the same steps:
validate (size, JSON, tool name, schema, conversion), execute (async tools on
the event loop, sync tools in worker threads, each under its timeout and a
shared concurrency limit), record.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pydantic
from pydantic_core import to_jsonable_python

from ._exceptions import ModelRetry
from ._messages import ToolCall
from ._records import CallRecord, Outcome, RejectedCall
from .tools import Tool, Toolbox
from .tools._validate import ArgumentChecker, ArgumentsError, parse_arguments

__all__ = ["Dispatcher", "Ledger"]

_RAW_KEEP = 300
_INLINE_WAIT_S = 0.001


def _canonical(arguments: Mapping[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


@dataclass(slots=True)
class Ledger:
    """Successful calls to tools with side effects, by name and arguments.

    When a script fails half-way and the model retries it, an identical call
    that already succeeded is answered from here instead of running twice.
    """

    entries: dict[tuple[str, str], CallRecord] = field(default_factory=dict)

    def lookup(self, name: str, arguments: Mapping[str, Any]) -> CallRecord | None:
        return self.entries.get((name, _canonical(arguments)))

    def remember(self, record: CallRecord) -> None:
        self.entries[(record.name, _canonical(record.arguments))] = record


@dataclass(slots=True)
class _Prepared:
    call: ToolCall
    tool: Tool
    arguments: dict[str, Any]
    kwargs: dict[str, Any]
    repairs: tuple[str, ...]


class Dispatcher:
    """Validates and executes calls against a toolbox.

    Args:
        tools: the tools that may be called.
        timeout: default seconds per call (a tool's own ``timeout`` wins);
            None waits forever.
        max_concurrency: calls executing at once, across all callers.
        max_calls_per_turn: calls of one turn beyond this are refused.
        max_argument_bytes: argument text beyond this is refused unread.
        ledger: when given, identical successful calls to tools marked
            ``side_effects`` are answered from it (marked ``replayed``).
    """

    def __init__(
        self,
        tools: Toolbox,
        *,
        timeout: float | None = 60.0,
        max_concurrency: int = 16,
        max_calls_per_turn: int = 128,
        max_argument_bytes: int = 1_000_000,
        ledger: Ledger | None = None,
    ) -> None:
        self.tools = tools
        self.timeout = timeout
        self.max_calls_per_turn = max_calls_per_turn
        self.max_argument_bytes = max_argument_bytes
        self.ledger = ledger
        self._max_concurrency = max_concurrency
        self._checkers: dict[str, ArgumentChecker] = {}
        self._semaphore: asyncio.Semaphore | None = None
        self._executor: ThreadPoolExecutor | None = None

    def close(self) -> None:
        """Stop the worker threads; a sync tool still running is abandoned, not joined."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    # --- validation -----------------------------------------------------------------

    def _reject(self, call: ToolCall, error: str, round_: int, source: str) -> RejectedCall:
        raw = call.arguments
        if len(raw) > _RAW_KEEP:
            raw = raw[:_RAW_KEEP] + f"... [{len(call.arguments) - _RAW_KEEP:,} characters cut]"
        return RejectedCall(
            id=call.id, name=call.name, arguments=raw, error=error, round=round_, source=source
        )

    def _unknown_tool(self, name: str) -> str:
        if not name:
            head = "the call has no tool name"
        else:
            head = f"there is no tool named {name!r}"
            close = self.tools.closest(name)
            if close:
                head += f"; did you mean {', '.join(repr(c) for c in close)}?"
        names = self.tools.names
        listed = ", ".join(names[:30]) + (f" and {len(names) - 30} more" if len(names) > 30 else "")
        return f"{head}. Available tools: {listed}" if names else f"{head}. No tools are available."

    def prepare(
        self, call: ToolCall, *, round_: int = 0, source: str = "json"
    ) -> _Prepared | RejectedCall:
        """Check one call completely without running anything."""
        tool = self.tools.get(call.name)
        if tool is None:
            return self._reject(call, self._unknown_tool(call.name), round_, source)
        try:
            parsed = parse_arguments(call.arguments, max_bytes=self.max_argument_bytes)
            checker = self._checkers.get(tool.name)
            if checker is None:
                checker = self._checkers[tool.name] = ArgumentChecker(tool.parameters)
            arguments, null_repairs = checker.check(parsed.value)
        except ArgumentsError as exc:
            return self._reject(call, f"invalid call to {tool.name}: {exc}", round_, source)
        try:
            kwargs = tool.convert_arguments(arguments)
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"argument '{'.'.join(str(p) for p in err['loc'])}': {err['msg']}"
                for err in exc.errors(include_url=False)
            )
            return self._reject(call, f"invalid call to {tool.name}: {problems}", round_, source)
        return _Prepared(call, tool, arguments, kwargs, parsed.repairs + null_repairs)

    # --- execution ------------------------------------------------------------------

    async def _invoke(self, tool: Tool, kwargs: dict[str, Any], *, alone: bool) -> Any:
        if tool.is_async:
            return await tool.function(**kwargs)
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                max_workers=self._max_concurrency, thread_name_prefix="tooluse-tool"
            )
        future = self._executor.submit(partial(tool.function, **kwargs))
        if alone:
            # A call alone in its turn has nothing to run beside it: waiting on
            # the thread directly for a moment costs one wake-up instead of a
            # round trip through the event loop's self-pipe, and most tools
            # finish within it. Slower calls fall through to a normal await.
            try:
                return future.result(timeout=_INLINE_WAIT_S)
            except FutureTimeout:
                pass
        return await asyncio.wrap_future(future)

    async def execute(
        self, prepared: _Prepared, *, round_: int = 0, source: str = "json", alone: bool = False
    ) -> CallRecord:
        """Run a prepared call; whatever the tool does, a record comes back."""
        tool = prepared.tool
        record = CallRecord(
            id=prepared.call.id,
            name=tool.name,
            arguments=prepared.arguments,
            round=round_,
            repairs=prepared.repairs,
            source=source,
        )
        if self.ledger is not None and tool.side_effects:
            earlier = self.ledger.lookup(tool.name, prepared.arguments)
            if earlier is not None:
                record.result = earlier.result
                record.replayed = True
                record.started_at = time.time()
                return record
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self._max_concurrency)
        timeout = tool.timeout if tool.timeout is not None else self.timeout
        async with self._semaphore:
            record.started_at = time.time()
            start = time.perf_counter()
            try:
                invocation = self._invoke(tool, prepared.kwargs, alone=alone)
                if timeout is None:
                    value = await invocation
                else:
                    value = await asyncio.wait_for(invocation, timeout)
            except ModelRetry as exc:
                record.error = exc.message
            except TimeoutError:
                record.error = f"{tool.name} timed out after {timeout:g} s"
            except Exception as exc:
                record.error = f"{tool.name} failed: {type(exc).__name__}: {exc}"
            else:
                try:
                    record.result = to_jsonable_python(value)
                except Exception as exc:
                    record.error = (
                        f"{tool.name} returned a {type(value).__name__}, "
                        f"which cannot be sent as JSON: {exc}"
                    )
            record.duration_s = time.perf_counter() - start
        if self.ledger is not None and tool.side_effects and record.ok:
            self.ledger.remember(record)
        return record

    async def run(
        self, calls: Sequence[ToolCall], *, round_: int = 0, source: str = "json"
    ) -> list[Outcome]:
        """Validate and execute one turn's calls concurrently, in the calls' order.

        One call failing, timing out or being refused never loses its
        siblings' results.
        """
        outcomes: list[Outcome | None] = [None] * len(calls)
        pending: list[tuple[int, _Prepared]] = []
        for index, call in enumerate(calls):
            if index >= self.max_calls_per_turn:
                outcomes[index] = self._reject(
                    call,
                    f"not run: this turn made {len(calls):,} calls and at most "
                    f"{self.max_calls_per_turn} run per turn; make the rest in the next turn",
                    round_,
                    source,
                )
                continue
            prepared = self.prepare(call, round_=round_, source=source)
            if isinstance(prepared, RejectedCall):
                outcomes[index] = prepared
            else:
                pending.append((index, prepared))
        if len(pending) == 1:
            index, prepared = pending[0]
            outcomes[index] = await self.execute(prepared, round_=round_, source=source, alone=True)
        elif pending:
            records = await asyncio.gather(
                *(self.execute(p, round_=round_, source=source) for _, p in pending)
            )
            for (index, _), record in zip(pending, records, strict=True):
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
    ) -> Outcome:
        """Validate and execute one call given by name (how scripts call tools)."""
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
        prepared = self.prepare(ToolCall(call_id, name, text), round_=round_, source=source)
        if isinstance(prepared, RejectedCall):
            return prepared
        return await self.execute(prepared, round_=round_, source=source)
