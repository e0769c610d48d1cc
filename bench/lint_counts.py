"""Tool-design findings, counted per principle and per rule, on the example tools, on
BFCL's functions and on AgentDojo's tools.

    python bench/lint_counts.py [--max-schema-tokens N] [--show RULE]

BFCL's single-turn Python functions (every category with a function list; each
distinct function once) and the multi-turn backends' methods are read with the
loader the BFCL suite uses, as raw-schema tools. AgentDojo's four suites (v1.2)
are read as the AgentDojo suite builds them, with the side effects its replay of
the ground truth measured (a tool whose call changed the environment).

The side-effect rule reads only names, so AgentDojo's measurement is its outside
check: with nothing declared, the tools whose names the linter says write are
compared with the tools whose observed calls changed the environment.
``--show RULE`` prints that rule's findings, to read what a count is made of.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples.seed_tools import toolbox as example_tools
from tooluse.eval.bfcl._single_turn import bfcl_tool, data_dir, read_jsonl
from tooluse.lint import DEFAULT_MAX_SCHEMA_TOKENS, Principle, lint
from tooluse.tools import Tool

SINGLE_TURN = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
)
MULTI_TURN = (
    "gorilla_file_system",
    "math_api",
    "message_api",
    "posting_api",
    "ticket_api",
    "trading_bot",
    "travel_booking",
    "vehicle_control",
)


def _distinct(functions: Iterator[dict[str, object]]) -> list[Tool]:
    seen: set[str] = set()
    tools: list[Tool] = []
    for function in functions:
        key = json.dumps(function, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        tools.append(bfcl_tool(function, "python"))
    return tools


def single_turn_functions(directory: Path) -> Iterator[dict[str, object]]:
    for category in SINGLE_TURN:
        for _, entry in read_jsonl(directory / f"BFCL_v4_{category}.json"):
            if isinstance(entry, dict):
                yield from entry.get("function", [])


def multi_turn_functions(directory: Path) -> Iterator[dict[str, object]]:
    for backend in MULTI_TURN:
        path = directory / "multi_turn_func_doc" / f"{backend}.json"
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                yield json.loads(line)


def agentdojo_tools() -> tuple[list[Tool], dict[str, bool], list[Tool]]:
    """The suites' tools (each name once) as measured, the measured side effects of
    those a ground truth calls, and the same tools with nothing declared."""
    from tooluse.eval.agentdojo._suites import load_suites
    from tooluse.eval.agentdojo._tools import build_toolbox, tool_facts

    measured: list[Tool] = []
    bare: list[Tool] = []
    changes: dict[str, bool] = {}
    for suite in load_suites(["workspace", "travel", "banking", "slack"]):
        facts = tool_facts(suite)
        undeclared = {t.name: t for t in build_toolbox(suite, None, None, annotate=lambda f: {})}
        for built in build_toolbox(suite, None, None):
            fact = facts[built.name]
            if fact.observed:
                changes[built.name] = changes.get(built.name, False) or fact.side_effects
            if built.name not in {t.name for t in measured}:
                measured.append(built)
                bare.append(undeclared[built.name])
    return measured, changes, bare


def side_effect_agreement(changes: dict[str, bool], bare: list[Tool]) -> dict[str, int]:
    said = {f.tool for f in lint(bare) if f.rule == "undeclared-writes"}
    return {
        "observed": len(changes),
        "writes_named_and_measured": sum(1 for n, c in changes.items() if c and n in said),
        "named_only": sum(1 for n, c in changes.items() if not c and n in said),
        "measured_only": sum(1 for n, c in changes.items() if c and n not in said),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-schema-tokens", type=int, default=DEFAULT_MAX_SCHEMA_TOKENS)
    parser.add_argument("--show", metavar="RULE", help="print the findings of this rule")
    args = parser.parse_args()
    directory = data_dir()
    sets = {
        "examples.seed_tools": list(example_tools),
        "bfcl single-turn (python)": _distinct(single_turn_functions(directory)),
        "bfcl multi-turn backends": _distinct(multi_turn_functions(directory)),
    }
    agreement: dict[str, int] | None = None
    try:
        measured, changes, bare = agentdojo_tools()
    except ImportError as exc:
        print(f"AgentDojo left out: {exc}")
    else:
        sets["agentdojo v1.2 (4 suites)"] = measured
        agreement = side_effect_agreement(changes, bare)
    rows = []
    principles = get_args(Principle)
    print(f"{'toolbox':28} {'tools':>6} {'flagged':>8} " + " ".join(f"{p:>14}" for p in principles))
    for label, tools in sets.items():
        # Tool by tool: BFCL holds several definitions under one name.
        per_tool = [lint([t], max_schema_tokens=args.max_schema_tokens) for t in tools]
        findings = [f for found in per_tool for f in found]
        flagged = sum(1 for found in per_tool if found)
        by_principle = Counter(f.principle for f in findings)
        print(
            f"{label:28} {len(tools):>6} {flagged:>8} "
            + " ".join(f"{by_principle.get(p, 0):>14}" for p in principles)
        )
        rows.append(
            {
                "toolbox": label,
                "tools": len(tools),
                "tools_flagged": flagged,
                "findings": len(findings),
                **{p: by_principle.get(p, 0) for p in principles},
                "rules": dict(Counter(f.rule for f in findings).most_common()),
            }
        )
        if args.show:
            for finding in findings:
                if finding.rule == args.show:
                    print(f"  {finding}")
    for r in rows:
        print(f"  {r['toolbox']}: {r['rules']}")
    if agreement is not None:
        print(
            "side effects, AgentDojo tools a ground truth calls ({observed}): the name says "
            "it writes and a call changed the environment {writes_named_and_measured}, "
            "the name only {named_only}, the change only {measured_only}".format(**agreement)
        )
    print(
        json.dumps(
            {
                "bench": "lint_counts",
                "max_schema_tokens": args.max_schema_tokens,
                "rows": rows,
                "agentdojo_side_effects": agreement,
            }
        )
    )


if __name__ == "__main__":
    main()
