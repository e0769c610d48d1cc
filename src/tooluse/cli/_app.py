"""``tooluse`` commands. Rendering lives here; the library only emits events."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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
    ToolUseError,
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
from ..models._spec import DEFAULT_LOCAL_TEXT, resolve_model
from ..run._trace import EventSink
from ._bench import bench_app
from ._eval import eval_command
from ._help import plain_help
from ._inputs import gather_tools, open_trace
from ._lint import lint_command
from ._live import LiveView
from ._mcp import mcp_app
from ._models import models_app
from ._runs import runs_app
from ._sim import sim_app
from ._view import view

if TYPE_CHECKING:
    pass

app = typer.Typer(
    name="tooluse",
    help="Run language-model agents that call tools, and inspect their tools.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
tools_app = typer.Typer(help="Inspect toolboxes.", no_args_is_help=True)
app.add_typer(tools_app, name="tools")
tools_app.command("lint")(lint_command)
app.add_typer(sim_app, name="sim")
app.add_typer(bench_app, name="bench")
app.command("eval")(eval_command)
app.add_typer(models_app, name="models")
app.add_typer(mcp_app, name="mcp")
app.add_typer(runs_app, name="runs")
app.command("view")(view)

out = Console()
err = Console(stderr=True)


_MCP_HELP = (
    "An MCP server whose tools to add: a command to run (stdio) or an http(s) URL "
    "(Streamable HTTP). Repeat for several; tools whose names clash get the server's "
    "name in front."
)


class Format(StrEnum):
    openai = "openai"
    openai_strict = "openai-strict"
    anthropic = "anthropic"
    stubs = "stubs"


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


_APPROVE_HELP = (
    "Before calls run: none (run every valid call), ask (ask here before each call to a "
    "tool with side effects), ask-all (before every call) or provenance (ask only when "
    "an argument of such a call came from untrusted tool results)."
)


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


@app.command()
def run(  # noqa: PLR0917 - typer maps parameters to options
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(help="What the agent should do.")],
    tools: Annotated[
        str | None, typer.Option("--tools", help="Toolbox to use, as MODULE:ATTR.")
    ] = None,
    mcp: Annotated[list[str] | None, typer.Option("--mcp", help=_MCP_HELP)] = None,
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help=f"local ({DEFAULT_LOCAL_TEXT}; grammar-constrained), local:NAME, "
            "local:FILE.gguf, local-unconstrained[:NAME|:FILE.gguf], scripted:FILE.jsonl, "
            "openai:MODEL (see --base-url) or anthropic:MODEL.",
        ),
    ] = "local",
    convention: Annotated[
        str,
        typer.Option(
            help="json (native function calling), code (one Python script), "
            "text (calls written as text, for models without native calling), "
            "plan (every call at once, later ones using earlier results) "
            "or auto (json, code or plan, chosen from the cost model)."
        ),
    ] = "json",
    max_rounds: Annotated[int, typer.Option(min=1, help="Model requests at most.")] = 10,
    tool_choice: Annotated[
        str | None,
        typer.Option(
            help="json convention: required, or a tool's name, makes the model call "
            "(that tool) until a call has run; by default the model chooses (auto)."
        ),
    ] = None,
    parallel_calls: Annotated[
        bool | None,
        typer.Option(
            "--parallel-calls/--single-call",
            help="Allow several calls per reply, or ask for one; by default the backend decides.",
        ),
    ] = None,
    trace: Annotated[
        Path | None, typer.Option(help="Append JSON Lines trace events to this file.")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="Base URL of an OpenAI-compatible server.")
    ] = None,
    system: Annotated[str | None, typer.Option(help="System prompt.")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole RunResult as JSON.")
    ] = False,
    approve: Annotated[str, typer.Option("--approve", help=_APPROVE_HELP)] = "none",
    scope: Annotated[
        str | None,
        typer.Option(
            "--scope",
            help="The tools with side effects the run may call: ask (the model names them "
            "from the task before reading anything) or comma-separated names. Calls to "
            "others are denied.",
        ),
    ] = None,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream/--no-stream",
            help="Show the model's text, each call and a script's output as they happen, "
            "or only each call once its round is done.",
        ),
    ] = True,
    check_answers: Annotated[
        bool | None,
        typer.Option(
            "--check-answers/--no-check-answers",
            help="Check the final answer against the run's results: an answer whose "
            "comparison its own numbers refute (92 EUR is not enough for 85 EUR), or that "
            "asks the task back as a question, gets one note and one more round "
            "(default: the model's own; on for the local 1.5B).",
        ),
    ] = None,
) -> None:
    """Run TASK with an agent and print its answer."""
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


#: Where `tooluse chat` keeps its conversations unless told otherwise.
CHAT_STORE = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / (
    "tooluse/conversations.db"
)


@app.command()
def chat(  # noqa: PLR0917 - typer maps parameters to options
    ctx: typer.Context,
    tools: Annotated[
        str | None, typer.Option("--tools", help="Toolbox to use, as MODULE:ATTR.")
    ] = None,
    mcp: Annotated[list[str] | None, typer.Option("--mcp", help=_MCP_HELP)] = None,
    model: Annotated[
        str, typer.Option("--model", help="As for run: local, openai:MODEL, scripted:FILE …")
    ] = "local",
    convention: Annotated[
        str, typer.Option(help="json, code, text, plan or auto, as for run.")
    ] = "json",
    max_rounds: Annotated[int, typer.Option(min=1, help="Model requests per turn at most.")] = 10,
    system: Annotated[str | None, typer.Option(help="System prompt.")] = None,
    base_url: Annotated[
        str | None, typer.Option(help="Base URL of an OpenAI-compatible server.")
    ] = None,
    approve: Annotated[str, typer.Option("--approve", help=_APPROVE_HELP)] = "none",
    store: Annotated[
        Path, typer.Option(help="The SQLite file conversations are kept in.")
    ] = CHAT_STORE,
    conversation: Annotated[
        str | None,
        typer.Option("--id", help="Continue the conversation with this id, or start one under it."),
    ] = None,
    list_them: Annotated[
        bool, typer.Option("--list", help="List the stored conversations and exit.")
    ] = False,
    trace: Annotated[
        Path | None, typer.Option(help="Append JSON Lines trace events to this file.")
    ] = None,
) -> None:
    """Chat with an agent on the terminal: each line you type is a turn, streamed.

    Every turn is kept in --store as it ends, so --id continues a conversation
    later. Type /exit, or end the input (Ctrl-D), to leave; Ctrl-C stops the
    turn under way.
    """
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


@tools_app.command("show")
def tools_show(
    ctx: typer.Context,
    target: Annotated[str | None, typer.Argument(help="Toolbox as MODULE:ATTR.")] = None,
    fmt: Annotated[
        Format, typer.Option("--format", help="Which rendering to print.")
    ] = Format.openai,
    mcp: Annotated[list[str] | None, typer.Option("--mcp", help=_MCP_HELP)] = None,
) -> None:
    """Print a toolbox, or an MCP server's tools, the way a model sees it."""
    toolbox = gather_tools(ctx, target, mcp or [], given_as="TARGET")
    if fmt is Format.stubs:
        source = toolbox.stub_module()
        if out.is_terminal:
            from rich.syntax import Syntax  # it loads pygments: only shown code pays for it

            out.print(Syntax(source, "python"))
        else:
            sys.stdout.write(source)
        return
    if fmt is Format.anthropic:
        rendered = toolbox.to_anthropic()
    else:
        rendered = toolbox.to_openai(strict=fmt is Format.openai_strict)
    sys.stdout.write(json.dumps(rendered, indent=2, ensure_ascii=False) + "\n")


def _hide_flag_types(command: Any, parent: typer.Context | None = None) -> None:
    # typer labels every flag, --help included, with the type <bool>, which reads
    # as if `--json true` were the way to pass it; a flag takes no value.
    ctx = typer.Context(command, parent=parent, info_name=command.name)
    for param in command.get_params(ctx):
        if getattr(param, "is_flag", False):
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _hide_flag_types(sub, ctx)


def main() -> None:
    """Entry point: library errors become one clear line and exit code 2.

    Set TOOLUSE_DEBUG=1 to see the traceback instead.
    """
    command = typer.main.get_command(app)
    _hide_flag_types(command)
    plain_help(command)
    try:
        command()
    except ToolUseError as exc:
        if os.environ.get("TOOLUSE_DEBUG"):
            raise
        # soft_wrap: the message stays one line, however narrow the terminal.
        err.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
        sys.exit(2)
