"""Where the answer check would have noted an answer, over runs already traced.

The check (`Agent(check_answers=True)`) changes a run only where it notes its final
answer: up to that point the run is the same, and with greedy decoding a model
gives the same replies. So the runs of a bench written with ``--traces`` and the
check off tell exactly which of them the check would change, and whether each
note was right (the row failed) or a false alarm (the row passed).

    python bench/answer_check.py OUT [OUT ...]

OUT is a directory ``tooluse bench ... --traces --out OUT`` wrote. Prints one line
per note and a table per directory and convention, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tooluse.run._answercheck import contradiction, echo
from tooluse.run._unitcheck import unit_mismatch


def seen_in(trace: Path) -> tuple[str, list[str], list[tuple[str, Any]]]:
    """The run's final answer, the task and every result it saw, and the calls' results."""
    answer, seen = "", []
    results: list[tuple[str, Any]] = []
    for line in trace.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        kind = event.get("event")
        if kind == "run_start":
            seen.append(str(event.get("task", "")))
        elif kind == "call" and event.get("error") is None:
            seen.append(json.dumps(event.get("result")))
            results.append((str(event.get("name")), event.get("result")))
        elif kind == "script":
            seen.append(str(event.get("stdout") or ""))
        elif kind == "run_end":
            answer = str(event.get("answer") or "")
    return answer, seen, results


def scan(out: Path) -> dict[str, dict[str, Any]]:
    """Per convention: rows, notes, and the notes on rows that passed (false alarms)."""
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    table: dict[str, dict[str, Any]] = {}
    for row in rows:
        by = table.setdefault(row["convention"], {"rows": 0, "notes": [], "false_alarms": 0})
        by["rows"] += 1
        trace = out / "traces" / row["convention"] / f"{row['entry_id']}.jsonl"
        if not trace.is_file():
            continue
        answer, seen, results = seen_in(trace)
        found = (
            echo(answer, seen[0])
            or contradiction(answer, seen)
            or unit_mismatch(answer, seen[0], results)
        )
        if found is None:
            continue
        by["notes"].append(row["entry_id"])
        by["false_alarms"] += bool(row["correct"])
        verdict = "passed: a false alarm" if row["correct"] else "failed"
        print(f"{out} {row['convention']} {row['entry_id']} ({verdict}): {found.note}")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outs", type=Path, nargs="+", help="bench output directories")
    args = parser.parse_args()
    report: dict[str, Any] = {}
    print(f"{'runs':<32}{'convention':<12}{'rows':>6}{'noted':>7}{'false alarms':>14}")
    for out in args.outs:
        table = scan(out)
        report[str(out)] = table
        for convention, by in table.items():
            print(
                f"{out!s:<32}{convention:<12}{by['rows']:>6}{len(by['notes']):>7}"
                f"{by['false_alarms']:>14}"
            )
    print(json.dumps({"bench": "answer_check", "runs": report}))


if __name__ == "__main__":
    main()
