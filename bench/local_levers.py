"""What the runtime's prompt-level levers do for a local model, on the everyday tasks.

Runs `tooluse bench tasks` (whole runs, checked on their calls and answers) with one
registered local model under several settings of what the runtime adds to its
prompt and loop, one after another in the same process:

* ``defaults``: the model as the registry sets it up (``--model local:NAME``);
* ``note``: the same, and a note after the last result of each round
  (`LocalModel(after_results=ANSWER_NOW)`);
* ``no-check``: the defaults without the answer check (``check_answers=False``);
* ``results-prompt``: the system prompt "call tools to get facts; once the results
  answer the question, reply in plain text" in place of the registry's, and no
  answer check;
* ``template``: no system prompt of ours, the chat template's own, and no check.

    python bench/local_levers.py [--model qwen2.5-coder-1.5b] [--levers defaults,note] \
        [--conventions json] [--limit N] [--out out/levers]

Prints a table (passed per lever and convention, and the tasks each lever changed
against the first) and one JSON line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from _compare import compare

from tooluse.eval import Bench, BenchConfig, SuiteOptions
from tooluse.models import LocalModel
from tooluse.models._chat_template import ANSWER_NOW

RESULTS_PROMPT = (
    "You are a helpful assistant. Call tools to get facts; once the results answer "
    "the question, reply to the user in plain text."
)
#: Each lever: the `LocalModel` settings it changes.
LEVERS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "note": {"after_results": ANSWER_NOW},
    "no-check": {"check_answers": False},
    "results-prompt": {"default_system": RESULTS_PROMPT, "check_answers": False},
    "template": {"default_system": "", "check_answers": False},
}


def measure(
    name: str, levers: list[str], conventions: tuple[str, ...], limit: int | None, out: Path
) -> dict[str, dict[str, dict[str, bool]]]:
    """``passed[lever][convention][task id]``."""
    passed: dict[str, dict[str, dict[str, bool]]] = {}
    for lever in levers:
        model = LocalModel(name, **LEVERS[lever])
        config = BenchConfig(
            "tasks",
            out=out / lever,
            model=model,
            conventions=conventions,
            options=SuiteOptions(limit=limit),
            traces=True,
        )
        by: dict[str, dict[str, bool]] = passed.setdefault(lever, {})
        for row in Bench(config).run():
            by.setdefault(row.convention, {})[row.entry_id] = bool(row.correct)
    return passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="a registered local model")
    parser.add_argument("--levers", default="defaults,note", help=", ".join(LEVERS))
    parser.add_argument("--conventions", default="json", help="comma-separated (default: json)")
    parser.add_argument("--limit", type=int, default=None, help="the first N tasks per category")
    parser.add_argument("--out", type=Path, default=Path("out/levers"))
    args = parser.parse_args()
    levers = args.levers.split(",")
    unknown = [lever for lever in levers if lever not in LEVERS]
    if unknown:
        parser.error(f"unknown levers {unknown}; choose from {', '.join(LEVERS)}")
    conventions = tuple(args.conventions.split(","))

    passed = measure(args.model, levers, conventions, args.limit, args.out)
    print(f"{args.model}, everyday tasks, passed per lever")
    summary = compare(passed, levers, conventions, width=16)
    print(json.dumps({"bench": "local_levers", "model": args.model, "passed": summary}))


if __name__ == "__main__":
    main()
