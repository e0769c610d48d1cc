"""Example values in parameter descriptions: do they help or hurt a model on whole runs?

Runs `tooluse bench tasks` (the everyday tasks, whole runs checked on their calls
and answers) with one model and one or more conventions, over the same tools
described two ways:

* ``shipped``: the descriptions as the tools are written, with example values
  (``City name, e.g. 'Paris'``, ``The product's SKU, e.g. 'A100'``);
* ``plain``: the same descriptions with the example values taken out
  (``City name``, ``The product's SKU``);
* ``examples``: the plain descriptions, and example calls with their results given
  as ``@tool(examples=[...])`` (`tooluse.eval._everyday.EXAMPLES`), shown in each
  convention's own form.

Everything else (the tasks, the checks, the model, its system prompt) is the same,
so a task that passes one way and fails the other was changed by the examples.

    python bench/tool_descriptions.py --model local --conventions json \
        [--limit N] [--out out/descriptions]

Prints a table (pass rate per way and convention, and the tasks that changed) and
one JSON line.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from _compare import compare

from tooluse import Toolbox
from tooluse.eval import Bench, BenchConfig, SuiteOptions
from tooluse.eval._everyday import toolbox as everyday
from tooluse.eval._everyday import toolbox_with_examples

#: ", e.g. 'Paris'" (and "e.g. 42") at the end of a description, with what leads to it.
_EXAMPLE = re.compile(r"\s*[,;(]?\s*\be\.g\.?,?\s.*$")


def without_examples(text: str) -> str:
    """A description with its trailing example value taken out."""
    return _EXAMPLE.sub("", text).rstrip()


def _plain_schema(schema: Any) -> Any:
    if isinstance(schema, Mapping):
        return {
            key: without_examples(value)
            if key == "description" and isinstance(value, str)
            else _plain_schema(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [_plain_schema(item) for item in schema]
    return schema


def plain(tools: Toolbox) -> Toolbox:
    """The same tools, each parameter's description without its example value."""
    return Toolbox(
        [replace(t, parameters=_plain_schema(copy.deepcopy(t.parameters))) for t in tools]
    )


#: What `--tools` names for each way (None: the tools as shipped). This directory is on
#: the path of a benchmark run as ``python bench/NAME.py``.
plain_toolbox = plain(everyday)
examples_toolbox = plain(toolbox_with_examples)
WAYS = {
    "shipped": None,
    "plain": "tool_descriptions:plain_toolbox",
    "examples": "tool_descriptions:examples_toolbox",
}


def measure(
    model: str, conventions: tuple[str, ...], limit: int | None, out: Path, ways: list[str]
) -> dict[str, dict[str, dict[str, bool]]]:
    """``passed[way][convention][task id]``."""
    passed: dict[str, dict[str, dict[str, bool]]] = {}
    for way in ways:
        tools = WAYS[way]
        config = BenchConfig(
            "tasks",
            out=out / way,
            model=model,
            conventions=conventions,
            options=SuiteOptions(limit=limit, tools=tools),
            traces=True,
        )
        rows = Bench(config).run()
        by: dict[str, dict[str, bool]] = passed.setdefault(way, {})
        for row in rows:
            by.setdefault(row.convention, {})[row.entry_id] = bool(row.correct)
    return passed


def read_passed(out: Path) -> dict[str, dict[str, bool]]:
    """``passed[convention][task id]`` from the results of an earlier bench run."""
    by: dict[str, dict[str, bool]] = {}
    for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        by.setdefault(row["convention"], {})[row["entry_id"]] = bool(row["correct"])
    return by


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local", help="a model spec (default: local)")
    parser.add_argument("--conventions", default="json", help="comma-separated (default: json)")
    parser.add_argument("--limit", type=int, default=None, help="the first N tasks per category")
    parser.add_argument("--out", type=Path, default=Path("out/descriptions"))
    parser.add_argument(
        "--shipped-from",
        type=Path,
        default=None,
        help="take the shipped way's results from this earlier `tooluse bench tasks` run "
        "of the same model, instead of running it again",
    )
    args = parser.parse_args()
    conventions = tuple(args.conventions.split(","))

    ways = [w for w in WAYS if not (w == "shipped" and args.shipped_from)]
    passed = measure(args.model, conventions, args.limit, args.out, ways)
    if args.shipped_from:
        passed["shipped"] = read_passed(args.shipped_from)
    print(f"{args.model}, everyday tasks: example values in descriptions, none, or as examples=")
    summary = compare(passed, list(WAYS), conventions)
    print(json.dumps({"bench": "tool_descriptions", "model": args.model, "passed": summary}))


if __name__ == "__main__":
    main()
