"""The auto convention: json, code or plan, chosen per run from the cost profile and the task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tooluse import Agent, Expect, Toolbox, UsageError, tool
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


GOOD_LINES = {"json": [171.1, 27.15], "code": [448.7, 17.16], "plan": [423.7, 17.16]}


def run_auto(profile: Any) -> None:
    """An agent on auto with `profile`, run to the end."""
    with Agent(
        ScriptedModel([{"content": "done"}]),
        stock_tools(),
        convention=AutoConvention(profile=profile),
    ) as agent:
        agent.run("Total stock of SKU-1?")


@pytest.mark.parametrize(
    ("profile", "words"),
    [
        ({"lines": []}, "lines must map each shape (listed, discovered)"),
        ({"lines": []}, "has no 'model'"),
        ({"model": "m", "lines": {}}, "lines is empty"),
        ({"model": "m", "lines": {"listd": GOOD_LINES}}, "unknown shape 'listd'"),
        ({"model": "m", "lines": {"listed": [1, 2]}}, "lines['listed'] must map each convention"),
        ({"model": "m", "lines": {"listed": {"jsn": [1, 2]}}}, "unknown convention 'jsn'"),
        ({"model": "m", "lines": {"listed": {"json": [1]}}}, "lines['listed']['json'] must be"),
        ({"model": "m", "lines": {"listed": {"json": ["a", 2]}}}, "two finite numbers"),
        (
            {"model": "m", "lines": {"listed": {"json": [1, 2]}, "discovered": {"code": [1, 2]}}},
            "no convention has lines for every shape",
        ),
        (
            {"model": "m", "lines": {"listed": GOOD_LINES}, "accuracy": {"json": "high"}},
            "accuracy['json'] must be a number from 0 to 1",
        ),
        ({"model": "m", "lines": {"listed": GOOD_LINES}, "accuracy": [1.0]}, "accuracy must map"),
        ([["json", 1, 2]], "a Profile or its dict form, not a list"),
    ],
)
def test_a_profile_of_the_wrong_shape_is_a_usage_error_that_says_what_is_wrong(
    profile: Any, words: str
) -> None:
    with pytest.raises(UsageError) as caught:
        run_auto(profile)
    assert words in str(caught.value)


def test_a_profile_object_of_the_wrong_shape_is_refused_when_it_is_made() -> None:
    with pytest.raises(UsageError, match=r"lines must map each shape"):
        Profile("m", [])  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"lines\['listed'\]\['json'\] must be a line"):
        Profile("m", {"listed": {"json": (1.0, 2.0)}})  # type: ignore[dict-item]
    with pytest.raises(UsageError, match="a Profile or its dict form"):
        AutoConvention(profile="oracle")  # type: ignore[arg-type]
    # Its dict form, as `tooluse bench costmodel` stores it, is read.
    assert AutoConvention(profile=ORACLE_PROFILE.to_dict()).profile == ORACLE_PROFILE


@pytest.mark.parametrize(
    ("stored", "words"),
    [
        ('{"model": "scripted", "lines": []}', "lines must map each shape"),
        ('{"lines": []}', "has no 'model'"),
        ("{not json", "is not JSON"),
        ('[["json", 1, 2]]', "it must be a JSON object"),
    ],
)
def test_a_stored_profile_of_the_wrong_shape_names_the_file_and_what_is_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stored: str, words: str
) -> None:
    monkeypatch.setenv("TOOLUSE_PROFILES", str(tmp_path))
    (tmp_path / "scripted.json").write_text(stored)
    with (
        Agent(ScriptedModel([{"content": "done"}]), stock_tools(), convention="auto") as agent,
        pytest.raises(UsageError) as caught,
    ):
        agent.run("Total stock of SKU-1?")
    message = str(caught.value)
    assert str(tmp_path / "scripted.json") in message and words in message
    assert "tooluse bench costmodel" in message
