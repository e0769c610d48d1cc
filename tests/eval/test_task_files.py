"""Task files: what they may hold, and one clear error naming file, line, task and field."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from examples.finance.tools import Ledger
from tooluse import Toolbox, UsageError
from tooluse.eval import (
    BenchDataError,
    Case,
    Contains,
    Dataset,
    ExpectedCall,
    Number,
    Predicate,
    Regex,
    TaskFileError,
)
from tooluse.eval._checks import numbers_in

ROOT = Path(__file__).resolve().parents[2]
TOOLUSE = Path(sys.executable).parent / "tooluse"
TOOLS = "examples.finance.tools:toolbox"

GOOD = """\
name: money
tools: examples.finance.tools:toolbox
tasks:
  - id: one
    prompt: How much is in checking?
    calls: [{tool: balance, arguments: {account: checking}}]
    forbid: [pay_bill]
    checks:
      - {contains: [USD, checking]}
      - {contains: CHECKING, case_sensitive: true}
      - {regex: "\\\\b1,?250"}
      - {number: 1250, tolerance: 0.01}
      - {predicate: "examples.finance.checks:quotes_confirmation"}
    answer: 1,250 USD in checking.
    category: balances
    max_rounds: 4
  - prompt: Convert 10 EUR to USD.
    calls: [{tool: convert, arguments: {amount: 10, from_currency: EUR, to_currency: USD},
             unchecked: [amount]}]
"""


def _write(tmp_path: Path, text: str, name: str = "tasks.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_yaml_file_reads_into_cases_with_their_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    dataset = Dataset.from_file(_write(tmp_path, GOOD))
    assert dataset.name == "money"
    first, second = dataset.cases
    assert first.id == "one" and first.category == "balances" and first.max_rounds == 4
    assert first.calls == (ExpectedCall("balance", {"account": "checking"}),)
    assert first.forbid == ("pay_bill",)
    assert first.checks == (
        Contains(("USD", "checking")),
        Contains(("CHECKING",), case_sensitive=True),
        Regex(r"\b1,?250"),
        Number(1250, 0.01),
        Predicate("examples.finance.checks:quotes_confirmation"),
    )
    # A task without an id is named by its place in the file.
    assert second.id == "2"
    assert second.calls[0].unchecked == frozenset({"amount"})
    assert second.calls[0].checked.arguments == {"from_currency": "EUR", "to_currency": "USD"}


def test_a_jsonl_file_holds_one_task_a_line_and_takes_its_tools_from_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    path = _write(
        tmp_path,
        '{"id": "a", "prompt": "Balance?", "checks": [{"number": 1250}]}\n'
        "\n"
        '{"id": "b", "prompt": "Bills?", "calls": [{"tool": "list_bills"}]}\n',
        "mine.jsonl",
    )
    dataset = Dataset.from_file(path, tools=TOOLS)
    assert dataset.name == "mine"
    assert [c.id for c in dataset.cases] == ["a", "b"]


BAD = [
    # (file text, the error after "PATH:")
    (GOOD.replace("    checks:\n", "    check:\n"),
     "8: task 'one': check: unknown field (a task has id, prompt, calls, forbid, checks, "
     "answer, category, max_rounds)"),
    (GOOD.replace("    prompt: How much is in checking?\n", ""),
     "4: task 'one': prompt: required: the task's text, a non-empty string"),
    (GOOD.replace("{tool: balance,", "{tool: balanse,"),
     "6: task 'one': calls[0].tool: no tool named 'balanse' (the tools: balance, list_bills, "
     "convert, pay_bill)"),
    (GOOD.replace("{account: checking}", "{acount: checking}"),
     "6: task 'one': calls[0].arguments.acount: balance has no parameter 'acount' (it has: "
     "account)"),
    (GOOD.replace("{number: 1250, tolerance: 0.01}", "{number: '1,250'}"),
     "12: task 'one': checks[3].number: must be a number (no thousands separators), not '1,250'"),
    (GOOD.replace("tolerance: 0.01", "tolerance: -1"),
     "12: task 'one': checks[3].tolerance: must be a number ≥ 0, not -1"),
    (GOOD.replace('{regex: "\\\\b1,?250"}', '{regex: "(unclosed"}'),
     "11: task 'one': checks[2].regex: invalid regular expression '(unclosed': missing ), "
     "unterminated subpattern at position 0"),
    (GOOD.replace("examples.finance.checks:quotes_confirmation", "examples.finance.checks:nope"),
     "13: task 'one': checks[4].predicate: module 'examples.finance.checks' has no attribute "
     "'nope'"),
    (GOOD.replace("examples.finance.checks:quotes_confirmation", "examples.nowhere:f"),
     "13: task 'one': checks[4].predicate: cannot import 'examples.nowhere': No module named "
     "'examples.nowhere'"),
    (GOOD.replace("{contains: [USD, checking]}", "{contains: USD, regex: x}"),
     "9: task 'one': checks[0]: must have exactly one of contains, regex, number, predicate"),
    (GOOD.replace("{contains: [USD, checking]}", "{contains: USD, tolerance: 2}"),
     "9: task 'one': checks[0].tolerance: unknown option (a contains check takes "
     "case_sensitive)"),
    (GOOD.replace("forbid: [pay_bill]", "forbid: pay_bill"),
     "7: task 'one': forbid: must be a list, not a string"),
    (GOOD.replace("max_rounds: 4", "max_rounds: 0"),
     "16: task 'one': max_rounds: must be a positive integer, not 0"),
    (GOOD.replace("  - prompt: Convert", "  - id: one\n    prompt: Convert"),
     "17: task 'one': id: repeats the id of the task on line 4"),
    (GOOD.replace("    calls: [{tool: convert", "    answer: 3\n    calls: [{tool: convert"),
     "18: task #2: answer: must be a string, not a int"),
    (GOOD.replace("    calls: [{tool: convert, arguments: {amount: 10, from_currency: EUR, "
                  "to_currency: USD},\n             unchecked: [amount]}]\n", ""),
     "17: task #2: task: needs `calls` or `checks` (or both): something to judge the run by"),
    (GOOD.replace("unchecked: [amount]", "unchecked: [rate]"),
     "19: task #2: calls[0].unchecked: must be a list of names of the call's arguments"),
    (GOOD.replace("name: money\n", "name: money\nmodel: x\n"),
     "2: unknown key 'model' (a task file has name, tools, deps, tasks)"),
    (GOOD.replace("    answer: 1,250 USD in checking.\n", "    answer: [oops\n"),
     "15: not valid YAML: expected ',' or ']', but got ':'"),
    ("- just a string\n", "1: task #1: task: must be a mapping of id, prompt, calls, forbid, "
     "checks, answer, category, max_rounds, not a string"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "error"), BAD, ids=[e.split(":", 2)[-1][:40] for _, e in BAD])
def test_a_malformed_file_is_one_error_naming_file_line_task_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, error: str
) -> None:
    monkeypatch.chdir(ROOT)
    path = _write(tmp_path, text)
    with pytest.raises(TaskFileError) as caught:
        Dataset.from_file(path, tools=TOOLS)
    assert str(caught.value) == f"{path}:{error}"
    assert isinstance(caught.value, UsageError)


def test_a_jsonl_line_that_is_not_json_is_named(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"prompt": "a", "checks": [{"number": 1}]}\n{"prompt": \n', "t.jsonl")
    with pytest.raises(TaskFileError) as caught:
        Dataset.from_file(path, tools=TOOLS)
    assert str(caught.value) == f"{path}:2: not a JSON object: Expecting value"


@pytest.mark.parametrize(
    ("name", "text", "tools", "error"),
    [
        ("t.txt", "x", TOOLS, "{path}: a task file is .yaml, .yml or .jsonl, not .txt"),
        ("t.yaml", "- {prompt: a, checks: [{number: 1}]}\n", None,
         "{path}: no tools: pass --tools MODULE:ATTR, or add `tools: MODULE:ATTR` to the file"),
        ("t.yaml", "- {prompt: a, checks: [{number: 1}]}\n", "examples.finance.tools:nothing",
         "--tools: module 'examples.finance.tools' has no attribute 'nothing'"),
        ("t.yaml", "tasks: []\n", TOOLS, "{path}: no tasks"),
        ("t.yaml", "name: x\n", TOOLS, "{path}: no `tasks:` list"),
    ],
)  # fmt: skip
def test_a_file_without_usable_tasks_or_tools_says_which(  # noqa: PLR0917 - parametrized
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str, tools: str, error: str
) -> None:
    monkeypatch.chdir(ROOT)
    path = _write(tmp_path, text, name)
    with pytest.raises(TaskFileError) as caught:
        Dataset.from_file(path, tools=tools)
    assert str(caught.value) == error.format(path=path)


def test_the_cli_reports_a_malformed_file_in_one_line_and_runs_nothing(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD.replace("{tool: balance,", "{tool: balanse,"))
    out = tmp_path / "out"
    proc = subprocess.run(
        [str(TOOLUSE), "eval", str(path), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200", "NO_COLOR": "1"},
    )
    assert proc.returncode != 0
    assert proc.stderr == (
        f"error: {path}:6: task 'one': calls[0].tool: no tool named 'balanse' "
        "(the tools: balance, list_bills, convert, pay_bill)\n"
    )
    assert not (out / "results.jsonl").exists()


def test_numbers_are_read_as_people_write_them() -> None:
    text = "Paid 1,250.50 USD (−3 fees, 2e3 points) on 2026-03-05; ref B12."
    assert numbers_in(text) == [1250.5, -3.0, 2000.0, 2026.0, 3.0, 5.0]


def test_cases_made_in_python_without_ids_are_named_by_place_and_ids_do_not_repeat() -> None:
    cases = (Case("a", checks=(Number(1),)), Case("b", id="x", checks=(Number(2),)))
    assert [c.id for c in Dataset("d", cases, Toolbox()).cases] == ["1", "x"]
    with pytest.raises(BenchDataError, match=r"dataset 'd': repeated case ids \['x'\]"):
        Dataset("d", (cases[1], cases[1]), Toolbox())


def broken_ledger() -> object:
    """A deps factory that cannot make its value."""
    raise OSError("the ledger file is locked")


@pytest.mark.parametrize(
    ("deps", "error"),
    [
        ("examples.finance.tools:nothing",
         "{where}: module 'examples.finance.tools' has no attribute 'nothing'"),
        ("examples.finance.tools:convert",
         "{where}: examples.finance.tools:convert must be callable without arguments (a class "
         "or a function), to make each run's dependencies afresh"),
        ("tests.eval.test_task_files:broken_ledger",
         "tests.eval.test_task_files:broken_ledger: making the dependencies failed: "
         "OSError: the ledger file is locked"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("given_as", ["file", "option"])
def test_deps_that_cannot_make_a_run_s_dependencies_are_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deps: str, error: str, given_as: str
) -> None:
    monkeypatch.chdir(ROOT)
    header = f"deps: {deps}\n" if given_as == "file" else ""
    path = _write(tmp_path, f"{header}tasks:\n  - {{prompt: a, checks: [{{number: 1}}]}}\n")
    with pytest.raises(TaskFileError) as caught:
        Dataset.from_file(path, tools=TOOLS, deps=None if given_as == "file" else deps)
    where = f"{path}:1: deps" if given_as == "file" else "--deps"
    assert str(caught.value) == error.format(where=where)


def test_each_run_of_a_case_is_given_dependencies_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    path = _write(
        tmp_path,
        "tools: examples.finance.tools:toolbox\ndeps: examples.finance.tools:Ledger\n"
        "tasks:\n  - {prompt: pay B1, calls: [{tool: pay_bill, arguments: {bill_id: B1}}]}\n",
    )
    (task,) = Dataset.from_file(path).tasks()
    first, second = task.setup(), task.setup()
    assert isinstance(first.deps, Ledger) and isinstance(second.deps, Ledger)
    first.deps.bills["B1"]["paid"] = True
    assert second.deps.bills["B1"]["paid"] is False
