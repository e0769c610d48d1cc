"""``tooluse sim …``: simulations that predict what the runtime then measures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from .. import UsageError
from ._extras import need

sim_app = typer.Typer(help="Simulations of context policies.", no_args_is_help=True)
out = Console()


@sim_app.command("buffer")
def buffer(  # noqa: PLR0917 - typer maps parameters to options
    budget: Annotated[float, typer.Option(help="Context budget B, in tokens.")] = 12_000,
    turns: Annotated[int, typer.Option(help="Turns per episode.")] = 400,
    alpha: Annotated[float, typer.Option(help="Pareto tail index of the reuse distance.")] = 0.9,
    reuse: Annotated[float, typer.Option(help="Fraction of items needed again.")] = 0.45,
    signal_accuracy: Annotated[
        float, typer.Option(help="How often the agent is right about future use.")
    ] = 0.85,
    recall: Annotated[float, typer.Option(help="Chance a query brings an item back.")] = 0.90,
    trials: Annotated[int, typer.Option(help="Episodes per policy.")] = 40,
    trigger: Annotated[float, typer.Option(help="Compaction trigger, fraction of B.")] = 0.92,
    target: Annotated[float, typer.Option(help="Compaction target, fraction of B.")] = 0.60,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 20_260_726,
    plot: Annotated[
        Path | None, typer.Option(help="Draw the two-panel figure to this PNG.")
    ] = Path("out/buffer.png"),
    sweep: Annotated[
        str | None,
        typer.Option(help="Comma-separated budgets to sweep, e.g. 6000,12000,24000,48000."),
    ] = None,
) -> None:
    """Threshold truncation, random eviction and agent-invoked offload under one hard budget."""
    need("eval", "tooluse sim")
    from ..eval import sim

    config = sim.BufferSimConfig(
        budget=budget,
        turns=turns,
        alpha=alpha,
        reuse_fraction=reuse,
        signal_accuracy=signal_accuracy,
        recall=recall,
        trials=trials,
        trigger=trigger,
        target=target,
        seed=seed,
    )
    if sweep:
        try:
            budgets = [float(b) for b in sweep.split(",") if b.strip()]
        except ValueError:
            raise typer.BadParameter("--sweep takes numbers separated by commas") from None
        reports = sim.sweep_budget(config, budgets)
        print(sim.render_sweep(reports))
        if plot is not None:
            _draw(plot, lambda path: sim.plot_sweep(reports, path))
        return
    report = sim.simulate(config)
    print(sim.render_table(report))
    print("\npeak/B is equal by construction (shared cap), not a measured difference")
    if plot is not None:
        _draw(plot, lambda path: sim.plot(report, path))


def _draw(path: Path, draw: Callable[[Path], Path]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        draw(path)
    except OSError as exc:
        raise UsageError(f"cannot write the figure to {path}: {exc.strerror or exc}") from exc
    out.print(f"[dim]figure written to {path}[/]")


@sim_app.command("runtime")
def runtime(
    budget: Annotated[int, typer.Option(help="Context budget B, in tokens.")] = 12_000,
    turns: Annotated[int, typer.Option(help="Turns per episode.")] = 300,
    trials: Annotated[int, typer.Option(help="Episodes per policy.")] = 5,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 20_260_726,
) -> None:
    """The buffer experiment through the real loop, window and store (harness vs agent)."""
    need("eval", "tooluse sim")
    from ..eval import sim

    config = sim.ExperimentConfig(budget=budget, turns=turns, trials=trials, seed=seed)
    print(sim.render_results(sim.run_experiment(config), trials))
