"""Evaluation: suites, scorers, the oracle model, the token cost model and reports.

Not imported by the runtime. ``tooluse bench`` drives it from the command line;
in Python::

    from tooluse.eval import Bench, BenchConfig, SuiteOptions

    Bench(BenchConfig("fanout", out=Path("runs/fanout"), model="oracle")).run()
"""

from tooluse.eval._ast_check import AstVerdict, check_ast
from tooluse.eval._bfcl import PAPER_CATEGORIES, SINGLE_TURN_CATEGORIES, bfcl_tasks, paper_subset
from tooluse.eval._bfcl_multi import MULTI_TURN_CATEGORIES, multi_turn_tasks
from tooluse.eval._costmodel import PAPER, Crossover, LineFit, crossover, fit_line, paper_crossover
from tooluse.eval._metrics import CallMetrics, call_metrics
from tooluse.eval._oracle import OracleModel, oracle_for
from tooluse.eval._report import aggregate, render_summary, write_plots, write_summary
from tooluse.eval._rot import ROT_LEVELS, RotLevel, rot_tasks
from tooluse.eval._runner import ORACLE, Bench, BenchConfig, read_rows, run_entry
from tooluse.eval._suites import SUITES, SuiteOptions, build_tasks
from tooluse.eval._synthetic import ChainTask, FanoutTask, chain_tasks, fanout_tasks
from tooluse.eval._task import BenchDataError, Call, OracleTurn, Score, Setup, Task, Turn

__all__ = [
    "MULTI_TURN_CATEGORIES",
    "ORACLE",
    "PAPER",
    "PAPER_CATEGORIES",
    "ROT_LEVELS",
    "SINGLE_TURN_CATEGORIES",
    "SUITES",
    "AstVerdict",
    "Bench",
    "BenchConfig",
    "BenchDataError",
    "Call",
    "CallMetrics",
    "ChainTask",
    "Crossover",
    "FanoutTask",
    "LineFit",
    "OracleModel",
    "OracleTurn",
    "RotLevel",
    "Score",
    "Setup",
    "SuiteOptions",
    "Task",
    "Turn",
    "aggregate",
    "bfcl_tasks",
    "build_tasks",
    "call_metrics",
    "chain_tasks",
    "check_ast",
    "crossover",
    "fanout_tasks",
    "fit_line",
    "multi_turn_tasks",
    "oracle_for",
    "paper_crossover",
    "paper_subset",
    "read_rows",
    "render_summary",
    "rot_tasks",
    "run_entry",
    "write_plots",
    "write_summary",
]
