"""Evaluation: checking model calls against benchmark ground truth."""

from tooluse.eval._ast_check import AstVerdict, check_ast

__all__ = ["AstVerdict", "check_ast"]
