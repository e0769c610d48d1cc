"""Evaluating a plan's expressions: a small, side-effect-free part of Python.

Literals, names of steps, indexing and fields (``a["x"]`` or ``a.x`` on an
object), arithmetic, comparisons, conditionals, comprehensions, f-strings and
the builtins in `ALLOWED_FUNCTIONS`. Every evaluation has a step budget, and
what could build huge values (``**``, ``*`` on sequences, ``range``) is bounded,
so a hostile plan fails with a message instead of exhausting the host.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._exceptions import InvalidCallError

__all__ = ["ALLOWED_FUNCTIONS", "PlanEvaluationError", "evaluate"]

#: Names a plan may call besides its tools.
ALLOWED_FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "abs": abs,
    "all": all,
    "any": any,
    "bool": bool,
    "dict": dict,
    "enumerate": enumerate,
    "float": float,
    "int": int,
    "len": len,
    "list": list,
    "max": max,
    "min": min,
    "range": range,
    "round": round,
    "set": set,
    "sorted": sorted,
    "str": str,
    "sum": sum,
    "tuple": tuple,
    "zip": zip,
}
#: Evaluation steps one expression may take, and the largest sequence it may build.
_BUDGET = 200_000
_MAX_ITEMS = 100_000


class PlanEvaluationError(InvalidCallError, ValueError):
    """An expression of a running plan failed: a missing field, a bad index, a type error."""


def evaluate(node: ast.expr, env: Mapping[str, Any]) -> Any:
    """The value of a checked plan expression; `PlanEvaluationError` when it fails."""
    evaluator = _Evaluator(env)
    try:
        return evaluator.eval(node)
    except PlanEvaluationError:
        raise
    except (TypeError, ValueError, ArithmeticError, OverflowError) as exc:
        raise PlanEvaluationError(f"{ast.unparse(node)}: {type(exc).__name__}: {exc}") from None
    except RecursionError:
        raise PlanEvaluationError(f"{ast.unparse(node)}: nested too deeply") from None


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
}


def _describe_value(value: Any) -> str:
    if isinstance(value, Mapping):
        keys = ", ".join(str(k) for k in list(value)[:20])
        return f"an object with the fields: {keys}" if keys else "an empty object"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)} item(s)"
    return f"a {type(value).__name__}, {str(value)[:60]!r}"


class _Evaluator:
    def __init__(self, env: Mapping[str, Any]) -> None:
        self.scopes: list[dict[str, Any]] = [dict(env)]
        self.budget = _BUDGET

    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise PlanEvaluationError(f"{name} has no value")

    def eval(self, node: ast.expr) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise PlanEvaluationError("the expression takes too many steps to evaluate")
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = [self.eval(e) for e in node.elts]
            return set(items) if isinstance(node, ast.Set) else items
        if isinstance(node, ast.Dict):
            return {
                self.eval(k) if k is not None else None: self.eval(v)
                for k, v in zip(node.keys, node.values, strict=True)
            }
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Attribute):
            return self.field(self.eval(node.value), node.attr, node)
        if isinstance(node, ast.BinOp):
            return self.binary(node)
        if isinstance(node, ast.UnaryOp):
            operand = self.eval(node.operand)
            if isinstance(node.op, ast.Not):
                return not operand
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return +operand
            return ~operand
        if isinstance(node, ast.BoolOp):
            value: Any = None
            for operand_node in node.values:
                value = self.eval(operand_node)
                if isinstance(node.op, ast.And) and not value:
                    return value
                if isinstance(node.op, ast.Or) and value:
                    return value
            return value
        if isinstance(node, ast.Compare):
            left = self.eval(node.left)
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                right = self.eval(right_node)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self.eval(node.body) if self.eval(node.test) else self.eval(node.orelse)
        if isinstance(node, ast.JoinedStr):
            return "".join(str(self.eval(v)) for v in node.values)
        if isinstance(node, ast.FormattedValue):
            inner = self.eval(node.value)
            if node.conversion == ord("r"):
                inner = repr(inner)
            elif node.conversion == ord("s"):
                inner = str(inner)
            spec = self.eval(node.format_spec) if node.format_spec is not None else ""
            return format(inner, str(spec))
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            items = list(self.comprehension(node.generators, node.elt))
            return set(items) if isinstance(node, ast.SetComp) else items
        if isinstance(node, ast.DictComp):
            pairs = self.comprehension(node.generators, ast.Tuple([node.key, node.value]))
            return dict(pairs)
        raise PlanEvaluationError(f"`{type(node).__name__}` is not allowed in a plan")

    def subscript(self, node: ast.Subscript) -> Any:
        container = self.eval(node.value)
        if isinstance(node.slice, ast.Slice):
            parts = [
                None if p is None else self.eval(p)
                for p in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            try:
                return container[slice(*parts)]
            except TypeError:
                raise PlanEvaluationError(
                    f"{ast.unparse(node.value)} cannot be sliced: it is "
                    f"{_describe_value(container)}"
                ) from None
        key = self.eval(node.slice)
        if isinstance(container, Mapping):
            return self.field(container, key, node)
        try:
            return container[key]
        except IndexError:
            raise PlanEvaluationError(
                f"{ast.unparse(node)}: index {key!r} is out of range: "
                f"{ast.unparse(node.value)} is {_describe_value(container)}"
            ) from None
        except (TypeError, KeyError):
            raise PlanEvaluationError(
                f"{ast.unparse(node)}: {ast.unparse(node.value)} is "
                f"{_describe_value(container)}, which has no item {key!r}"
            ) from None

    def field(self, value: Any, key: Any, node: ast.expr) -> Any:
        if isinstance(value, Mapping):
            if key in value:
                return value[key]
            raise PlanEvaluationError(
                f"{ast.unparse(node)}: the result has no field {key!r}; it is "
                f"{_describe_value(value)}"
            )
        raise PlanEvaluationError(
            f"{ast.unparse(node)}: the result is {_describe_value(value)}, which has no "
            f"field {key!r}"
        )

    def binary(self, node: ast.BinOp) -> Any:
        left = self.eval(node.left)
        right = self.eval(node.right)
        if isinstance(node.op, ast.Pow) and isinstance(right, int | float) and abs(right) > 1000:
            raise PlanEvaluationError(f"{ast.unparse(node)}: the exponent is too large")
        if isinstance(node.op, ast.Mult):
            for seq, times in ((left, right), (right, left)):
                if (
                    isinstance(seq, str | list | tuple)
                    and isinstance(times, int)
                    and len(seq) * times > _MAX_ITEMS
                ):
                    raise PlanEvaluationError(f"{ast.unparse(node)}: the result is too large")
        operation = _BINARY.get(type(node.op))
        if operation is None:
            raise PlanEvaluationError(f"the operator in {ast.unparse(node)} is not allowed")
        return operation(left, right)

    def call(self, node: ast.Call) -> Any:
        assert isinstance(node.func, ast.Name)
        function = ALLOWED_FUNCTIONS[node.func.id]
        args = [self.eval(a) for a in node.args]
        kwargs = {k.arg: self.eval(k.value) for k in node.keywords if k.arg is not None}
        if function is range and any(isinstance(a, int) and abs(a) > _MAX_ITEMS for a in args):
            raise PlanEvaluationError(f"{ast.unparse(node)}: the range is too large")
        result = function(*args, **kwargs)
        if isinstance(result, enumerate | zip | range):
            result = list(result)
            if len(result) > _MAX_ITEMS:
                raise PlanEvaluationError(f"{ast.unparse(node)}: the result is too large")
        return result

    def comprehension(
        self, generators: Sequence[ast.comprehension], element: ast.expr
    ) -> list[Any]:
        out: list[Any] = []

        def loop(index: int) -> None:
            if index == len(generators):
                out.append(self.eval(element))
                if len(out) > _MAX_ITEMS:
                    raise PlanEvaluationError("a comprehension builds too many items")
                return
            generator = generators[index]
            iterable = self.eval(generator.iter)
            if isinstance(iterable, Mapping):
                iterable = list(iterable)
            if not isinstance(iterable, list | tuple | set | str):
                raise PlanEvaluationError(
                    f"cannot loop over {ast.unparse(generator.iter)}: it is "
                    f"{_describe_value(iterable)}"
                )
            for item in iterable:
                self.scopes.append(_bind(generator.target, item))
                try:
                    if all(self.eval(test) for test in generator.ifs):
                        loop(index + 1)
                finally:
                    self.scopes.pop()

        loop(0)
        return out


def _bind(target: ast.expr, value: Any) -> dict[str, Any]:
    if isinstance(target, ast.Name):
        return {target.id: value}
    if isinstance(target, ast.Tuple | ast.List):
        try:
            items = list(value)
        except TypeError:
            raise PlanEvaluationError(f"cannot unpack {_describe_value(value)}") from None
        if len(items) != len(target.elts):
            raise PlanEvaluationError(
                f"cannot unpack {len(items)} item(s) into {len(target.elts)} name(s)"
            )
        scope: dict[str, Any] = {}
        for part, item in zip(target.elts, items, strict=True):
            scope.update(_bind(part, item))
        return scope
    raise PlanEvaluationError("a comprehension loops over plain names only")
