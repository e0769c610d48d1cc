"""The auto convention: json, code or plan, chosen per run from the cost profile and the task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tooluse import Agent, Expect, Toolbox, tool
from tooluse.cli import app
from tooluse.conventions import AutoConvention, Profile
from tooluse.conventions._auto import ORACLE_PROFILE, Line, choose, task_shape
from tooluse.eval import Bench, BenchConfig, SuiteOptions
from tooluse.models import ScriptedModel

SKUS = [f"SKU-{i}" for i in range(40)]


def test_the_rule_follows_the_crossover_of_the_profiled_lines() -> None:
    # Listed items: json below N*, the cheaper script convention above it.
    assert choose(ORACLE_PROFILE, 5, "listed").convention == "json"
    assert choose(ORACLE_PROFILE, 40, "listed").convention == "plan"
    # A discovered list: json only while it is tiny.
    assert choose(ORACLE_PROFILE, 1, "discovered").convention == "json"
    assert choose(ORACLE_PROFILE, 10, "discovered").convention == "plan"
    # Unknown width: the choice whose worst case is least bad.
    unknown = choose(ORACLE_PROFILE, None, None)
    assert unknown.convention == "plan" and "width unknown" in unknown.reason


def test_a_convention_far_less_accurate_is_never_chosen() -> None:
    cheap_but_wrong = Profile(
        "m",
        {"listed": {"json": Line(100, 1), "code": Line(900, 1), "plan": Line(50, 1)}},
        accuracy={"json": 0.9, "code": 0.92, "plan": 0.6},
    )
    assert choose(cheap_but_wrong, 10, "listed").convention == "json"


def test_the_shape_comes_from_the_expectations_and_the_task() -> None:
    listed = f"Check {', '.join(SKUS)}"
    expect = [Expect(tool="get_stock", argument="sku", values=SKUS)]
    assert task_shape(listed, expect) == (40, "listed")
    assert task_shape("Check every garden product", expect) == (40, "discovered")
    assert task_shape("anything", []) == (None, None)


def stock_tools() -> Toolbox:
    @tool
    def get_stock(sku: str) -> int:
        """Units in stock.

        Args:
            sku: the product's SKU
        """
        return len(sku)

    return Toolbox([get_stock])


def test_an_agent_on_auto_runs_the_chosen_convention_and_says_why() -> None:
    events: list[dict[str, Any]] = []
    plan = "```plan\nstock = [get_stock(sku=s) for s in " + repr(SKUS) + "]\nt = sum(stock)\n```"
    with Agent(
        ScriptedModel([{"content": plan}, {"content": "done"}]),
        stock_tools(),
        convention="auto",
        on_event=events.append,
    ) as agent:
        result = agent.run(
            f"Total stock of {', '.join(SKUS)}?",
            expect=Expect(tool="get_stock", argument="sku", values=SKUS),
        )
    assert result.status == "completed" and result.convention == "plan"
    assert len(result.calls) == len(SKUS)
    start = events[0]
    assert start["convention"] == "plan" and "width 40, listed" in start["chosen_by"]


def test_a_measured_profile_is_stored_and_then_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLUSE_PROFILES", str(tmp_path / "profiles"))
    out = tmp_path / "cost"
    result = CliRunner().invoke(
        app,
        ["bench", "costmodel", "--conventions", "json,code,plan", "--widths", "1,5,20",
         "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    stored = json.loads((tmp_path / "profiles" / "oracle.json").read_text())
    assert stored == json.loads((out / "profile.json").read_text())
    assert set(stored["lines"]) == {"listed", "discovered"}
    # The auto convention reads it for that model: a profile that makes json dear wins.
    dear_json = {"json": Line(9e9, 0), "code": Line(1, 0), "plan": Line(2, 0)}
    profile = Profile("scripted", {"listed": dear_json, "discovered": dear_json})
    (tmp_path / "profiles" / "scripted.json").write_text(json.dumps(profile.to_dict()))
    chosen = AutoConvention().for_run("x", [Expect(calls=1)], model="scripted")
    assert chosen.name == "code"
    assert (chosen.chosen_by or "").startswith("auto (scripted)")


def test_the_oracle_on_auto_is_right_and_as_cheap_as_the_cheapest(tmp_path: Path) -> None:
    config = BenchConfig(
        suite="fanout",
        out=tmp_path,
        conventions=("json", "code", "plan", "auto"),
        options=SuiteOptions(widths=(1, 3, 10, 30, 60)),
    )
    rows = Bench(config).run()
    assert rows and all(r.correct for r in rows)
    tokens = {(r.category, r.width, r.convention): r.input_tokens for r in rows}
    for (category, width, convention), auto in tokens.items():
        if convention != "auto":
            continue
        cheapest = min(tokens[(category, width, c)] or 0 for c in ("json", "code", "plan"))
        assert auto is not None and auto <= 1.05 * cheapest, (category, width)
