"""Fan-out, chain and context-rot suites: the oracle passes them all; short runs are caught."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tooluse import Message
from tooluse.eval import ChainTask, FanoutTask, SuiteOptions, Task, build_tasks, evaluate
from tooluse.eval._rot import ROT_LEVELS, RotLevel, RotTask
from tooluse.eval._runner import CONVENTIONS
from tooluse.models import ScriptedModel
from tooluse.sandbox import Sandbox


def _rows(tasks: Sequence[Task], sandbox: Sandbox, model: Any = "oracle") -> list[dict[str, Any]]:
    async def run() -> list[dict[str, Any]]:
        return [
            await evaluate(task, convention, model=model, sandbox=sandbox)
            for task in tasks
            for convention in CONVENTIONS
        ]

    return asyncio.run(run())


def _assert_all_pass(rows: Sequence[dict[str, Any]]) -> None:
    failed = [(r.entry_id, r.convention, r.error or r.detail) for r in rows if not r.correct]
    assert not failed
    assert {r.convention for r in rows} == set(CONVENTIONS)
    for row in rows:
        assert row.status == "completed"
        assert row.precision == row.recall == row.argument_accuracy == 1.0
        assert row.token_source == "o200k" and row.input_tokens > 0
        assert row.rejected == row.unparsed == 0 and row.schema_valid_share == 1.0


def test_oracle_passes_fanout_in_both_variants(sandbox: Sandbox) -> None:
    tasks = build_tasks("fanout", SuiteOptions(widths=(1, 7, 40, 150)))
    assert len(tasks) == 8
    rows = _rows(tasks, sandbox)
    _assert_all_pass(rows)
    by_key = {(r.entry_id, r.convention): r for r in rows}
    # JSON and text send all independent calls at once: three requests whatever N is.
    assert by_key[("fanout_discovered_150", "json")].rounds == 3
    assert by_key[("fanout_discovered_150", "text")].rounds == 3
    assert by_key[("fanout_discovered_150", "code")].rounds == 2
    assert by_key[("fanout_discovered_150", "json")].calls == 151
    assert by_key[("fanout_discovered_150", "text")].calls == 151


def test_oracle_passes_chains_of_every_length(sandbox: Sandbox) -> None:
    tasks = build_tasks("chain", SuiteOptions(widths=(2, 5, 12, 20)))
    rows = _rows(tasks, sandbox)
    _assert_all_pass(rows)
    json_rows = {r.width: r for r in rows if r.convention == "json"}
    text_rows = {r.width: r for r in rows if r.convention == "text"}
    code_rows = {r.width: r for r in rows if r.convention == "code"}
    # Dependent calls: one request per link in JSON and text, one script in code.
    assert json_rows[20].rounds == text_rows[20].rounds == 21
    assert code_rows[20].rounds == 2
    assert json_rows[20].calls == text_rows[20].calls == code_rows[20].calls == 20


def test_oracle_passes_context_rot_at_every_level(sandbox: Sandbox) -> None:
    levels = [*ROT_LEVELS[:2], RotLevel("light", 800, 5)]
    tasks: list[Task] = [
        RotTask(base, level)
        for level in levels
        for base in (FanoutTask("discovered", 6), ChainTask(3))
    ]
    rows = _rows(tasks, sandbox)
    _assert_all_pass(rows)
    clean = {
        r.entry_id.split("_", 2)[2]: r
        for r in rows
        if r.category.startswith("clean") and r.convention == "json"
    }
    noisy = {
        r.entry_id.split("_", 2)[2]: r
        for r in rows
        if r.category.startswith("noisy") and r.convention == "json"
    }
    for base, row in clean.items():
        # Every request repeats the flood and the decoy schemas.
        assert noisy[base].input_tokens > row.input_tokens + 4_000 * row.rounds


def test_rot_keeps_the_task_and_adds_decoys_and_material() -> None:
    base = FanoutTask("discovered", 5)
    setup = RotTask(base, RotLevel("noisy", 2_000, 20)).setup()
    (turn,) = setup.turns
    assert turn.text.endswith(base.text)
    assert len(turn.text) > 4 * 2_000 // 2
    assert len(turn.tools) == 2 + 20
    assert {"list_products", "get_stock"} <= set(turn.tools.names)
    assert len(build_tasks("rot", SuiteOptions())) == 12


def test_generated_data_is_stable_and_nested() -> None:
    small, large = FanoutTask("discovered", 10), FanoutTask("discovered", 40)
    assert large.catalog.skus[:10] == small.catalog.skus
    assert len(set(large.catalog.skus)) == 40
    assert FanoutTask("listed", 10).catalog == FanoutTask("listed", 10).catalog
    chain = ChainTask(15)
    assert len(chain.emails) == 16 and len(set(chain.emails)) == 16


# --- short runs -----------------------------------------------------------------------


def _call(index: int, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": f"c{index}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _dropping_model(task: FanoutTask, keep: int) -> ScriptedModel:
    """Checks only the first `keep` products, then answers fluently over those."""
    skus = task.catalog.skus[:keep]
    subtotal = sum(task.catalog.stock[s] for s in skus)
    return ScriptedModel(
        [
            {"tool_calls": [_call(0, "list_products", {"category": task.catalog.category})]},
            {"tool_calls": [_call(i + 1, "get_stock", {"sku": s}) for i, s in enumerate(skus)]},
            {"content": f"All products together have {subtotal} units in stock."},
        ]
    )


def test_a_model_that_silently_drops_items_is_flagged_truncated() -> None:
    task = FanoutTask("discovered", 30)
    row = asyncio.run(evaluate(task, "json", model=_dropping_model(task, 21)))
    assert row.status == "truncated"
    assert not row.correct
    assert "9 of 30 expected sku values were never covered" in row.error
    assert row.recall == pytest.approx(22 / 31)
    assert row.precision == 1.0 and row.argument_accuracy == 1.0


def test_a_complete_run_with_a_wrong_total_fails() -> None:
    task = FanoutTask("discovered", 4)
    skus = task.catalog.skus
    model = ScriptedModel(
        [
            {"tool_calls": [_call(0, "list_products", {"category": task.catalog.category})]},
            {"tool_calls": [_call(i + 1, "get_stock", {"sku": s}) for i, s in enumerate(skus)]},
            {"content": f"The total is {task.catalog.total + 1}."},
        ]
    )
    row = asyncio.run(evaluate(task, "json", model=model))
    assert row.status == "completed"
    assert not row.correct
    assert "does not state the total" in row.detail


def test_a_chain_answer_naming_the_wrong_person_fails() -> None:
    task = ChainTask(2)
    first, second, third = task.emails

    def respond(messages: Sequence[Message]) -> dict[str, Any]:
        calls = sum(1 for m in messages if m.role == "tool")
        if calls == 0:
            return {"tool_calls": [_call(0, "get_employee", {"email": first})]}
        return {"content": f"It is {second}."}

    row = asyncio.run(evaluate(task, "json", model=ScriptedModel(respond)))
    assert not row.correct and third in row.detail
    assert row.recall == 0.5


def test_fanout_with_large_records_passes_with_handles_and_without(sandbox: Sandbox) -> None:
    with_handles = FanoutTask("discovered", 12, record_chars=2_000, result_limit=1_000)
    whole = FanoutTask("discovered", 12, record_chars=2_000, result_limit=None)
    record = with_handles.setup().turns[0].tools.get("get_stock")
    assert record is not None
    sku = with_handles.catalog.skus[0]
    value = record.function(sku=sku)
    assert value["stock"] == with_handles.catalog.stock[sku]
    assert 1_900 <= len(json.dumps(value)) <= 2_300  # about 2 KB a result
    handled_rows, shown_rows = _rows([with_handles], sandbox), _rows([whole], sandbox)
    _assert_all_pass([*handled_rows, *shown_rows])
    handled = {r.convention: r.input_tokens for r in handled_rows}
    shown = {r.convention: r.input_tokens for r in shown_rows}
    # Twelve 2 KB records: a handle and preview each cost JSON calling far less than the text.
    assert handled["json"] < shown["json"] / 2
    assert handled["code"] == shown["code"]  # a script holds the records either way
