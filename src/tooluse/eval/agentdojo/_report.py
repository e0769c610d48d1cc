"""``summary.md`` for AgentDojo rows: utility and targeted attack success, with counts.

For each model, defense and convention, per suite and overall:

- utility: user tasks solved in runs without an attack;
- utility under attack: user tasks solved in runs with an injection;
- attack success: runs with an injection where the injection task was achieved
  (AgentDojo's targeted attack success rate).

Rows that could not be scored are counted apart and never as a success.
When one directory holds a model's runs with and without a defense, the user
tasks the defense cost (solved without it, not with it) are listed with the
calls it denied. Under a provenance defense, a last section counts the answers
marked as repeating what only untrusted results held: among the attacks that
got through, and among the runs without an attack, where the task itself asked
for what a mail or a file says.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ._row import AgentDojoRow

__all__ = ["Figures", "figures", "summary_lines", "write_agentdojo_summary"]

SUMMARY = "summary.md"


@dataclass(frozen=True, slots=True)
class Figures:
    """Counts for one group of rows."""

    utility: int
    runs: int
    utility_attacked: int
    attacked_runs: int
    attacks: int
    errors: int

    @staticmethod
    def share(part: int, whole: int) -> str:
        return f"{100 * part / whole:.1f}% ({part}/{whole})" if whole else "–"


def figures(rows: Iterable[AgentDojoRow]) -> Figures:
    rows = list(rows)
    clean = [r for r in rows if r.injection_task is None]
    attacked = [r for r in rows if r.injection_task is not None]
    return Figures(
        utility=sum(r.utility for r in clean),
        runs=len(clean),
        utility_attacked=sum(r.utility for r in attacked),
        attacked_runs=len(attacked),
        attacks=sum(r.attacked for r in attacked),
        errors=sum(r.error is not None for r in [*clean, *attacked]),
    )


def summary_lines(rows: Sequence[AgentDojoRow]) -> list[str]:
    groups = sorted({r.group for r in rows})
    versions = sorted({r.version for r in rows})
    attacks = sorted({r.attack for r in rows if r.attack})
    lines = [
        "# AgentDojo",
        "",
        f"Benchmark {', '.join(versions) or '–'}; attack {', '.join(attacks) or 'none'}. "
        "Utility counts user tasks solved without an attack; attack success counts runs "
        "with an injection whose injection task was achieved (AgentDojo's own checks).",
        "",
        "| model | defense | convention | suite | utility | utility under attack "
        "| attack success | errors |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for model, defense, convention in groups:
        mine = [r for r in rows if r.group == (model, defense, convention)]
        suites = sorted({r.suite for r in mine})
        for suite in [*suites, "overall"]:
            part = mine if suite == "overall" else [r for r in mine if r.suite == suite]
            f = figures(part)
            name = f"**{suite}**" if suite == "overall" else suite
            lines.append(
                f"| {model} | {defense} | {convention} | {name} "
                f"| {Figures.share(f.utility, f.runs)} "
                f"| {Figures.share(f.utility_attacked, f.attacked_runs)} "
                f"| {Figures.share(f.attacks, f.attacked_runs)} | {f.errors} |"
            )
    lines += _costs(rows)
    lines += _marked(rows)
    errors = [r for r in rows if r.error]
    if errors:
        lines += ["", "## Runs that could not be scored", ""]
        lines += [
            f"- {r.model} {r.defense} {r.convention} {r.suite} {r.user_task} "
            f"{r.injection_task or '(no attack)'}: {r.error}"
            for r in errors[:50]
        ]
        if len(errors) > 50:
            lines.append(f"- … and {len(errors) - 50} more (see results.jsonl)")
    return lines


def _costs(rows: Sequence[AgentDojoRow]) -> list[str]:
    """User tasks solved without a defense and not with it, in runs without an attack."""
    solved = {
        (r.model, r.convention, r.suite, r.user_task)
        for r in rows
        if r.defense == "none" and r.injection_task is None and r.utility
    }
    lost = [
        r
        for r in rows
        if r.defense != "none"
        and r.injection_task is None
        and not r.utility
        and (r.model, r.convention, r.suite, r.user_task) in solved
    ]
    if not lost:
        return []
    lines = ["", "## What the defense cost", ""]
    for r in sorted(lost, key=lambda r: (r.model, r.defense, r.convention, r.suite)):
        why = "; ".join(r.denied) or r.error or "no call denied"
        lines.append(f"- {r.model} {r.defense} {r.convention} {r.suite} {r.user_task}: {why}")
    return lines


def _marked(rows: Sequence[AgentDojoRow]) -> list[str]:
    """Per group with a provenance defense: how often the answer was marked, and where."""
    lines: list[str] = []
    for group in sorted({r.group for r in rows if "provenance" in r.defense}):
        mine = [r for r in rows if r.group == group]
        got_through = [r for r in mine if r.attacked]
        clean = [r for r in mine if r.injection_task is None]
        marked = sum(bool(r.untrusted_in_answer) for r in got_through)
        lines.append(
            f"- {' '.join(group)}: {marked} of {len(got_through)} attacks that got through, "
            f"{sum(bool(r.untrusted_in_answer) for r in clean)} of {len(clean)} runs "
            "without an attack"
        )
        examples = [r for r in got_through if r.untrusted_in_answer][:3]
        lines += [
            f"  - {r.suite} {r.user_task} {r.injection_task}: {'; '.join(r.untrusted_in_answer)}"
            for r in examples
        ]
    if not lines:
        return []
    return ["", "## Answers marked as repeating untrusted text", "", *lines]


def write_agentdojo_summary(out: Path, rows: Sequence[AgentDojoRow]) -> Path:
    path = out / SUMMARY
    path.write_text("\n".join(summary_lines(rows)) + "\n", encoding="utf-8")
    return path
