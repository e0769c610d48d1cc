"""``tooluse runs …``: durable runs read and decided from any process (the durable extra)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..durable import approve, list_runs, show_run
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
    approve(run_id, call_id, allow=allow, url=db)
    print(f"{'allowed' if allow else 'denied'}: {call_id} of run {run_id}")
