"""BFCL, the Berkeley Function Calling Leaderboard (Gorilla), run through the agent loop.

Single-turn categories are scored by `check_ast`, a rewrite of BFCL's AST checker
whose agreement with the original is tested entry by entry; multi-turn categories
run against BFCL's own executable backends and are scored by BFCL's checker. The
data and the backends come from the ``bfcl-eval`` wheel (``pip install --no-deps
bfcl-eval``).
"""

from tooluse.eval.bfcl._ast_check import AstVerdict, check_ast
from tooluse.eval.bfcl._multi_turn import MULTI_TURN_CATEGORIES, multi_turn_tasks
from tooluse.eval.bfcl._single_turn import (
    AST_CATEGORIES,
    PAPER_CATEGORIES,
    SINGLE_TURN_CATEGORIES,
    bfcl_tasks,
    data_dir,
    paper_subset,
)

__all__ = [
    "AST_CATEGORIES",
    "MULTI_TURN_CATEGORIES",
    "PAPER_CATEGORIES",
    "SINGLE_TURN_CATEGORIES",
    "AstVerdict",
    "bfcl_tasks",
    "check_ast",
    "data_dir",
    "multi_turn_tasks",
    "paper_subset",
]
