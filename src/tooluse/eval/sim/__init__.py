"""Simulations that predict what the runtime then measures.

The buffer simulation (numpy only; matplotlib for `plot`) models how eviction
policies lose needed context over a long episode under one hard budget. The
runtime experiment runs the same episode through the real agent loop, context
window and store, harness offload against agent offload::

    from tooluse.eval import sim

    report = sim.simulate(sim.BufferSimConfig())
    print(sim.render_table(report))
    harness, agent = sim.run_experiment(sim.ExperimentConfig(turns=150, trials=1))
"""

from tooluse.eval.sim._buffer import (
    POLICIES,
    BufferSimConfig,
    Policy,
    PolicyResult,
    SimReport,
    plot,
    plot_sweep,
    render_sweep,
    render_table,
    simulate,
    sweep_budget,
)
from tooluse.eval.sim._runtime import (
    ExperimentConfig,
    ExperimentResult,
    render_results,
    run_experiment,
)

__all__ = [
    "POLICIES",
    "BufferSimConfig",
    "ExperimentConfig",
    "ExperimentResult",
    "Policy",
    "PolicyResult",
    "SimReport",
    "plot",
    "plot_sweep",
    "render_results",
    "render_sweep",
    "render_table",
    "run_experiment",
    "simulate",
    "sweep_budget",
]
