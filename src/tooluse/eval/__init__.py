"""Evaluation: suites, scorers, the oracle model, the token cost model and reports.

Not imported by the runtime. ``tooluse bench`` drives it from the command line;
in Python::

    from tooluse.eval import Bench, BenchConfig, SuiteOptions

    Bench(BenchConfig("fanout", out=Path("runs/fanout"), model="oracle")).run()

A suite is a list of `Task` objects; subclass `Task` to measure your own tools
the same way (``Bench(config, tasks=[...])``), or write the tasks as data: a
`Dataset` of `Case`s, read from YAML or JSONL with `Dataset.from_file`, as
``tooluse eval TASKS`` does (docs/evaluation.md).
"""

from tooluse.eval._checks import Check, Contains, Number, Predicate, Regex
from tooluse.eval._costmodel import Crossover, LineFit, crossover, fit_line, paper_crossover
from tooluse.eval._dataset import Case, CaseTask, Dataset, ExpectedCall, TaskFileError
from tooluse.eval._driver import CallPolicy
from tooluse.eval._metrics import CallMetrics, call_metrics
from tooluse.eval._oracle import OracleModel, oracle_for
from tooluse.eval._plots import write_plots
from tooluse.eval._report import write_summary
from tooluse.eval._row import Row
from tooluse.eval._runner import Bench, BenchConfig, RayOptions, evaluate, read_rows
from tooluse.eval._suites import SUITES, SuiteOptions, build_tasks
from tooluse.eval._synthetic import ChainTask, FanoutTask
from tooluse.eval._task import BenchDataError, Call, OracleTurn, Score, Setup, Task, Turn
from tooluse.eval.bfcl import AstVerdict, check_ast

__all__ = [
    "SUITES",
    "AstVerdict",
    "Bench",
    "BenchConfig",
    "BenchDataError",
    "Call",
    "CallMetrics",
    "CallPolicy",
    "Case",
    "CaseTask",
    "ChainTask",
    "Check",
    "Contains",
    "Crossover",
    "Dataset",
    "ExpectedCall",
    "FanoutTask",
    "LineFit",
    "Number",
    "OracleModel",
    "OracleTurn",
    "Predicate",
    "RayOptions",
    "Regex",
    "Row",
    "Score",
    "Setup",
    "SuiteOptions",
    "Task",
    "TaskFileError",
    "Turn",
    "build_tasks",
    "call_metrics",
    "check_ast",
    "crossover",
    "evaluate",
    "fit_line",
    "oracle_for",
    "paper_crossover",
    "read_rows",
    "write_plots",
    "write_summary",
]
