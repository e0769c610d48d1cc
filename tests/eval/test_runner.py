"""The runner: one row per entry and convention, resumable, failures kept in their rows."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tooluse import Message, RunResult
from tooluse.eval import (
    Bench,
    BenchConfig,
    FanoutTask,
    Score,
    Setup,
    SuiteOptions,
    read_rows,
)
from tooluse.eval.bfcl._single_turn import data_dir
from tooluse.models import ScriptedModel

REQUIRED = {
    "suite",
    "entry_id",
    "convention",
    "correct",
    "input_tokens",
    "output_tokens",
    "calls",
    "rejected",
    "unparsed",
    "schema_valid_share",
}


class _ScorerCrashes(FanoutTask):
    def score(self, setup: Setup, runs: Sequence[RunResult]) -> Score:
        raise ZeroDivisionError("the scorer divided by zero")


def test_rows_are_written_and_a_rerun_skips_them(tmp_path: Path) -> None:
    config = BenchConfig("chain", out=tmp_path, options=SuiteOptions(widths=(2, 3)))
    first = Bench(config).run()
    assert len(first) == 4 and all(r.correct for r in first)
    rows = read_rows(tmp_path / "results.jsonl")
    assert len(rows) == 4
    assert all(set(r.to_json()) >= REQUIRED and r.wall_s > 0 and r.status for r in rows)

    started: list[tuple[int, int]] = []
    second = Bench(config).run(on_start=lambda pending, total: started.append((pending, total)))
    assert second == [] and started == [(0, 4)]

    wider = BenchConfig("chain", out=tmp_path, options=SuiteOptions(widths=(2, 3, 4)))
    third = Bench(wider).run()
    assert [(r.entry_id, r.convention) for r in third] == [
        ("chain_4", "json"),
        ("chain_4", "code"),
    ]
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 6

    # A convention added later runs on its own; the rows already there stay.
    texts = BenchConfig(
        "chain",
        out=tmp_path,
        conventions=("json", "code", "text"),
        options=SuiteOptions(widths=(2, 3, 4)),
    )
    fourth = Bench(texts).run()
    assert [(r.entry_id, r.convention) for r in fourth] == [
        ("chain_2", "text"),
        ("chain_3", "text"),
        ("chain_4", "text"),
    ]
    assert all(r.correct and r.schema_valid_share == 1.0 for r in fourth)


def test_a_crashing_scorer_is_recorded_in_its_row_and_the_run_goes_on(tmp_path: Path) -> None:
    tasks = [FanoutTask("listed", 2), _ScorerCrashes("listed", 3), FanoutTask("listed", 4)]
    config = BenchConfig("fanout", out=tmp_path, conventions=("json",))
    rows = Bench(config, tasks).run()
    by_id = {r.entry_id: r for r in rows}
    assert by_id["fanout_listed_2"].correct and by_id["fanout_listed_4"].correct
    broken = by_id["fanout_listed_3"]
    assert not broken.correct
    assert broken.error == "scorer: ZeroDivisionError: the scorer divided by zero"
    # The run itself completed; its measurements are kept.
    assert broken.status == "completed" and broken.calls == 3 and broken.input_tokens > 0


def test_a_model_error_on_one_entry_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    def respond(messages: Sequence[Message]) -> dict[str, Any]:
        task = next(m.content or "" for m in messages if m.role == "user")
        if "each of these 3 products" in task:
            raise ConnectionResetError("the server went away")
        return {"content": "I did not check anything."}

    model = ScriptedModel(respond, name="flaky")
    tasks = [FanoutTask("listed", 2), FanoutTask("listed", 3), FanoutTask("listed", 4)]
    rows = Bench(
        BenchConfig("fanout", out=tmp_path, model=model, conventions=("json",)), tasks
    ).run()
    by_id = {r.entry_id: r for r in rows}
    assert by_id["fanout_listed_3"].status == "error"
    assert "the server went away" in by_id["fanout_listed_3"].error
    for other in ("fanout_listed_2", "fanout_listed_4"):
        assert by_id[other].status == "truncated" and by_id[other].model == "flaky"


def test_retry_errors_runs_only_the_failed_rows_again(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    config = BenchConfig(
        "chain", out=tmp_path, conventions=("json",), options=SuiteOptions(widths=(2, 3))
    )
    Bench(config).run()
    rows = read_rows(results)
    rows[0].status, rows[0].correct = "error", False
    results.write_text("".join(json.dumps(r.to_json()) + "\n" for r in rows) + "not json\n")
    retry = BenchConfig(
        "chain",
        out=tmp_path,
        conventions=("json",),
        options=SuiteOptions(widths=(2, 3)),
        retry_errors=True,
    )
    again = Bench(retry).run()
    assert [r.entry_id for r in again] == [rows[0].entry_id]
    assert all(r.correct for r in read_rows(results))


def _bad_bfcl_copy(root: Path) -> Path:
    """simple_python with a corrupt line and an entry without an answer; no parallel file."""
    source = data_dir()
    (root / "possible_answer").mkdir(parents=True)
    prompts = (source / "BFCL_v4_simple_python.json").read_text().splitlines()[:3]
    answers = (
        (source / "possible_answer" / "BFCL_v4_simple_python.json").read_text().splitlines()[:2]
    )
    (root / "BFCL_v4_simple_python.json").write_text(
        "\n".join([prompts[0], "{oops", *prompts[1:]]) + "\n"
    )
    (root / "possible_answer" / "BFCL_v4_simple_python.json").write_text("\n".join(answers) + "\n")
    shutil.copy(source / "BFCL_v4_irrelevance.json", root / "BFCL_v4_irrelevance.json")
    return root


def test_bad_data_is_recorded_in_the_rows_it_spoils(tmp_path: Path) -> None:
    data = _bad_bfcl_copy(tmp_path / "data")
    options = SuiteOptions(
        categories=("simple_python", "parallel", "irrelevance"), limit=2, data_dir=str(data)
    )
    rows = Bench(
        BenchConfig("bfcl", out=tmp_path / "out", conventions=("json",), options=options)
    ).run()
    by_id = {r.entry_id: r for r in rows}
    assert by_id["simple_python_0"].correct
    assert by_id["simple_python:line-2"].error.startswith(
        "data: BFCL_v4_simple_python.json:2: not JSON"
    )
    assert by_id["parallel:file"].error.startswith("data: cannot read")
    assert [r.correct for r in rows if r.category == "irrelevance"] == [True, True]
    assert all(r.status == "error" and not r.correct for r in rows if ":" in r.entry_id)
    # Limit 2 stopped at the corrupt line; the rest of the file runs on a rerun,
    # and the prompt without an answer gets a row of its own.
    everything = SuiteOptions(categories=("simple_python",), data_dir=str(data))
    config = BenchConfig("bfcl", out=tmp_path / "out", conventions=("json",), options=everything)
    more = {r.entry_id: r for r in Bench(config).run()}
    assert set(more) == {"simple_python_1", "simple_python_2"}
    assert more["simple_python_1"].correct
    assert more["simple_python_2"].error == "data: simple_python_2: no ground truth"


def test_the_runtime_does_not_import_the_eval_package() -> None:
    code = (
        "import sys, tooluse, tooluse.cli; "
        "print(any(m.startswith('tooluse.eval') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_object_tasks_need_one_worker(tmp_path: Path) -> None:
    from tooluse import UsageError

    with pytest.raises(UsageError, match="one worker"):
        Bench(BenchConfig("fanout", out=tmp_path, workers=2), [FanoutTask("listed", 2)])
    with pytest.raises(UsageError, match="conventions"):
        BenchConfig("fanout", out=tmp_path, conventions=("xml",))
    with pytest.raises(UsageError, match="cost model fits JSON against code"):
        BenchConfig("costmodel", out=tmp_path, conventions=("json", "code", "text"))


def _one_valid_one_invalid_one_unreadable(task: FanoutTask) -> ScriptedModel:
    return ScriptedModel(
        [
            {"content": f"[get_stock(sku={task.catalog.skus[0]!r})]"},
            # No sku: the dispatcher refuses it.
            {"content": "[get_stock()]"},
            # A bare name is no literal: the reply is sent back, no call is made.
            {"content": "[get_stock(sku=OUT-1)]"},
            {"content": "I could not finish."},
        ],
        name="sloppy",
    )


def test_schema_valid_share_counts_unreadable_replies(tmp_path: Path) -> None:
    from tooluse.eval import write_summary

    task = FanoutTask("listed", 2)
    model = _one_valid_one_invalid_one_unreadable(task)
    config = BenchConfig("fanout", out=tmp_path, model=model, conventions=("text",))
    (row,) = Bench(config, [task]).run()
    assert (row.calls, row.rejected, row.unparsed) == (1, 1, 1)
    assert row.schema_valid_share == pytest.approx(1 / 3)
    assert row.rounds == 4 and not row.correct

    # A second entry whose one call is valid: the summary pools calls, 2 of 4.
    other = FanoutTask("listed", 1)
    valid = ScriptedModel(
        [{"content": f"[get_stock(sku={other.catalog.skus[0]!r})]"}, "Done."], name="sloppy"
    )
    Bench(BenchConfig("fanout", out=tmp_path, model=valid, conventions=("text",)), [other]).run()
    rows = read_rows(tmp_path / "results.jsonl")
    assert [r.schema_valid_share for r in rows] == [pytest.approx(1 / 3), 1.0]
    summary = write_summary(tmp_path, rows).read_text()
    assert "| accuracy | schema-valid (n) |" in summary
    assert "| listed | text | 2 | 0.0% | 50.0% (4) |" in summary
    assert "Schema-valid is the share of what the model emitted" in summary


def test_a_run_that_emits_nothing_has_no_schema_valid_share(tmp_path: Path) -> None:
    silent = ScriptedModel(lambda messages: {"content": "No idea."}, name="silent")
    config = BenchConfig("fanout", out=tmp_path, model=silent, conventions=("json", "text"))
    rows = Bench(config, [FanoutTask("listed", 2)]).run()
    assert [(r.calls, r.unparsed, r.schema_valid_share) for r in rows] == [
        (0, 0, None),
        (0, 0, None),
    ]


def test_the_summary_keeps_models_apart(tmp_path: Path) -> None:
    from tooluse.eval import write_summary

    tasks = [FanoutTask("listed", 2)]
    Bench(BenchConfig("fanout", out=tmp_path, conventions=("json",)), tasks).run()
    silent = ScriptedModel(lambda messages: {"content": "No idea."}, name="silent")
    Bench(BenchConfig("fanout", out=tmp_path, model=silent, conventions=("json",)), tasks).run()
    text = write_summary(tmp_path, read_rows(tmp_path / "results.jsonl")).read_text()
    assert "Model: oracle, silent. Rows: 2." in text
    assert "## fanout (oracle)" in text and "## fanout (silent)" in text
    oracle_part, silent_part = text.split("## fanout (silent)")
    assert "| listed | json | 1 | 100.0% |" in oracle_part.split("## fanout (oracle)")[1]
    assert "| listed | json | 1 | 0.0% |" in silent_part


def test_rows_name_a_call_policy_beside_the_model() -> None:
    from tooluse.eval import CallPolicy
    from tooluse.eval._runner import model_label

    assert model_label("local") == "local"
    assert model_label("local", CallPolicy()) == "local"
    assert model_label("local", CallPolicy("required", False)) == (
        "local tool_choice=required parallel_tool_calls=false"
    )
    assert model_label("oracle", CallPolicy(max_rounds=1)) == "oracle max_rounds=1"


def test_worker_processes_ask_a_hosted_model_for_every_entry(tmp_path: Path) -> None:
    from models._chat_server import ChatServer, Reply, completion

    server = ChatServer().start()
    server.fallback = Reply(body=completion("I cannot help with that."))
    try:
        config = BenchConfig(
            "bfcl",
            out=tmp_path,
            model="openai:test-model",
            base_url=server.base_url,
            options=SuiteOptions(categories=("simple_python",), limit=4),
            conventions=("json",),
            workers=2,
        )
        rows = Bench(config).run()
    finally:
        server.stop()
    # Each worker process runs entry after entry with one HTTP client.
    assert len(rows) == 4 and all(r.status == "completed" and r.error is None for r in rows)
    assert len(server.requests) == 4


def test_traces_keep_each_entrys_run_beside_the_results(tmp_path: Path) -> None:
    from tooluse.view import Catalog

    config = BenchConfig("chain", out=tmp_path, options=SuiteOptions(widths=(2, 3)), traces=True)
    rows = Bench(config).run()
    catalog = Catalog.of([tmp_path])
    assert [b.path for b in catalog.benches.values()] == [tmp_path]
    runs = {(r.file.path.parent.name, r.file.path.stem): r for r in catalog.runs()}
    assert set(runs) == {(row.convention, row.entry_id) for row in rows}
    for row in rows:
        run = runs[(row.convention, row.entry_id)]
        assert run.status == row.status == "completed"
        assert run.calls == row.calls and run.tokens == (row.input_tokens, row.output_tokens)

    # Without the option nothing but the results is written.
    plain = tmp_path / "plain"
    Bench(BenchConfig("chain", out=plain, options=SuiteOptions(widths=(2,)))).run()
    assert not (plain / "traces").exists()


def test_the_answer_check_runs_through_the_call_policy_and_rows_name_it(tmp_path: Path) -> None:
    import re

    from tooluse.eval import CallPolicy
    from tooluse.run._answercheck import NOTE_START

    def respond(messages: Sequence[Message]) -> dict[str, Any]:
        if (messages[-1].content or "").startswith(NOTE_START):
            return {"content": "I did not check anything."}
        task = next(m.content or "" for m in messages if m.role == "user")
        n = int(re.findall(r"\d+", task)[0])
        return {"content": f"{n} items is more than {n + 5} items."}

    model = ScriptedModel(respond, name="scripted")
    config = BenchConfig(
        "fanout",
        out=tmp_path,
        model=model,
        conventions=("json",),
        calls=CallPolicy(check_answers=True),
        traces=True,
    )
    [row] = Bench(config, [FanoutTask("listed", 2)]).run()
    assert row.model == "scripted check_answers" and row.rounds == 2
    trace = (tmp_path / "traces" / "json" / f"{row.entry_id}.jsonl").read_text()
    checks = [json.loads(line) for line in trace.splitlines() if '"answer_check"' in line]
    assert [c["outcome"] for c in checks] == ["noted", "corrected"]
