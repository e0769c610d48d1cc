"""``tooluse`` commands. Rendering lives here; the library only emits events."""

from __future__ import annotations

import copy
import json
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.models import TyperInfo

from .._exceptions import ToolUseError
from ..models._registry import DEFAULT_LOCAL_TEXT
from ._bench import bench_app
from ._eval import eval_command
from ._help import plain_help
from ._lint import lint_command
from ._mcp import mcp_app
from ._models import models_app
from ._runs import runs_app
from ._sim import sim_app
from ._view import view

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


ToolsOption = Annotated[str | None, typer.Option("--tools", help="Toolbox to use, as MODULE:ATTR.")]
McpOption = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp",
        help="An MCP server whose tools to add: a command to run (stdio) or an http(s) URL "
        "(Streamable HTTP). Repeat for several; tools whose names clash get the server's "
        "name in front.",
    ),
]
BaseUrlOption = Annotated[str | None, typer.Option(help="Base URL of an OpenAI-compatible server.")]


class Format(StrEnum):
    openai = "openai"
    openai_strict = "openai-strict"
    anthropic = "anthropic"
    stubs = "stubs"


ApproveOption = Annotated[
    str,
    typer.Option(
        "--approve",
        help="Before calls run: none (run every valid call), ask (ask here before each call "
        "to a tool with side effects), ask-all (before every call) or provenance (ask only "
        "when an argument of such a call came from untrusted tool results).",
    ),
]


@app.command()
def run(  # noqa: PLR0917 - typer maps parameters to options
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(help="What the agent should do.")],
    tools: ToolsOption = None,
    mcp: McpOption = None,
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
    base_url: BaseUrlOption = None,
    system: Annotated[str | None, typer.Option(help="System prompt.")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole RunResult as JSON.")
    ] = False,
    approve: ApproveOption = "none",
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
    from ._session import run_task  # the runtime loads only for a command that runs it

    run_task(
        ctx,
        task,
        tools=tools,
        mcp=mcp,
        model=model,
        convention=convention,
        max_rounds=max_rounds,
        tool_choice=tool_choice,
        parallel_calls=parallel_calls,
        trace=trace,
        base_url=base_url,
        system=system,
        as_json=as_json,
        approve=approve,
        scope=scope,
        stream=stream,
        check_answers=check_answers,
    )


#: Where `tooluse chat` keeps its conversations unless told otherwise.
CHAT_STORE = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / (
    "tooluse/conversations.db"
)


@app.command()
def chat(  # noqa: PLR0917 - typer maps parameters to options
    ctx: typer.Context,
    tools: ToolsOption = None,
    mcp: McpOption = None,
    model: Annotated[
        str, typer.Option("--model", help="As for run: local, openai:MODEL, scripted:FILE …")
    ] = "local",
    convention: Annotated[
        str, typer.Option(help="json, code, text, plan or auto, as for run.")
    ] = "json",
    max_rounds: Annotated[int, typer.Option(min=1, help="Model requests per turn at most.")] = 10,
    system: Annotated[str | None, typer.Option(help="System prompt.")] = None,
    base_url: BaseUrlOption = None,
    approve: ApproveOption = "none",
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
    from ._session import chat as chat_session

    chat_session(
        ctx,
        tools=tools,
        mcp=mcp,
        model=model,
        convention=convention,
        max_rounds=max_rounds,
        system=system,
        base_url=base_url,
        approve=approve,
        store=store,
        conversation=conversation,
        list_them=list_them,
        trace=trace,
    )


@tools_app.command("show")
def tools_show(
    ctx: typer.Context,
    target: Annotated[str | None, typer.Argument(help="Toolbox as MODULE:ATTR.")] = None,
    fmt: Annotated[
        Format, typer.Option("--format", help="Which rendering to print.")
    ] = Format.openai,
    mcp: McpOption = None,
) -> None:
    """Print a toolbox, or an MCP server's tools, the way a model sees it."""
    from ._inputs import gather_tools

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


def _only(group: typer.Typer, argv: list[str]) -> typer.Typer:
    """``group`` with only the command that ``argv`` names, where it names one.

    typer turns every command's signature into click parameters before it runs any:
    a start would build all of them (some 30 ms) to run one. Help for a whole
    group, and a name that is no command, get that group whole, so that its listing
    and its "no such command" error are unchanged.
    """
    name = argv[0] if argv else ""
    commands = [
        info
        for info in group.registered_commands
        if (info.name or getattr(info.callback, "__name__", "")) == name
    ]
    groups = [_only_in(info, argv[1:]) for info in group.registered_groups if info.name == name]
    if not commands and not groups:
        return group
    pruned = copy.copy(group)
    pruned.registered_commands = commands
    pruned.registered_groups = groups
    return pruned


def _only_in(info: TyperInfo, argv: list[str]) -> TyperInfo:
    """A command group's entry, its group pruned to what ``argv`` names (see `_only`)."""
    if not isinstance(info.typer_instance, typer.Typer):
        return info
    pruned = copy.copy(info)
    pruned.typer_instance = _only(info.typer_instance, argv)
    return pruned


def main() -> None:
    """Entry point: library errors become one clear line and exit code 2.

    Set TOOLUSE_DEBUG=1 to see the traceback instead.
    """
    command = typer.main.get_group(_only(app, sys.argv[1:2]))
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
