"""Evals over your own tasks: ``tooluse eval FILE`` and ``tooluse bench tasks``, end to end.

The finance example and the built-in everyday suite pass whole under the
oracle, in the json and code conventions; a wrong answer fails each kind of
check, and a missing, wrong or forbidden call fails the calls check.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tooluse import Toolbox, tool
from tooluse.eval import (
    Case,
    Contains,
    Dataset,
    ExpectedCall,
    Number,
    Predicate,
    Regex,
    evaluate,
)
from tooluse.eval._checks import numbers_in
from tooluse.eval._suites import EVERYDAY_TASKS
from tooluse.models import ScriptedModel
from tooluse.sandbox import Sandbox
from tooluse.view import Catalog

ROOT = Path(__file__).resolve().parents[2]
TOOLUSE = Path(sys.executable).parent / "tooluse"
FINANCE = ROOT / "examples" / "finance" / "evals.yaml"


def tooluse(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLUSE), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200", "NO_COLOR": "1"},
    )


def _rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


# --- the oracle passes every task; the rows, summary and traces are the bench's ---------------


def test_the_finance_file_passes_whole_under_the_oracle_with_traces_the_viewer_reads(
    tmp_path: Path,
) -> None:
    proc = tooluse(
        "eval", str(FINANCE), "--tools", "examples.finance.tools:toolbox",
        "--out", str(tmp_path), "--traces",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = _rows(tmp_path)
    assert len(rows) == 20
    failed = [(r["entry_id"], r["convention"], r["detail"]) for r in rows if not r["correct"]]
    assert not failed
    assert {r["suite"] for r in rows} == {"finance"}
    assert {r["convention"] for r in rows} == {"json", "code"}
    assert all(r["precision"] == 1.0 and r["recall"] == 1.0 for r in rows)
    # The rent task checks no argument of its call: there is no field to be right.
    assert {
        r["entry_id"]: r["argument_accuracy"] for r in rows if r["argument_accuracy"] != 1.0
    } == {"rent-paid": None}
    assert "json: 10/10 passed" in proc.stderr and "code: 10/10 passed" in proc.stderr
    assert "rounds" in proc.stderr and "calls" in proc.stderr
    summary = (tmp_path / "summary.md").read_text()
    assert "| payments | json | 3 | 100.0% |" in summary
    # Every entry's trace is a run the viewer lists, with the calls the row counts.
    catalog = Catalog.of([tmp_path])
    assert len(catalog.benches) == 1
    by_path = {
        trace.path.relative_to(tmp_path / "traces"): trace for trace in catalog.traces.values()
    }
    for row in rows:
        trace = by_path[Path(row["convention"]) / f"{row['entry_id']}.jsonl"]
        trace.load()
        (run,) = trace.runs
        assert run.end is not None and run.end["status"] == "completed"
        assert run.calls == row["calls"]


def test_bench_tasks_is_thirty_and_more_everyday_tasks_all_passed_by_the_oracle(
    tmp_path: Path,
) -> None:
    dataset = Dataset.from_file(EVERYDAY_TASKS)
    assert len(dataset.cases) >= 30
    assert all(1 <= len(case.calls) <= 4 for case in dataset.cases)
    assert {len(case.calls) for case in dataset.cases} == {1, 2, 3, 4}
    assert len(dataset.toolbox()) == 12
    used = {call.tool for case in dataset.cases for call in case.calls}
    assert used == {t.name for t in dataset.toolbox()}
    proc = tooluse("bench", "tasks", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    rows = _rows(tmp_path)
    assert len(rows) == 2 * len(dataset.cases)
    failed = [(r["entry_id"], r["convention"], r["detail"]) for r in rows if not r["correct"]]
    assert not failed
    assert {r["suite"] for r in rows} == {"tasks"}
    # Rows carry a task's steps as its width, for the plot of accuracy against it.
    assert {r["width"] for r in rows} == {1, 2, 3, 4}


def test_bench_tasks_with_tool_examples_shows_them_and_the_oracle_still_passes_all(
    tmp_path: Path,
) -> None:
    from tooluse.eval._everyday import EXAMPLES, toolbox, toolbox_with_examples

    # Only the variant has examples, every tool has some, and none is a task's call.
    assert all(not t.examples for t in toolbox)
    assert all(t.examples for t in toolbox_with_examples)
    assert set(EXAMPLES) == set(toolbox.names)
    dataset = Dataset.from_file(EVERYDAY_TASKS)
    task_calls = {
        (call.tool, json.dumps(call.arguments, sort_keys=True))
        for case in dataset.cases
        for call in case.calls
    }
    answers = [c for case in dataset.cases for c in case.checks if isinstance(c, Number)]
    for t in toolbox_with_examples:
        for example in t.examples:
            assert (t.name, json.dumps(dict(example.arguments), sort_keys=True)) not in task_calls
            # No number in an example's result passes a task's number check.
            for value in numbers_in(json.dumps(example.result)):
                assert not [c for c in answers if abs(value - c.value) <= c.tolerance], value
    proc = tooluse(
        "bench", "tasks", "--tool-examples", "--conventions", "json,code",
        "--out", str(tmp_path / "shown"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    shown = _rows(tmp_path / "shown")
    assert len(shown) == 2 * len(dataset.cases)
    failed = [(r["entry_id"], r["convention"], r["detail"]) for r in shown if not r["correct"]]
    assert not failed
    # The switch changes what the model is sent: the same first task costs more input.
    plain = tooluse(
        "bench", "tasks", "--conventions", "json,code", "--categories", "currency",
        "--limit", "1", "--out", str(tmp_path / "plain"),
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    first = {r["convention"]: r["input_tokens"] for r in _rows(tmp_path / "plain")}
    with_examples = {
        r["convention"]: r["input_tokens"] for r in shown if r["entry_id"] == "currency-usd-eur"
    }
    assert with_examples["json"] > first["json"]
    assert with_examples["code"] > first["code"]


def test_a_wrong_answer_from_a_scripted_model_fails_through_the_cli(tmp_path: Path) -> None:
    replies = tmp_path / "replies.jsonl"
    call = {"id": "c1", "type": "function",
            "function": {"name": "balance", "arguments": '{"account": "checking"}'}}  # fmt: skip
    replies.write_text(
        json.dumps({"tool_calls": [call]}) + "\n" + json.dumps({"content": "You have 1,000 USD."})
    )
    proc = tooluse(
        "eval", str(FINANCE), "--tools", "examples.finance.tools:toolbox",
        "--out", str(tmp_path / "out"), "--model", f"scripted:{replies}",
        "--conventions", "json", "--limit", "1", "--categories", "balances",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (row,) = _rows(tmp_path / "out")
    assert row["entry_id"] == "checking-balance" and not row["correct"]
    assert row["recall"] == 1.0 and row["argument_accuracy"] == 1.0
    assert row["detail"] == "the answer has no number 1250 ± 0.005 (numbers: 1000)"
    assert "json: 0/1 passed" in proc.stderr


# --- each check, and the calls check, fail a wrong run ------------------------------------


@tool
def lookup(city: str, unit: str = "celsius") -> dict[str, Any]:
    """Return a city's temperature.

    Args:
        city: The city
        unit: celsius or fahrenheit
    """
    return {"city": city, "temperature": 18.0, "unit": unit}


@tool(side_effects=True)
def book(city: str) -> str:
    """Book a trip to a city.

    Args:
        city: The city
    """
    return f"booked {city}"


TOOLS = Toolbox([lookup, book])


def answers_politely(answer: str) -> bool:
    return answer.startswith("Dear")


def looked_up_once(answer: str, result: Any) -> bool:
    return len(result.calls) == 1


def says_maybe(answer: str) -> Any:
    return "maybe"


def breaks(answer: str) -> bool:
    raise RuntimeError("no good")


def _case(*checks: Any, forbid: tuple[str, ...] = ()) -> Dataset:
    case = Case(
        prompt="How warm is Paris?",
        id="paris",
        calls=(ExpectedCall("lookup", {"city": "Paris"}),),
        checks=checks,
        forbid=forbid,
    )
    return Dataset("unit", (case,), TOOLS)


def _model(calls: list[dict[str, Any]], answer: str) -> ScriptedModel:
    tool_calls = [
        {"id": f"c{i}", "type": "function",
         "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
        for i, c in enumerate(calls)
    ]  # fmt: skip
    replies: list[dict[str, Any]] = [{"tool_calls": tool_calls}] if calls else []
    return ScriptedModel([*replies, {"content": answer}])


async def _row(dataset: Dataset, model: ScriptedModel) -> Any:
    (task,) = dataset.tasks()
    return await evaluate(task, "json", model=model)


PARIS = [{"name": "lookup", "arguments": {"city": "paris "}}]

CHECKS = [
    (Contains(("18", "Paris")), "It is 18 degrees in Paris.", "It is 18 degrees.",
     "the answer lacks 'Paris'"),
    (Contains(("PARIS",), case_sensitive=True), "PARIS: 18", "Paris: 18",
     "the answer lacks 'PARIS'"),
    (Regex(r"\b18 ?°?C\b"), "Paris: 18 °C", "Paris: 18 F",
     "the answer does not match /\\b18 ?°?C\\b/"),
    (Number(64.4, tolerance=0.05), "Paris is at 64.42 °F", "Paris is at 64.6 °F",
     "the answer has no number 64.4 ± 0.05 (numbers: 64.6)"),
    (Number(1250), "You hold 1,250.00 USD", "You hold 1,205.00 USD",
     "the answer has no number 1250 (numbers: 1205)"),
    (Predicate(f"{__name__}:answers_politely"), "Dear user, 18.", "18.",
     f"predicate {__name__}:answers_politely returned False"),
]  # fmt: skip


@pytest.mark.parametrize(("check", "right", "wrong", "why"), CHECKS, ids=lambda v: str(v)[:30])
async def test_each_check_passes_the_right_answer_and_fails_a_wrong_one(
    check: Any, right: str, wrong: str, why: str
) -> None:
    dataset = _case(check)
    good = await _row(dataset, _model(PARIS, right))
    assert good.correct, good.detail
    bad = await _row(dataset, _model(PARIS, wrong))
    assert not bad.correct
    assert bad.detail == why


async def test_a_predicate_is_given_the_run_result_when_it_takes_two_arguments() -> None:
    dataset = _case(Predicate(f"{__name__}:looked_up_once"))
    assert (await _row(dataset, _model(PARIS, "18"))).correct
    twice = [*PARIS, {"name": "lookup", "arguments": {"city": "Lyon"}}]
    row = await _row(dataset, _model(twice, "18"))
    assert not row.correct
    assert row.detail == f"predicate {__name__}:looked_up_once returned False"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("says_maybe", "returned 'maybe', not True or False"),
        ("breaks", "raised RuntimeError: no good"),
    ],
)
async def test_a_predicate_that_misbehaves_fails_its_check_and_says_how(
    name: str, why: str
) -> None:
    row = await _row(_case(Predicate(f"{__name__}:{name}")), _model(PARIS, "18"))
    assert not row.correct and row.error is None
    assert row.detail == f"predicate {__name__}:{name} {why}"


async def test_calls_are_checked_by_tool_and_listed_arguments() -> None:
    dataset = _case(Contains(("18",)), forbid=("book",))
    # Strings compare ignoring case and spaces; an argument the case does not list is free.
    free = [{"name": "lookup", "arguments": {"city": " PARIS", "unit": "celsius"}}]
    right = await _row(dataset, _model(free, "18"))
    assert right.correct and right.argument_accuracy == 1.0
    wrong_city = await _row(
        dataset, _model([{"name": "lookup", "arguments": {"city": "Lyon"}}], "18")
    )
    assert not wrong_city.correct
    assert wrong_city.detail == "no call lookup(city='Paris')"
    assert wrong_city.recall == 1.0 and wrong_city.argument_accuracy == 0.0
    none = await _row(dataset, _model([], "18"))
    assert not none.correct and none.detail == "no call lookup(city='Paris')"
    assert none.recall == 0.0
    booked = [*PARIS, {"name": "book", "arguments": {"city": "Paris"}}]
    row = await _row(dataset, _model(booked, "18"))
    assert not row.correct
    assert row.detail == "called book, which the task forbids"
    assert row.precision == 0.5


async def test_an_unchecked_argument_is_sent_by_the_oracle_and_free_for_the_model(
    sandbox: Sandbox,
) -> None:
    case = Case(
        prompt="How warm is Paris in Fahrenheit?",
        id="f",
        calls=(
            ExpectedCall("lookup", {"city": "Paris", "unit": "fahrenheit"}, frozenset({"unit"})),
        ),
        checks=(Number(18),),
    )
    (task,) = Dataset("unit", (case,), TOOLS).tasks()
    for convention in ("json", "code"):
        oracle = await evaluate(task, convention, sandbox=sandbox)
        assert oracle.correct, oracle.detail
    row = await evaluate(
        task, "json", model=_model([{"name": "lookup", "arguments": {"city": "Paris"}}], "18")
    )
    assert row.correct, row.detail


async def test_without_a_reference_answer_the_oracle_writes_what_the_checks_ask() -> None:
    (task,) = _case(Contains(("Paris",)), Number(18)).tasks()
    row = await evaluate(task, "json")
    assert row.correct, row.detail
    assert row.answer == "Paris 18"


# --- the everyday suite's own checks ------------------------------------------------------------


def test_a_time_of_day_is_accepted_in_either_clock_and_either_case() -> None:
    # 17:30 is also "5:30 PM" (or "pm", "p.m."): a check that read only lower case
    # failed `time-london-mumbai`'s right answer, "The time in Mumbai is 5:30 PM".
    cases = {case.id: case for case in Dataset.from_file(EVERYDAY_TASKS).cases}
    times = {
        "time-london-mumbai": ("17:30", "5:30", "PM"),
        "time-new-york-paris": ("20:30", "8:30", "PM"),
        "time-london-tokyo": ("18:00", "6", "PM"),
        "calendar-free-hour": ("11:00", "11", "AM"),
        "calendar-dentist": ("11:00", "11", "AM"),
    }
    for case_id, (clock, twelve, half) in times.items():
        (check,) = [c for c in cases[case_id].checks if isinstance(c, Regex)]
        lower = half.lower()
        dotted = f"{lower[0]}.{lower[1]}."
        for said in (
            clock,
            f"{twelve} {half}",
            f"{twelve} {lower}",
            f"{twelve}{half}",
            f"{twelve} {dotted}",
        ):
            assert re.search(check.pattern, f"It is {said} there."), (case_id, said)
        assert not re.search(check.pattern, "It is 3:10 there."), case_id
