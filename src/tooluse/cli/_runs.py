"""``tooluse runs …``: durable runs read and decided from any process (the durable extra)."""

from __future__ import annotations

from typing import Annotated

import typer

from .._exceptions import UsageError
from ._extras import need

runs_app = typer.Typer(
    help="Durable runs (Agent(durable=...)): list them, show one, decide a call one waits on.",
    no_args_is_help=True,
)

Database = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="The database: sqlite:///PATH or postgresql://…; default: the SQLite file "
        "durable=True uses.",
    ),
]


@runs_app.command("list")
def list_command(
    db: Database = None,
    status: Annotated[
        str | None, typer.Option(help="Only runs with this status: PENDING, SUCCESS, ERROR.")
    ] = None,
) -> None:
    """Show each run: its id, status, worker, answer or task."""
    need("durable", "tooluse runs")
    from ..durable import list_runs  # loads only for the command that uses it

    for run in list_runs(db, status=status):
        said = run.answer if run.answer is not None else run.task
        print(f"{run.id}  {run.status}  {run.worker or '-'}  {said}")


@runs_app.command("show")
def show_command(
    run_id: Annotated[str, typer.Argument(help="The run's id.")],
    db: Database = None,
) -> None:
    """Show a run: its status, its recorded steps, and the calls waiting for a decision."""
    need("durable", "tooluse runs")
    from ..durable import show_run

    run = show_run(run_id, db)
    print(f"run {run.id}: {run.status} (worker {run.worker}, version {run.version})")
    print(f"task: {run.task}")
    if run.result_status is not None:
        print(f"result: {run.result_status}: {run.answer}")
    for step in run.steps:
        print(f"  {step.number:>3}  {step.kind:<6} {step.summary}")
    for call_id, request in run.pending.items():
        doubt = " IN DOUBT" if request.get("in_doubt") else ""
        print(
            f"waits{doubt}: {call_id} {request['tool']}({request['arguments']}): "
            f"{request['reason']}"
        )


@runs_app.command("approve")
def approve_command(
    run_id: Annotated[str, typer.Argument(help="The run's id.")],
    call_id: Annotated[str, typer.Argument(help="The id of the call it waits on.")],
    allow: Annotated[
        bool,
        typer.Option("--allow/--deny", help="Run the call, or do not (the model is told)."),
    ],
    db: Database = None,
) -> None:
    """Decide a call a durable run waits on; the run goes on in the worker that holds it."""
    need("durable", "tooluse runs")
    from ..durable import approve

    approve(run_id, call_id, allow=allow, url=db)
    print(f"{'allowed' if allow else 'denied'}: {call_id} of run {run_id}")


@runs_app.command("recover")
def recover_command(
    agent: Annotated[
        str,
        typer.Argument(
            help="MODULE:ATTR of a function that makes the agent the runs were started with, "
            "given a tooluse.durable.Durable (the database, and this process's worker name).",
        ),
    ],
    worker: Annotated[
        list[str] | None,
        typer.Option(
            "--worker",
            help="A worker whose pending runs to take over (repeat for several). [default: local]",
        ),
    ] = None,
    db: Database = None,
    as_: Annotated[
        str,
        typer.Option("--as", help="The worker name this process takes the runs over under."),
    ] = "recover",
) -> None:
    """Take over the pending runs of workers that are gone, and run them here to their end."""
    need("durable", "tooluse runs")
    from ..durable import Durable, default_url, recover
    from ..run import Agent
    from ._inputs import load_attribute

    make = load_attribute(agent, given_as="AGENT")
    if isinstance(make, Agent) or not callable(make):
        raise UsageError(
            f"{agent} is a {type(make).__name__}: name a function that makes the agent, "
            "given its Durable, so that it records to this database as this worker"
        )
    made = make(Durable(db or default_url(), worker=as_))
    if not isinstance(made, Agent) or made.durable is None:
        raise UsageError(f"{agent} made a {type(made).__name__}, not an Agent with durable=")
    with made:
        ids = recover(worker or ["local"])
        print(f"took over {len(ids)} run(s){': ' if ids else ''}{' '.join(ids)}", flush=True)
        for run_id in ids:
            # The run goes on in this process already: this waits for its end.
            result = made.run("", run_id=run_id)
            print(f"{run_id}: {result.status}: {result.answer}", flush=True)
