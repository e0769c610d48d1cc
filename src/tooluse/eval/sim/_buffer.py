"""How much needed context each eviction policy destroys over a long episode.

The simulation tests the argument for agent-invoked context management (Li et al.
2026): that an agent's own belief about what it has finished with is a better
eviction hint than recency. Each turn appends one item to a context buffer of `budget` tokens. Item
sizes are lognormal. A fraction `reuse_fraction` of the items is needed once more,
after a Pareto-tailed reuse distance; needs that would fall after the last turn are
dropped. When an append would push occupancy past ``trigger * budget``, the buffer is
compacted to ``target * budget`` by the policy under test:

``threshold_truncate``
    drops the oldest items: recency as the only hint about future use.
``random_evict``
    drops items in random order: the blind control, uncorrelated with future use.
``agent_offload``
    moves to external memory first the items the agent believes it is finished
    with (a belief that is right with probability `signal_accuracy`), then the
    rest, oldest first. An offloaded item that is needed again costs one query and
    comes back with probability `recall`.

A needed item that is neither in the buffer nor recovered is lost; an episode's
loss is lost / needed. Every policy runs on the same trajectories and under the same
trigger and target, so peak occupancy is the shared cap read back out, equal across
policies by construction rather than a finding.

    from tooluse.eval import sim
    report = sim.simulate(sim.BufferSimConfig())
    print(sim.render_table(report))
    sim.plot(report, "figure.png")
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np

from tooluse._exceptions import UsageError

__all__ = [
    "POLICIES",
    "BufferSimConfig",
    "Policy",
    "PolicyResult",
    "SimReport",
    "plot",
    "plot_sweep",
    "render_sweep",
    "render_table",
    "simulate",
    "sweep_budget",
]

Policy = Literal["threshold_truncate", "random_evict", "agent_offload"]
POLICIES: tuple[Policy, ...] = ("threshold_truncate", "random_evict", "agent_offload")

_LABELS: dict[str, str] = {
    "threshold_truncate": "threshold\ntruncation",
    "random_evict": "random\neviction",
    "agent_offload": "agent-invoked\noffload",
}
_COLORS: dict[str, str] = {
    "threshold_truncate": "#b5651d",
    "random_evict": "#7a7a7a",
    "agent_offload": "#1f6f8b",
}


@dataclass(frozen=True)
class BufferSimConfig:
    """Parameters of the simulation; the defaults give the reference table."""

    budget: float = 12_000
    """Context budget B, in tokens."""
    turns: int = 400
    """Turns in one episode; one item is appended per turn."""
    alpha: float = 0.9
    """Pareto tail index of the reuse distance (smaller is fatter)."""
    reuse_fraction: float = 0.45
    """Fraction of items that are needed again."""
    signal_accuracy: float = 0.85
    """Probability that the agent's belief about an item's future use is right."""
    recall: float = 0.90
    """Probability that a query brings back a needed offloaded item."""
    trials: int = 40
    """Independent episodes per policy."""
    trigger: float = 0.92
    """Compaction starts when occupancy would exceed this fraction of the budget."""
    target: float = 0.60
    """Compaction stops once occupancy plus the incoming item fits this fraction."""
    seed: int = 20_260_726
    item_tokens: float = 400.0
    """Median item size in tokens."""
    item_sigma: float = 0.6
    """Standard deviation of the log of the item size."""
    policies: tuple[Policy, ...] = POLICIES

    def __post_init__(self) -> None:
        problems = []
        if not self.budget > 0:
            problems.append(f"budget must be positive, not {self.budget}")
        if self.turns < 1:
            problems.append(f"turns must be at least 1, not {self.turns}")
        if self.trials < 1:
            problems.append(f"trials must be at least 1, not {self.trials}")
        if not self.alpha > 0:
            problems.append(f"alpha must be positive, not {self.alpha}")
        for name in ("reuse_fraction", "signal_accuracy", "recall"):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                problems.append(f"{name} must be a probability, not {value}")
        if not 0 < self.target < self.trigger <= 1:
            problems.append(
                f"need 0 < target < trigger <= 1, got target={self.target}, trigger={self.trigger}"
            )
        if not self.item_tokens > 0 or not self.item_sigma >= 0:
            problems.append("item_tokens must be positive and item_sigma not negative")
        unknown = [p for p in self.policies if p not in POLICIES]
        if unknown or not self.policies or len(set(self.policies)) != len(self.policies):
            problems.append(f"policies must be distinct names from {POLICIES}, not {self.policies}")
        if problems:
            raise UsageError("; ".join(problems))


@dataclass(frozen=True)
class PolicyResult:
    """Per-trial outcomes of one policy, and their summaries."""

    policy: Policy
    loss: tuple[float, ...]
    """Needed-but-unrecoverable fraction, per trial."""
    peak: tuple[float, ...]
    """Peak occupancy as a fraction of the budget, per trial."""
    queries: tuple[int, ...]
    """Retrieval queries, per trial."""

    @property
    def loss_mean(self) -> float:
        return float(np.mean(self.loss))

    @property
    def loss_sd(self) -> float:
        """Sample standard deviation (ddof=1); NaN for a single trial."""
        if len(self.loss) < 2:
            return math.nan
        return float(np.std(self.loss, ddof=1))

    @property
    def loss_spread(self) -> float:
        return max(self.loss) - min(self.loss)

    @property
    def queries_mean(self) -> float:
        return float(np.mean(self.queries))

    @property
    def peak_mean(self) -> float:
        return float(np.mean(self.peak))


@dataclass(frozen=True)
class SimReport:
    config: BufferSimConfig
    results: tuple[PolicyResult, ...]

    def __getitem__(self, policy: str) -> PolicyResult:
        for result in self.results:
            if result.policy == policy:
                return result
        raise KeyError(policy)


@dataclass(frozen=True)
class _Trajectory:
    size: list[float]
    believed_needed: list[bool]
    due: dict[int, list[int]]  # turn -> items needed at that turn, oldest first


def _trajectory(rng: np.random.Generator, cfg: BufferSimConfig) -> _Trajectory:
    # The order of these draws is part of the model: with it, the default seed
    # reproduces the reference table exactly.
    n = cfg.turns
    size = rng.lognormal(np.log(cfg.item_tokens), cfg.item_sigma, n)
    reused = rng.random(n) < cfg.reuse_fraction
    distance = np.ceil(rng.pareto(cfg.alpha, n) + 1.0).astype(np.int64)
    next_use = np.arange(n) + distance
    needed_at = np.where(reused & (next_use < n), next_use, -1)
    belief_wrong = rng.random(n) > cfg.signal_accuracy
    believed_needed = (needed_at >= 0) ^ belief_wrong

    due: dict[int, list[int]] = {}
    for item, turn in enumerate(needed_at.tolist()):
        if turn >= 0:
            due.setdefault(turn, []).append(item)
    return _Trajectory(size.tolist(), believed_needed.tolist(), due)


def _episode(
    policy: Policy, rng: np.random.Generator, cfg: BufferSimConfig
) -> tuple[float, float, int]:
    """One episode: (peak occupancy / budget, loss rate, queries)."""
    traj = _trajectory(rng, cfg)
    size, believed = traj.size, traj.believed_needed
    high, low = cfg.trigger * cfg.budget, cfg.target * cfg.budget
    offloads = policy == "agent_offload"

    live: dict[int, float] = {}  # insertion order is age order, oldest first
    offloaded: set[int] = set()
    occupancy = peak = 0.0

    def admit(item: int) -> None:
        nonlocal occupancy, peak
        incoming = size[item]
        if occupancy + incoming > high:
            order = list(live)
            if offloads:
                victims = [i for i in order if not believed[i]] + [i for i in order if believed[i]]
            elif policy == "random_evict":
                victims = [order[j] for j in rng.permutation(len(order)).tolist()]
            else:
                victims = order
            for victim in victims:
                if occupancy + incoming <= low:
                    break
                occupancy -= live.pop(victim)
                if offloads:
                    offloaded.add(victim)
        live[item] = incoming
        occupancy += incoming
        peak = max(peak, occupancy)

    needed = lost = queries = 0
    for turn in range(cfg.turns):
        admit(turn)
        for item in traj.due.get(turn, ()):
            needed += 1
            if item in live:
                continue
            if item in offloaded:
                queries += 1
                if rng.random() < cfg.recall:
                    admit(item)
                    continue
            lost += 1
    return peak / cfg.budget, lost / max(needed, 1), queries


def simulate(config: BufferSimConfig | None = None) -> SimReport:
    """Run every policy for `config.trials` episodes; policies share each trajectory."""
    cfg = config or BufferSimConfig()
    master = np.random.default_rng(cfg.seed)
    outcomes: dict[Policy, list[tuple[float, float, int]]] = {p: [] for p in cfg.policies}
    for _ in range(cfg.trials):
        # Common random numbers: each policy starts from the same generator state, so it
        # sees the same trajectory and the comparison is paired.
        trial_seed = int(master.integers(1 << 31))
        for policy in cfg.policies:
            outcomes[policy].append(_episode(policy, np.random.default_rng(trial_seed), cfg))
    return SimReport(
        cfg,
        tuple(
            PolicyResult(
                policy,
                loss=tuple(loss for _, loss, _ in runs),
                peak=tuple(peak for peak, _, _ in runs),
                queries=tuple(q for _, _, q in runs),
            )
            for policy, runs in outcomes.items()
        ),
    )


def sweep_budget(config: BufferSimConfig | None, budgets: Iterable[float]) -> list[SimReport]:
    """Run `simulate` once per budget, everything else as in `config`.

    Under a fat-tailed reuse distance, loss falls slowly with the budget: see
    `render_sweep`.
    """
    cfg = config or BufferSimConfig()
    return [simulate(replace(cfg, budget=budget)) for budget in budgets]


def render_table(report: SimReport) -> str:
    """One row per policy: name, loss, loss sd, spread, queries, peak/B."""
    header = f"{'policy':<20}{'loss':>9}{'loss sd':>10}{'spread':>9}{'queries':>9}{'peak/B':>9}"
    lines = [header, "=" * len(header)]
    for r in report.results:
        lines.append(
            f"{r.policy:<20}{r.loss_mean:>9.4f}{r.loss_sd:>10.4f}{r.loss_spread:>9.4f}"
            f"{r.queries_mean:>9.1f}{r.peak_mean:>9.3f}"
        )
    return "\n".join(lines)


def render_sweep(reports: Sequence[SimReport]) -> str:
    """Mean loss per budget and policy, with the ratio to the previous budget."""
    if not reports:
        return ""
    policies = [r.policy for r in reports[0].results]
    header = f"{'budget':>9}" + "".join(f"{p:>22}" for p in policies)
    lines = [header, "=" * len(header)]
    previous: SimReport | None = None
    for report in reports:
        cells = []
        for policy in policies:
            loss = report[policy].loss_mean
            if previous is None or previous[policy].loss_mean == 0:
                cells.append(f"{loss:>22.4f}")
            else:
                ratio = loss / previous[policy].loss_mean
                cells.append(f"{loss:>13.4f} (x{ratio:.2f})")
        lines.append(f"{report.config.budget:>9,.0f}" + "".join(cells))
        previous = report
    return "\n".join(lines)


def plot(report: SimReport, path: str | Path) -> Path:
    """Draw the two-panel figure (mean loss with sd bars; per-trial loss) to a PNG."""
    # Imported here so that the store and the simulation itself work without
    # matplotlib, and drawn on an Agg canvas directly so that the caller's pyplot
    # backend is left alone.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    results = report.results
    x = np.arange(len(results))
    labels = [_LABELS[r.policy] for r in results]
    colors = [_COLORS[r.policy] for r in results]

    fig = Figure(figsize=(8.6, 3.6))
    FigureCanvasAgg(fig)
    bars, trials = fig.subplots(1, 2)

    means = [r.loss_mean for r in results]
    sds = [0.0 if math.isnan(r.loss_sd) else r.loss_sd for r in results]
    bars.bar(x, means, yerr=sds, capsize=5, color=colors)
    bars.set_ylabel("needed but unrecoverable")
    bars.set_title("Information loss (mean $\\pm$ sd)")

    # A fixed jitter seed keeps the figure identical from run to run.
    jitter = np.random.default_rng(1).normal(0, 0.06, (len(results), report.config.trials))
    for j, r in enumerate(results):
        trials.scatter(j + jitter[j], r.loss, s=14, alpha=0.65, color=colors[j])
        trials.hlines(r.loss_mean, j - 0.28, j + 0.28, color="k", lw=1.6)
    trials.set_ylabel("loss rate per trial")
    trials.set_title(f"Run to run spread ({report.config.trials} trials)")

    for ax in (bars, trials):
        ax.set_xticks(x)
        ax.set_xticklabels(labels, fontsize=8.5)
        ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, format="png", dpi=150)
    return out


def plot_sweep(reports: Sequence[SimReport], path: str | Path) -> Path:
    """Draw a budget sweep to a PNG: mean loss (± sd) and queries per episode against B."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not reports:
        raise UsageError("a sweep needs at least one budget")
    budgets = [r.config.budget for r in reports]
    fig = Figure(figsize=(8.6, 3.6))
    FigureCanvasAgg(fig)
    losses, queries = fig.subplots(1, 2)
    for policy in (r.policy for r in reports[0].results):
        results = [r[policy] for r in reports]
        label = _LABELS[policy].replace("\n", " ")
        sds = [0.0 if math.isnan(r.loss_sd) else r.loss_sd for r in results]
        losses.errorbar(
            budgets, [r.loss_mean for r in results], yerr=sds, marker="o", ms=4, capsize=3,
            color=_COLORS[policy], label=label,
        )  # fmt: skip
        if any(r.queries_mean for r in results):
            queries.plot(
                budgets, [r.queries_mean for r in results], marker="o", ms=4,
                color=_COLORS[policy], label=label,
            )  # fmt: skip
    losses.set_ylabel("needed but unrecoverable")
    losses.set_title("Information loss against budget (mean $\\pm$ sd)")
    losses.legend(frameon=False, fontsize=8)
    queries.set_ylabel("queries per episode")
    queries.set_title("Retrieval queries against budget")
    queries.legend(frameon=False, fontsize=8, title="the others never query", title_fontsize=8)
    for ax in (losses, queries):
        ax.set_xscale("log")
        ax.set_xticks(budgets, [f"{b:,.0f}" for b in budgets], fontsize=8.5)
        ax.minorticks_off()
        ax.set_xlabel(f"budget B, tokens ({reports[0].config.trials} trials each)")
        ax.set_ylim(bottom=0)
        ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, format="png", dpi=150)
    return out
