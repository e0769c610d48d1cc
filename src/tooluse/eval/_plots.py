"""PNG plots of results rows: tokens against N, accuracy against width, accuracy per category.

Every figure names the model it shows and says how many entries stand behind
each point or bar; a reader should not need ``summary.md`` to read one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._costmodel import PAPER, Crossover, LineFit, paper_crossover
from ._report import (
    PAPER_SOURCE,
    conventions_of,
    cost_fits,
    fanout_rows,
    line_fits,
    row_width,
    widths_text,
)
from ._row import Row

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["figures", "write_plots"]

_COLORS = {"json": "#c44e52", "code": "#4c72b0", "text": "#55a868"}
_MARKERS = {"json": "o", "code": "s", "text": "^"}
_GREY = "0.35"


def write_plots(out: Path, rows: Sequence[Row]) -> list[str]:
    """PNG plots for what the rows hold; returns their file names."""
    written = []
    for name, fig in figures(rows).items():
        fig.savefig(out / name, dpi=110)
        written.append(name)
    return written


def figures(rows: Sequence[Row]) -> dict[str, Figure]:
    """The figures `write_plots` saves, by file name, for what the rows hold."""
    # Drawn on Agg canvases directly, so that the caller's pyplot backend is left alone.
    drawn: dict[str, Figure] = {}
    if not rows:
        return drawn
    model = ", ".join(sorted({r.model for r in rows}))
    fanout = fanout_rows(rows)
    if fanout:
        drawn["tokens_vs_n.png"] = _tokens_figure(fanout, model)
    widths = [r for r in rows if r.suite in ("fanout", "chain") and r.width is not None]
    if widths:
        drawn["accuracy_vs_width.png"] = _accuracy_width_figure(widths, model)
    drawn["accuracy_by_category.png"] = _category_figure(rows, model)
    return drawn


def _figure(width: float, height: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def _color(convention: str) -> str:
    return _COLORS.get(convention, _GREY)


# --- tokens against N -------------------------------------------------------------


def _tokens_figure(fanout: Sequence[Row], model: str) -> Figure:
    fits = {f.variant: f.crossover for f in cost_fits(fanout) if f.measure == "input_tokens"}
    variants = sorted({r.category for r in fanout})
    fig = _figure(5.6 * len(variants), 4.6)
    axes = fig.subplots(1, len(variants), squeeze=False)
    for ax, variant in zip(axes[0], variants, strict=True):
        mine = [r for r in fanout if r.category == variant]
        _tokens_axes(ax, mine, line_fits(fanout, variant, "input_tokens"), fits.get(variant))
        ax.set_title(f"fan-out, {variant}: input tokens against N", fontsize=10.5)
    paper = paper_crossover()
    # Patel et al.'s lines run an order of magnitude above ours; drawn on the same
    # axes they would flatten the measurements, so they are quoted instead.
    fig.suptitle(f"Token cost per entry, model: {model}", fontsize=12)
    fig.text(
        0.5,
        0.01,
        f"{PAPER_SOURCE}, measured at N = {PAPER.widths[0]:.0f} and {PAPER.widths[1]:.0f}: "
        f"JSON {paper.json.intercept:,.0f} + {paper.json.slope:.1f}·N, code "
        f"{paper.code.intercept:,.0f} + {paper.code.slope:.1f}·N, N* ≈ {paper.n_star or 0:.1f}. "
        "Lines are least-squares fits over the widths measured.",
        ha="center",
        fontsize=8.5,
        color=_GREY,
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def _tokens_axes(
    ax: Any, rows: Sequence[Row], lines: Mapping[str, LineFit], fit: Crossover | None
) -> None:
    measured = sorted({row_width(r) for r in rows})
    low, high = measured[0], measured[-1]
    for convention in conventions_of(rows):
        points = sorted((row_width(r), r.input_tokens) for r in rows if r.convention == convention)
        color = _color(convention)
        xs, ys = zip(*points, strict=True)
        ax.scatter(xs, ys, s=22, color=color, marker=_MARKERS.get(convention, "D"), zorder=3)
        line = lines.get(convention)
        label = convention
        if line is not None:
            ax.plot([low, high], [line.at(low), line.at(high)], color=color, lw=1.4)
            label = f"{convention}: {line.intercept:,.0f} + {line.slope:.1f}·N"
        ax.plot([], [], color=color, marker=_MARKERS.get(convention, "D"), label=label)
    if fit is not None:
        _mark_crossing(ax, fit, low, high)
    ax.set_xlabel(f"fan-out width N (tool calls; measured at {widths_text(measured)})")
    ax.set_ylabel("input tokens per entry")
    ax.set_xlim(0, high * 1.04)
    ax.set_ylim(bottom=0)
    ax.legend(frameon=False, fontsize=8.5, loc="upper left")
    ax.spines[["top", "right"]].set_visible(False)


def _mark_crossing(ax: Any, fit: Crossover, low: int, high: int) -> None:
    """A vertical line at N*, saying plainly when it lies outside the widths measured."""
    n_star = fit.n_star
    if n_star is None or n_star <= 0 or n_star > high * 1.04:
        where = "never" if n_star is None else f"{n_star:.1f}"
        note = "code cheaper at every N" if fit.code_always_cheaper else "outside this range"
        ax.text(0.98, 0.04, f"N* {where}: {note}", transform=ax.transAxes, ha="right",
                fontsize=8.5, color=_GREY)  # fmt: skip
        return
    se = f" ± {fit.n_star_se:.1f}" if fit.n_star_se else ""
    outside = n_star < low or n_star > high
    ax.axvline(n_star, color=_GREY, ls=(0, (2, 3)) if outside else ":", lw=1.2)
    label = f"N* ≈ {n_star:.1f}{se}"
    if outside:
        label += f"\n(extrapolated: {'below' if n_star < low else 'above'} the widths measured)"
    ax.annotate(
        label,
        xy=(n_star, 0.03),
        xycoords=("data", "axes fraction"),
        xytext=(5, 0),
        textcoords="offset points",
        va="bottom",
        fontsize=8.5,
        color=_GREY,
        bbox={"boxstyle": "square,pad=0.2", "facecolor": "white", "edgecolor": "none"},
    )


# --- accuracy against width -------------------------------------------------------


def _accuracy_width_figure(rows: Sequence[Row], model: str) -> Figure:
    panels = sorted({(r.suite, r.category) for r in rows})
    fig = _figure(4.4 * len(panels), 4.0)
    axes = fig.subplots(1, len(panels), squeeze=False, sharey=True)
    for ax, (suite, category) in zip(axes[0], panels, strict=True):
        mine = [r for r in rows if (r.suite, r.category) == (suite, category)]
        runs = _accuracy_axes(ax, mine)
        name = suite if category == suite else f"{suite}, {category}"
        ax.set_title(f"{name} ({runs})", fontsize=10)
        ax.set_xlabel("chain length" if suite == "chain" else "fan-out width N")
    axes[0][0].set_ylabel("entries passed (%)")
    for convention in conventions_of(rows):
        axes[0][0].plot([], [], color=_color(convention), marker=_MARKERS.get(convention, "D"),
                        label=convention)  # fmt: skip
    axes[0][0].legend(frameon=False, fontsize=8.5, loc="lower left")
    fig.suptitle(f"Accuracy against width, model: {model}", fontsize=12)
    fig.tight_layout()
    return fig


def _accuracy_axes(ax: Any, rows: Sequence[Row]) -> str:
    """Draw one panel; return how many entries stand behind each point, in words."""
    conventions = conventions_of(rows)
    widths = sorted({row_width(r) for r in rows})
    # Widths sit at equal steps, conventions side by side within a step, so that
    # equal scores stay visible rather than hiding one another.
    position = {width: i for i, width in enumerate(widths)}
    dodge = 0.8 / max(len(conventions), 1)
    sizes: set[int] = set()
    for index, convention in enumerate(conventions):
        passed: dict[int, list[bool]] = defaultdict(list)
        for r in rows:
            if r.convention == convention:
                passed[row_width(r)].append(r.correct)
        sizes.update(len(v) for v in passed.values())
        shift = (index - (len(conventions) - 1) / 2) * dodge
        xs = sorted(passed)
        ax.plot(
            [position[x] + shift for x in xs],
            [100 * sum(passed[x]) / len(passed[x]) for x in xs],
            color=_color(convention),
            marker=_MARKERS.get(convention, "D"),
            ms=6,
            lw=1.2,
        )
    ax.set_xticks(range(len(widths)), [str(w) for w in widths])
    ax.set_xlim(-0.6, len(widths) - 0.4)
    ax.set_ylim(-5, 105)
    ax.spines[["top", "right"]].set_visible(False)
    low, high = min(sizes), max(sizes)
    count = f"{low}" if low == high else f"{low}–{high}"
    return f"{count} {'entry' if count == '1' else 'entries'} per point"


# --- accuracy per category --------------------------------------------------------


def _category_figure(rows: Sequence[Row], model: str) -> Figure:
    keys = sorted({(r.suite, r.category) for r in rows}, reverse=True)
    conventions = conventions_of(rows)
    labels = [c if s in ("bfcl", c) else f"{s}/{c}" for s, c in keys]
    fig = _figure(2.0 + 3.2 * len(conventions), 1.2 + 0.32 * len(keys))
    axes = fig.subplots(1, len(conventions), squeeze=False, sharey=True)
    for ax, convention in zip(axes[0], conventions, strict=True):
        shares, notes = [], []
        for key in keys:
            group = [r for r in rows if (r.suite, r.category, r.convention) == (*key, convention)]
            passed = sum(1 for r in group if r.correct)
            shares.append(100 * passed / len(group) if group else 0.0)
            notes.append(f"{passed}/{len(group)}" if group else "not run")
        positions = range(len(keys))
        ax.barh(positions, shares, color=_color(convention), height=0.7)
        for y, share, note in zip(positions, shares, notes, strict=True):
            ax.text(share + 2, y, note, va="center", fontsize=8, color=_GREY)
        ax.set_yticks(positions, labels, fontsize=9)
        ax.set_xlim(0, 125)
        ax.set_xticks([0, 25, 50, 75, 100])
        ax.set_xlabel("entries passed (%)")
        ax.set_title(convention, fontsize=11, color=_color(convention))
        ax.spines[["top", "right"]].set_visible(False)
    fig.suptitle(f"Accuracy per category (passed/run), model: {model}", fontsize=12)
    fig.tight_layout()
    return fig
