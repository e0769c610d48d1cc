"""Reports over results rows: aggregate tables, the cost-model fit, ``summary.md`` and plots."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._costmodel import PAPER, Crossover, LineFit, crossover, fit_line, paper_crossover
from ._row import Row
from ._runner import CONVENTIONS

__all__ = [
    "Aggregate",
    "aggregate",
    "cost_fits",
    "render_summary",
    "token_source_note",
    "write_summary",
]


def convention_order(convention: str) -> tuple[int, str]:
    """json, code, text, then anything else by name."""
    known = CONVENTIONS.index(convention) if convention in CONVENTIONS else len(CONVENTIONS)
    return known, convention


@dataclass(frozen=True, slots=True)
class Aggregate:
    """Figures over a group of rows; each mean states how many rows it covers."""

    entries: int
    correct: int
    #: Valid calls over calls emitted plus unreadable replies, pooled over the
    #: rows, with that denominator.
    schema_valid: tuple[float | None, int]
    precision: tuple[float | None, int]
    recall: tuple[float | None, int]
    argument_accuracy: tuple[float | None, int]
    rounds: float
    calls: float
    input_tokens: float
    output_tokens: float
    wall_s: float
    statuses: Counter[str]

    @property
    def accuracy(self) -> float:
        return self.correct / self.entries if self.entries else math.nan


def _mean_of(values: Iterable[float | None]) -> tuple[float | None, int]:
    """The mean of the values that exist, and how many did."""
    present = [float(v) for v in values if v is not None]
    return (sum(present) / len(present) if present else None), len(present)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _schema_valid(rows: Sequence[Row]) -> tuple[float | None, int]:
    valid = sum(r.calls for r in rows)
    emitted = valid + sum(r.rejected + r.unparsed for r in rows)
    return (valid / emitted if emitted else None), emitted


def aggregate(rows: Sequence[Row]) -> Aggregate:
    return Aggregate(
        entries=len(rows),
        correct=sum(1 for r in rows if r.correct),
        schema_valid=_schema_valid(rows),
        precision=_mean_of(r.precision for r in rows),
        recall=_mean_of(r.recall for r in rows),
        argument_accuracy=_mean_of(r.argument_accuracy for r in rows),
        rounds=_mean([r.rounds for r in rows]),
        calls=_mean([r.calls for r in rows]),
        input_tokens=_mean([r.input_tokens for r in rows]),
        output_tokens=_mean([r.output_tokens for r in rows]),
        wall_s=_mean([r.wall_s for r in rows]),
        statuses=Counter(r.status for r in rows),
    )


def token_source_note(rows: Iterable[Row]) -> str:
    """Where the token counts come from, in words, with row counts."""
    sources = Counter(r.token_source for r in rows)
    words = {
        "provider": "reported by the model provider",
        "o200k": "counted offline with the o200k_base tokenizer",
        "none": "not counted",
    }
    parts = [f"{words.get(s, s)} ({n} rows)" for s, n in sorted(sources.items())]
    return "Token counts: " + "; ".join(parts) + "."


# --- tables -------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "–" if value is None or math.isnan(value) else f"{100 * value:.1f}%"


def _ratio(pair: tuple[float | None, int]) -> str:
    value, n = pair
    return "–" if value is None else f"{100 * value:.1f}% ({n})"


def _num(value: float, digits: int = 1) -> str:
    return "–" if math.isnan(value) else f"{value:,.{digits}f}"


def _statuses(counter: Counter[str]) -> str:
    return ", ".join(f"{s} {n}" for s, n in counter.most_common())


_HEADER = (
    "| {group} | conv | N | accuracy | schema-valid (n) | precision (n) | recall (n) "
    "| arguments (n) | rounds | calls | input tok | output tok | wall s | statuses |\n"
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
)


def _table(rows: Sequence[Row], group: str, key: Callable[[Row], Any]) -> list[str]:
    lines = [_HEADER.format(group=group)]
    groups: dict[Any, list[Row]] = defaultdict(list)
    for row in rows:
        groups[(key(row), row.convention)].append(row)
    ordered = sorted(groups, key=lambda k: (_sort_key(k[0]), convention_order(k[1])))
    for name, convention in ordered:
        lines.append(_line(str(name), convention, aggregate(groups[(name, convention)])))
    for convention in conventions_of(rows):
        subset = [r for r in rows if r.convention == convention]
        lines.append(_line("**all**", convention, aggregate(subset)))
    return lines


def _sort_key(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, int | float) else (1, str(value))


def _line(name: str, convention: str, a: Aggregate) -> str:
    return (
        f"| {name} | {convention} | {a.entries} | {_pct(a.accuracy)} | {_ratio(a.schema_valid)} "
        f"| {_ratio(a.precision)} | {_ratio(a.recall)} | {_ratio(a.argument_accuracy)} "
        f"| {_num(a.rounds)} "
        f"| {_num(a.calls)} | {_num(a.input_tokens, 0)} | {_num(a.output_tokens, 0)} "
        f"| {_num(a.wall_s, 3)} | {_statuses(a.statuses)} |"
    )


# --- the cost model -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CostFit:
    variant: str
    measure: str
    crossover: Crossover
    widths: tuple[int, ...]


_MEASURES = ("input_tokens", "peak_input_tokens")
PAPER_SOURCE = "Patel et al. 2026"
# Why γ differs between the variants: what the one script has to write per item.
_VARIANT_NOTES = {
    "discovered": "discovered: the script loops over the items a call returned, so γ ≈ 0.",
    "listed": "listed: the request names every item and the script restates each one.",
}


def row_width(row: Row) -> int:
    if row.width is None:
        raise ValueError(f"{row.entry_id} has no width")
    return row.width


def _measured(row: Row, measure: str) -> int:
    return row.input_tokens if measure == "input_tokens" else row.peak_input_tokens


def fanout_rows(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if r.suite == "fanout" and r.width]


def line_fits(rows: Sequence[Row], variant: str, measure: str) -> dict[str, LineFit]:
    """Per convention, the least-squares line of `measure` against N for one fan-out variant.

    Conventions measured at fewer than two widths have no line.
    """
    lines = {}
    fanout = [r for r in fanout_rows(rows) if r.category == variant]
    for convention in sorted({r.convention for r in fanout}, key=convention_order):
        points = [
            (float(row_width(r)), float(_measured(r, measure)))
            for r in fanout
            if r.convention == convention
        ]
        if len({x for x, _ in points}) >= 2:
            lines[convention] = fit_line([x for x, _ in points], [y for _, y in points])
    return lines


def _variant_widths(rows: Sequence[Row], variant: str) -> tuple[int, ...]:
    return tuple(sorted({row_width(r) for r in fanout_rows(rows) if r.category == variant}))


def cost_fits(rows: Sequence[Row]) -> list[CostFit]:
    """Per fan-out variant, JSON's and code's lines of tokens against N, and where they cross."""
    fits = []
    for variant in sorted({r.category for r in fanout_rows(rows)}):
        for measure in _MEASURES:
            lines = line_fits(rows, variant, measure)
            if "json" in lines and "code" in lines:
                fits.append(
                    CostFit(
                        variant,
                        measure,
                        crossover(lines["json"], lines["code"]),
                        _variant_widths(rows, variant),
                    )
                )
    return fits


def _crossing(c: Crossover) -> str:
    if c.n_star is None:
        return "never (equal slopes)"
    se = f" ± {c.n_star_se:.1f}" if c.n_star_se else ""
    note = " (code cheaper at every N)" if c.code_always_cheaper else ""
    return f"{c.n_star:.1f}{se}{note}"


def _cost_section(rows: Sequence[Row], of_model: str = "") -> list[str]:
    fits = cost_fits(rows)
    paper = paper_crossover()
    lines = [
        f"## Token cost model (Patel et al. 2026){of_model}",
        "",
        "Least-squares lines of tokens against fan-out width N. JSON: intercept S, slope "
        "c_a + c_r + c_o; code: intercept P + ℓ₀, slope γ. `input tokens` sums every "
        "request of a run (what a provider bills); `largest request` is the biggest single "
        "request (the context the model finally sees). ± is one standard error.",
        "",
        "| source | measure | widths | S (json) | c_a+c_r+c_o | P+ℓ₀ (code) | γ | N* |",
        "|---|---|---|---:|---:|---:|---:|---:|",
        f"| {PAPER_SOURCE} | input tokens | {int(PAPER.widths[0])}, "
        f"{int(PAPER.widths[1])} | {paper.json.intercept:,.0f} | {paper.json.slope:.1f} "
        f"| {paper.code.intercept:,.0f} | {paper.code.slope:.1f} | {_crossing(paper)} |",
    ]
    for fit in fits:
        c = fit.crossover
        measure = "input tokens" if fit.measure == "input_tokens" else "largest request"
        lines.append(
            f"| ours: fanout/{fit.variant} | {measure} | {widths_text(fit.widths)} "
            f"| {c.json.intercept:,.0f} ± {c.json.intercept_se:,.0f} "
            f"| {c.json.slope:.1f} ± {c.json.slope_se:.1f} "
            f"| {c.code.intercept:,.0f} ± {c.code.intercept_se:,.0f} "
            f"| {c.code.slope:.1f} ± {c.code.slope_se:.1f} | {_crossing(c)} |"
        )
    lines += _text_cost_lines(rows)
    if fits:
        lines += ["", "Fit quality (R², RMSE in tokens):", ""]
        for fit in fits:
            c = fit.crossover
            lines.append(
                f"- fanout/{fit.variant}, {fit.measure}: json R² {c.json.r2:.5f}, RMSE "
                f"{c.json.rmse:.1f}; code R² {c.code.r2:.5f}, RMSE {c.code.rmse:.1f}"
            )
    return lines


def cost_table(rows: Sequence[Row]) -> list[str]:
    """The cost model in a few plain lines: per fan-out variant S, c, P + ℓ₀, γ and N*.

    Input tokens per entry; Patel et al.'s (2026) two measured widths last.
    """
    fits = [f for f in cost_fits(rows) if f.measure == "input_tokens"]
    if not fits:
        return []
    widths = sorted({w for f in fits for w in f.widths})
    lines = [
        "cost model, input tokens per entry against fan-out width N "
        f"(widths {widths_text(widths)}):",
        "JSON costs S + c·N (c: tokens per call), code P + ℓ₀ + γ·N; the lines cross at N*.",
        f"{'source':<20}{'S':>7}{'c (json)':>10}{'P+ℓ₀':>8}{'γ (code)':>10}{'N*':>13}",
    ]
    rows_shown = [(f"fanout/{f.variant}", f.crossover) for f in fits]
    for name, c in [*rows_shown, (PAPER_SOURCE, paper_crossover())]:
        n_star = "never" if c.n_star is None else f"{c.n_star:.1f}"
        if c.n_star_se:
            n_star += f" ± {c.n_star_se:.1f}"
        lines.append(
            f"{name:<20}{c.json.intercept:>7,.0f}{c.json.slope:>10.1f}"
            f"{c.code.intercept:>8,.0f}{c.code.slope:>10.1f}{n_star:>13}"
        )
    variants = {f.variant for f in fits}
    if variants & set(_VARIANT_NOTES):
        lines += [_VARIANT_NOTES[v] for v in sorted(variants) if v in _VARIANT_NOTES]
    return lines


def _text_cost_lines(rows: Sequence[Row]) -> list[str]:
    """The text convention's lines: outside the equations, but priced per call as JSON is."""
    found = []
    for variant in sorted({r.category for r in fanout_rows(rows)}):
        for measure in _MEASURES:
            lines = line_fits(rows, variant, measure)
            if "text" in lines:
                found.append((variant, measure, lines))
    if not found:
        return []
    out = [
        "",
        "The text convention is not in the equations; it pays per call as JSON does, so its "
        "line has JSON's form (intercept, slope per call). N* is where code's line crosses it.",
        "",
        "| source | measure | widths | intercept (text) | slope (text) | N* against code |",
        "|---|---|---|---:|---:|---:|",
    ]
    for variant, measure, lines in found:
        text = lines["text"]
        against = _crossing(crossover(text, lines["code"])) if "code" in lines else "–"
        shown = "input tokens" if measure == "input_tokens" else "largest request"
        out.append(
            f"| ours: fanout/{variant} | {shown} | {widths_text(_variant_widths(rows, variant))} "
            f"| {text.intercept:,.0f} ± {text.intercept_se:,.0f} "
            f"| {text.slope:.1f} ± {text.slope_se:.1f} | {against} |"
        )
    return out


def widths_text(widths: Sequence[int]) -> str:
    return (
        f"{widths[0]}–{widths[-1]} ({len(widths)})"
        if len(widths) > 2
        else ", ".join(map(str, widths))
    )


# --- summary ------------------------------------------------------------------------


def _width_table(rows: Sequence[Row], title: str) -> list[str]:
    lines = [f"### {title}", "", "| category | N | " + " | ".join(conventions_of(rows)) + " |"]
    lines.append("|---|---:|" + "---:|" * len(conventions_of(rows)))
    cells: dict[tuple[str, int], dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row.width is not None:
            cells[(row.category, row_width(row))][row.convention].append(row)
    for category, width in sorted(cells):
        by_convention = cells[(category, width)]
        values = []
        for convention in conventions_of(rows):
            group = by_convention.get(convention, [])
            values.append(f"{sum(1 for r in group if r.correct)}/{len(group)}" if group else "–")
        lines.append(f"| {category} | {width} | " + " | ".join(values) + " |")
    return lines


def conventions_of(rows: Sequence[Row]) -> list[str]:
    return sorted({r.convention for r in rows}, key=convention_order)


def _failures(rows: Sequence[Row], limit: int = 25) -> list[str]:
    failed = [r for r in rows if not r.correct]
    if not failed:
        return []
    lines = [f"### Entries not passed ({len(failed)})", ""]
    for row in failed[:limit]:
        why = row.reason
        why = why if len(why) <= 300 else why[:299] + "…"
        lines.append(f"- `{row.entry_id}` ({row.convention}, {row.status}): {why}")
    if len(failed) > limit:
        lines.append(f"- … and {len(failed) - limit} more (see results.jsonl)")
    return lines


def render_summary(rows: Sequence[Row], plots: Sequence[str] = ()) -> str:
    """``summary.md``: per model and suite, tables by category and convention; the cost model."""
    models = sorted({r.model for r in rows})
    lines = [
        "# Benchmark summary",
        "",
        f"Model: {', '.join(models) or '–'}. Rows: {len(rows)}. {token_source_note(rows)}",
        "",
        "Accuracy is the share of entries passed. Schema-valid is the share of what the "
        "model emitted that was a usable call: calls that passed schema validation, over "
        "calls emitted (valid, plus those the dispatcher refused: unknown tool, invalid "
        "arguments, or past the per-turn call limit) plus replies that could not be read as "
        "calls at all (sent back to the model: a malformed text call list, a script with a "
        "syntax error, an empty reply); it is pooled over the group's entries and its (n) is "
        "that denominator. Precision and recall compare the tools called with the tools "
        "needed; arguments is the share of argument fields right over the calls paired with "
        "a needed call; their (n) is how many entries each mean covers. Rounds, calls "
        "(executed), tokens and wall time are means per entry.",
    ]
    for model in models:
        mine = [r for r in rows if r.model == model]
        of_model = f" ({model})" if len(models) > 1 else ""
        for suite in sorted({r.suite for r in mine}):
            subset = [r for r in mine if r.suite == suite]
            lines += ["", f"## {suite}{of_model}", "", token_source_note(subset), ""]
            lines += _table(subset, "category", lambda r: r.category)
            if suite in ("fanout", "chain", "rot") and any(r.width for r in subset):
                title = (
                    "Accuracy by chain length (passed/run)"
                    if suite == "chain"
                    else "Accuracy by width (passed/run)"
                )
                lines += ["", *_width_table(subset, title)]
            lines += ["", *_failures(subset)]
        if any(r.suite == "fanout" for r in mine):
            lines += ["", *_cost_section(mine, of_model)]
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines).rstrip() + "\n"


def write_summary(out: Path, rows: Sequence[Row], plots: Sequence[str] = ()) -> Path:
    path = out / "summary.md"
    path.write_text(render_summary(rows, plots), encoding="utf-8")
    return path
