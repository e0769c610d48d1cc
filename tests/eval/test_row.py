"""Results rows: a dataclass that reads back what every version of the harness wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tooluse import UsageError
from tooluse.eval import Bench, BenchConfig, BenchDataError, Row, SuiteOptions, evaluate, read_rows
from tooluse.eval._report import aggregate, render_summary
from tooluse.eval.agentdojo._row import AgentDojoRow
from tooluse.eval.bfcl import bfcl_tasks

# A row as the first version of the harness wrote it: no `unparsed`, no share.
FIRST_VERSION = {
    "suite": "chain", "entry_id": "chain_2", "category": "chain", "width": 2,
    "convention": "json", "model": "oracle", "correct": True, "status": "completed",
    "error": None, "detail": None, "precision": 1.0, "recall": 1.0, "argument_accuracy": 1.0,
    "expected_calls": 2, "calls": 2, "rejected": 0, "rounds": 3, "turns": 1,
    "input_tokens": 900, "output_tokens": 60, "peak_input_tokens": 400,
    "token_source": "o200k", "wall_s": 0.01, "answer": "7",
}  # fmt: skip


def test_rows_written_by_earlier_versions_load_and_are_not_run_again(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    later = {**FIRST_VERSION, "entry_id": "chain_3", "width": 3, "a_key_from_the_future": 1}
    lines = [json.dumps(FIRST_VERSION), json.dumps(later), '{"suite": "chain"}', '{"entry_id"']
    results.write_text("\n".join(lines) + "\n")

    rows = read_rows(results)
    assert [r.key for r in rows] == [
        ("chain", "chain_2", "json", "oracle"),
        ("chain", "chain_3", "json", "oracle"),
    ]
    assert rows[0].unparsed == 0 and rows[0].schema_valid_share is None
    assert rows[0].input_tokens == 900 and rows[0].correct

    config = BenchConfig("chain", out=tmp_path, conventions=("json",))
    pending = Bench(config).pending(Bench(config).tasks())
    assert ("chain_2", "json") not in {(t.id, c) for t, c in pending}
    assert ("chain_3", "json") not in {(t.id, c) for t, c in pending}


def test_a_row_round_trips_through_json(tmp_path: Path) -> None:
    config = BenchConfig("chain", out=tmp_path, options=SuiteOptions(widths=(2,)))
    (written, _) = Bench(config).run()
    (line, _) = (tmp_path / "results.jsonl").read_text().splitlines()
    assert Row.from_json(json.loads(line)) == written


def test_a_line_without_its_identity_is_not_a_row() -> None:
    with pytest.raises(ValueError, match="no entry_id, model"):
        Row.from_json({"suite": "chain", "convention": "json"})


def test_bench_data_errors_are_usage_errors() -> None:
    assert issubclass(BenchDataError, UsageError)


async def test_live_relevance_has_no_precision_and_is_not_pooled() -> None:
    (relevance,) = bfcl_tasks(["live_relevance"], limit=1)
    (simple,) = bfcl_tasks(["simple_python"], limit=1)
    relevant = await evaluate(relevance, "json")
    assert relevant.correct and relevant.calls >= 1
    assert relevant.precision is None
    scored = await evaluate(simple, "json")
    assert aggregate([relevant, scored]).precision == (1.0, 1)


def test_the_summary_names_a_failure_by_the_scorer_s_reason_and_the_run_s_ending() -> None:
    row = Row(
        suite="bfcl", entry_id="simple_python_3", category="simple_python",
        convention="json", model="m", status="max_rounds",
        error="no final answer after 1 rounds",
        detail="value_error: Invalid value for parameter 'radius': 5. Expected one of [10].",
    )  # fmt: skip
    summary = render_summary([row])
    assert (
        "- `simple_python_3` (json, max_rounds): value_error: Invalid value for parameter "
        "'radius': 5. Expected one of [10]. — no final answer after 1 rounds"
    ) in summary


DATA = Path(__file__).resolve().parents[1] / "data"


def saved_lines(name: str) -> list[dict[str, Any]]:
    """Rows as this release wrote them before rows carried a version (see tests/data)."""
    return [json.loads(line) for line in (DATA / name).read_text().splitlines()]


def test_rows_written_before_rows_had_a_version_load_and_are_not_run_again(
    tmp_path: Path,
) -> None:
    (tmp_path / "results.jsonl").write_text((DATA / "eval_row_v0.jsonl").read_text())
    rows = read_rows(tmp_path / "results.jsonl")
    assert [r.key for r in rows] == [
        ("chain", "chain_2", "json", "oracle"),
        ("chain", "chain_2", "code", "oracle"),
    ]
    assert rows[0].correct and rows[0].schema_valid_share == 1.0
    assert [r.to_json() for r in rows] == [
        {"v": 1, **line} for line in saved_lines("eval_row_v0.jsonl")
    ]
    config = BenchConfig("chain", out=tmp_path, options=SuiteOptions(widths=(2,)))
    assert Bench(config).pending(Bench(config).tasks()) == []


def test_a_row_carries_its_version(tmp_path: Path) -> None:
    config = BenchConfig(
        "chain", out=tmp_path, conventions=("json",), options=SuiteOptions(widths=(2,))
    )
    Bench(config).run()
    (line,) = (tmp_path / "results.jsonl").read_text().splitlines()
    assert json.loads(line)["v"] == 1


def test_a_row_in_an_unknown_version_is_refused_by_name_not_skipped(tmp_path: Path) -> None:
    (first, second) = saved_lines("eval_row_v0.jsonl")
    with pytest.raises(UsageError) as refused:
        Row.from_json({**first, "v": 99})
    assert "version 99" in str(refused.value) and "reads versions 0, 1" in str(refused.value)
    # In a results file it is refused too: skipped, the entry would be run again.
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps(first) + "\n" + json.dumps({**second, "v": 99}) + "\n")
    with pytest.raises(UsageError, match="version 99"):
        read_rows(results)


def test_a_row_with_a_field_that_is_not_one_is_not_a_row(tmp_path: Path) -> None:
    (first, second) = saved_lines("eval_row_v0.jsonl")
    with pytest.raises(ValueError, match="width"):
        Row.from_json({**first, "width": "wide"})
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps(first) + "\n" + json.dumps({**second, "calls": "many"}) + "\n")
    assert [r.key for r in read_rows(results)] == [("chain", "chain_2", "json", "oracle")]


def test_an_agentdojo_row_written_before_rows_had_a_version_loads() -> None:
    (line,) = saved_lines("agentdojo_row_v0.jsonl")
    row = AgentDojoRow.from_json(line)
    # Its `version` is AgentDojo's, the benchmark's; the row's own is `v`.
    assert row.version == "v1.2.1" and row.denied == line["denied"]
    assert row.to_json() == {"v": 1, **line}
    assert AgentDojoRow.from_json(json.loads(json.dumps(row.to_json()))) == row
    with pytest.raises(UsageError, match="version 99"):
        AgentDojoRow.from_json({**line, "v": 99})
