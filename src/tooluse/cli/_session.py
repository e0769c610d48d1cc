"""What ``tooluse run`` and ``tooluse chat`` do: an agent from the command's options,
its events drawn on the terminal, deferred calls asked about there.

Apart from the command definitions, so that the commands that run no agent (``--help``,
``tools show``, ``models``, ``bench``) start without loading the runtime.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from .. import (
    Agent,
    Approval,
    ApprovalPolicy,
    ApprovalRequest,
    Conversation,
    ConversationStore,
    Message,
    ProvenancePolicy,
    RunResult,
    UsageError,
)
from ..events import (
    AnswerChecked,
    CallEnd,
    CallRejected,
    Event,
    Feedback,
    ScopeFixed,
    ScriptEnd,
    event_from_dict,
)
from ..models._spec import resolve_model
from ..run._trace import EventSink
from ._inputs import gather_tools, open_trace
from ._live import LiveView

__all__ = ["chat", "run_task"]

out = Console()
err = Console(stderr=True)


def _render_event(event: Event) -> None:
    match event:
        case CallEnd(record=record):
            args = json.dumps(record.arguments, ensure_ascii=False)
            if record.error:
                err.print(
                    f"[yellow]✗ {escape(record.name)}({escape(args)})[/] → {escape(record.error)}"
                )
            else:
                result = json.dumps(record.result, ensure_ascii=False, default=str)
                if len(result) > 200:
                    result = result[:200] + "…"
                err.print(f"[green]✓ {escape(record.name)}[/]({escape(args)}) → {escape(result)}")
        case CallRejected(record=rejected):
            name = escape(rejected.name or "?")
            err.print(f"[red]✗ rejected {name}[/]: {escape(rejected.error)}")
        case ScriptEnd(status=status) if status != "paused":  # a paused one ends later
            from rich.syntax import Syntax  # it loads pygments: only shown code pays for it

            err.print(Syntax(event.code.rstrip(), "python", line_numbers=False))
            colour = "green" if event.status == "ok" else "red"
            err.print(f"[{colour}]▶ {event.id}: {event.status}, {event.calls} calls[/]")
            shown = event.stdout.rstrip() or ""
            if event.error:
                shown = f"{shown}\n{event.error}".strip()
            if shown:
                err.print(escape(shown))
        case Feedback(text=text):
            err.print(f"[magenta]↺ feedback[/]: {escape(text)}")
        case AnswerChecked(outcome="noted", note=note):
            err.print(f"[magenta]↺ answer check[/]: {escape(note)}")
        case AnswerChecked(outcome=outcome, note=note):
            said = f": {escape(note)}" if note else ""
            err.print(f"[magenta]✓ answer check[/]: {outcome}{said}")
        case ScopeFixed(tools=tools, problem=problem):
            named = ", ".join(tools) or "no tool with side effects"
            note = f" ({problem})" if problem else ""
            err.print(f"[cyan]⊂ scope[/]: {escape(named)}{escape(note)}")
        case _:
            pass


def _policy(mode: str) -> ApprovalPolicy | None:
    if mode == "none":
        return None
    if mode == "provenance":
        return ProvenancePolicy(on_flag="defer")
    if mode in ("ask", "ask-all"):
        defer = lambda request: Approval.defer()  # noqa: E731 - a person decides, below
        if mode == "ask-all":
            return ApprovalPolicy(defer, asks="all")
        return ApprovalPolicy(defer)
    raise UsageError(f"--approve takes none, ask, ask-all or provenance; got {mode!r}")


def _decide(request: ApprovalRequest) -> bool | dict[str, Any]:
    """Ask on the terminal whether a deferred call may run; no answer is a no."""
    shown = json.dumps(request.arguments, indent=2, ensure_ascii=False, default=str)
    err.print(
        Panel(
            f"[bold]{escape(request.tool)}[/]({escape(shown)})\n[dim]{escape(request.reason)}[/]",
            title=f"approve {escape(request.call_id)} (from the {request.caller})?",
            style="yellow",
        )
    )
    while True:
        try:
            asked = escape("run it? [y]es / [N]o / [e]dit the arguments: ")
            answer = err.input(asked).strip().lower()
            if answer in ("y", "yes"):
                return True
            if answer in ("", "n", "no"):
                return False
            if answer in ("e", "edit"):
                edited = json.loads(err.input("arguments, as one line of JSON: "))
                if isinstance(edited, dict):
                    return edited
                err.print("[red]the arguments must be a JSON object[/]")
        except EOFError:
            err.print("[red]no answer: the call is denied[/]")
            return False
        except json.JSONDecodeError as exc:
            err.print(f"[red]not JSON: {escape(str(exc))}[/]")


def _run_asking(
    agent: Agent,
    task: str,
    live: LiveView | None = None,
    history: Sequence[Message] = (),
) -> RunResult:
    """Run `task` (streamed with `live`), asking on the terminal about each deferred call."""
    result = (
        live.run(agent, task, history=history)
        if live is not None
        else agent.run(task, history=history)
    )
    while result.status == "needs_approval":
        decisions = {request.call_id: _decide(request) for request in result.pending}
        result = (
            live.resume(agent, result, decisions)
            if live is not None
            else agent.resume(result, decisions)
        )
    return result


def _fan_out(*sinks: EventSink | None) -> EventSink | None:
    live = [sink for sink in sinks if sink is not None]
    if not live:
        return None

    def emit(event: dict[str, Any]) -> None:
        for sink in live:
            sink(event)

    return emit


@contextlib.contextmanager
def _agent(
    ctx: typer.Context,
    *,
    tools: str | None,
    mcp: list[str] | None,
    model: str,
    base_url: str | None,
    approve: str,
    trace: Path | None,
    render: EventSink | None = None,
    **options: Any,
) -> Iterator[Agent]:
    """The agent of a command's options, `options` passed on to `Agent`; its events go to
    the trace, opened before the agent so that a path that cannot be written is one
    error line, and to `render`. The agent and the trace are closed after."""
    policy = _policy(approve)
    toolbox = gather_tools(ctx, tools, mcp or [])
    backend = resolve_model(model, base_url=base_url)
    writer = open_trace(trace) if trace is not None else None
    try:
        agent = Agent(
            backend, toolbox, on_event=_fan_out(writer, render), approval=policy, **options
        )
        with agent:
            yield agent
    finally:
        if writer is not None:
            writer.close()


def run_task(
    ctx: typer.Context,
    task: str,
    *,
    tools: str | None,
    mcp: list[str] | None,
    model: str,
    convention: str,
    max_rounds: int,
    tool_choice: str | None,
    parallel_calls: bool | None,
    trace: Path | None,
    base_url: str | None,
    system: str | None,
    as_json: bool,
    approve: str,
    scope: str | None,
    stream: bool,
    check_answers: bool | None,
) -> None:
    """``tooluse run``: run `task` with an agent and print its answer."""
    live = LiveView(err, _render_event) if stream and not as_json else None
    render: EventSink | None = None
    if not as_json:

        def render(data: dict[str, Any]) -> None:
            event = event_from_dict(data)
            # Streamed, calls and scripts are drawn from the stream; the loop's notes to
            # the model and the scope, from the trace.
            if live is None or not live.streaming or isinstance(event, Feedback | ScopeFixed):
                _render_event(event)

    with _agent(
        ctx,
        tools=tools,
        mcp=mcp,
        model=model,
        base_url=base_url,
        approve=approve,
        trace=trace,
        render=render,
        convention=convention,
        max_rounds=max_rounds,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel_calls,
        check_answers=check_answers,
        system_prompt=system,
        scope=scope
        if scope in (None, "ask")
        else [s.strip() for s in scope.split(",") if s.strip()],
    ) as agent:
        result = _run_asking(agent, task, live)
    if as_json:
        out.print_json(json.dumps(result.to_dict(), default=str))
    else:
        usage = result.usage
        footer = (
            f"{result.status} · {result.rounds} rounds · {len(result.calls)} calls"
            f" · {len(result.rejected)} rejected · {usage.input_tokens:,} in"
            f" / {usage.output_tokens:,} out tokens ({usage.source})"
        )
        if result.answer is not None:
            # On a terminal the streamed answer is on screen already; for a file or a pipe,
            # the answer is the output.
            if not (out.is_terminal and live is not None and live.streamed(result.answer)):
                out.print(Panel(escape(result.answer), title="answer"))
            for repeated in result.untrusted_in_answer:
                err.print(
                    f"[yellow]the answer repeats {escape(repr(repeated.value))}, which only "
                    f"untrusted results held ({escape(', '.join(repeated.sources))})[/]"
                )
        else:
            err.print(Panel(escape(result.error or "no answer"), title="no answer", style="red"))
        err.print(f"[dim]{footer}[/]")
    if result.status == "cancelled":
        raise typer.Exit(130)  # what a shell reports for a command stopped by Ctrl-C
    if result.status != "completed":
        raise typer.Exit(1)


def chat(
    ctx: typer.Context,
    *,
    tools: str | None,
    mcp: list[str] | None,
    model: str,
    convention: str,
    max_rounds: int,
    system: str | None,
    base_url: str | None,
    approve: str,
    store: Path,
    conversation: str | None,
    list_them: bool,
    trace: Path | None,
) -> None:
    """``tooluse chat``: each line typed is a turn, kept in `store`."""
    with ConversationStore(store) as kept:
        if list_them:
            _list_conversations(kept)
            return
        live = LiveView(err, _render_event)
        with (
            _agent(
                ctx,
                tools=tools,
                mcp=mcp,
                model=model,
                base_url=base_url,
                approve=approve,
                trace=trace,
                convention=convention,
                max_rounds=max_rounds,
                system_prompt=system,
            ) as agent,
            Conversation(agent, store=kept, id=conversation) as talk,
        ):
            err.print(f"[dim]conversation {escape(talk.id)} · /exit to leave[/]")
            _chat_loop(agent, talk, live)


def _chat_loop(agent: Agent, talk: Conversation, live: LiveView) -> None:
    while True:
        try:
            message = err.input("[bold green]you>[/] ").strip()
        except (EOFError, KeyboardInterrupt):
            err.print()
            return
        if message in ("/exit", "/quit"):
            return
        if not message:
            continue
        history = talk.history
        result = _run_asking(agent, message, live, history=history)
        talk.keep(message, history, result)
        if result.answer is not None:
            if not (out.is_terminal and live.streamed(result.answer)):
                out.print(escape(result.answer))
        else:
            err.print(f"[red]no answer ({result.status})[/]: {escape(result.error or '')}")


def _list_conversations(kept: ConversationStore) -> None:
    listed = kept.conversations()
    if not listed:
        err.print(f"[dim]no conversations in {escape(kept.path)}[/]")
        return
    for info in listed:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
        last = (info.last_message or "").replace("\n", " ")
        last = last if len(last) <= 60 else last[:59] + "…"
        out.print(f"{escape(info.id)}  {info.turns} turns  {when}  {escape(last)}", soft_wrap=True)
