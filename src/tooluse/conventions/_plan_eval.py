"""Evaluating a plan's expressions: a small, side-effect-free part of Python.

Literals, names of steps, indexing and fields (``a["x"]`` or ``a.x`` on an
object), arithmetic, comparisons, conditionals, comprehensions, f-strings and
the builtins in `ALLOWED_FUNCTIONS`.

The expressions run on the host, so a plan must not be able to exhaust it. The
expressions of one plan share a `Budget`:

- `STEP_LIMIT` steps of the evaluator (nodes evaluated, items looped over);
- `WORK_LIMIT` items that C code compares, hashes, copies or scans for it;
- `CREATED_LIMIT` bytes of new values, which bounds the memory a plan holds;
- and no value an expression computes may take more than `VALUE_LIMIT` bytes,
  counting what it holds (a part held twice counts twice, as it would when
  written out), nor an integer have more than `INT_DIGITS_LIMIT` digits.

An operation whose result can be larger than its operands (``**``, ``*``,
``+``, ``%`` and format widths, `str`, `list`, `range`, `sum` ...) has the size
of its result predicted from its operands before it runs; one that would go
over a limit raises `PlanEvaluationError` naming the limit, and the step fails
with that message while the run goes on.
"""

from __future__ import annotations

import ast
import math
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from .._exceptions import InvalidCallError

__all__ = [
    "ALLOWED_FUNCTIONS",
    "CREATED_LIMIT",
    "INT_DIGITS_LIMIT",
    "STEP_LIMIT",
    "VALUE_LIMIT",
    "WORK_LIMIT",
    "Budget",
    "PlanEvaluationError",
    "evaluate",
]

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

#: Evaluator steps the expressions of one plan may take in all.
STEP_LIMIT = 500_000
#: Items C code may compare, hash, copy or scan for the expressions of one plan.
WORK_LIMIT = 20_000_000
#: Bytes of new values the expressions of one plan may create in all.
CREATED_LIMIT = 64_000_000
#: Bytes one value may take, with everything it holds.
VALUE_LIMIT = 8_000_000
#: Digits a whole number may have: as many as Python writes out by default.
INT_DIGITS_LIMIT = 4_300
_INT_BITS_LIMIT = math.ceil(INT_DIGITS_LIMIT * math.log2(10))
# Bits say roughly how many digits: a result is checked against this once made.
_INT_CEILING = 10**INT_DIGITS_LIMIT
#: Characters of an expression quoted in a message.
_QUOTED = 120
#: Characters a number takes formatted, beyond its width and precision (a float
#: written out in full has up to 309 digits before the point).
_NUMBER_TEXT = 600

_ATOMS = (type(None), bool, int, float, complex, str, bytes)
_CONTAINERS = (list, tuple, set, frozenset, dict)
_KNOWN = (*_ATOMS, *_CONTAINERS)
_ITERABLE = (list, tuple, set, frozenset, dict, str, bytes)
_SEQUENCES = (str, bytes, list, tuple)
_NUMBERS = (bool, int, float, complex)
# Compared in little time: the step that compares them is their whole cost.
_SCALARS = frozenset({type(None), bool, float})
_SLOT = 8  # bytes of one reference in a list, tuple or set
_HINT = "; a plan's values stay small, so leave large work to the tools"


class PlanEvaluationError(InvalidCallError, ValueError):
    """An expression of a running plan failed: a missing field, a bad index, a limit."""


def _text(node: ast.AST) -> str:
    """The expression as the model wrote it, short enough to quote in a message."""
    try:
        text = ast.unparse(node)
    except RecursionError:
        return "the expression"
    return text if len(text) <= _QUOTED else text[: _QUOTED - 3] + "..."


def _spent(what: str) -> PlanEvaluationError:
    """The error of a plan whose expressions spent one of its budgets: they `what`."""
    return PlanEvaluationError(f"the plan's expressions {what}, the limit for one plan{_HINT}")


class Budget:
    """What the expressions of one plan may still spend; shared by all of them.

    It also remembers the size of each value it measured, so that a value used
    many times is measured once.
    """

    __slots__ = ("_kept", "_sizes", "created", "steps", "work")

    def __init__(self) -> None:
        self.steps = STEP_LIMIT
        self.work = WORK_LIMIT
        self.created = CREATED_LIMIT
        # id -> (the value, kept alive so the id stays its own; bytes; measured to the end)
        self._sizes: dict[int, tuple[Any, int, bool]] = {}
        self._kept = 1024  # entries at which to look for values only this budget holds

    def step(self, count: int = 1) -> None:
        self.steps -= count
        if self.steps < 0:
            raise _spent(f"take more than {STEP_LIMIT:,} steps")

    def do(self, items: int) -> None:
        self.work -= items
        if self.work < 0:
            raise _spent(f"compare, copy or scan more than {WORK_LIMIT:,} items")

    def create(self, size: int) -> None:
        self.created -= size
        if self.created < 0:
            raise _spent(f"create more than {CREATED_LIMIT:,} bytes of values")

    def remember(self, value: Any, size: int) -> None:
        if isinstance(value, _CONTAINERS):
            self._sizes[id(value)] = (value, size, True)
            if len(self._sizes) >= self._kept:
                self.release()
                self._kept = max(1024, 2 * len(self._sizes))

    def release(self) -> None:
        """Forget the values nothing but this budget holds, so that they can be freed."""
        for key, (value, _, _) in list(self._sizes.items()):
            # Three references: the entry, `value` here, and getrefcount's argument.
            if sys.getrefcount(value) <= 3:
                del self._sizes[key]

    def size(self, value: Any, limit: int = VALUE_LIMIT) -> int:
        """Bytes `value` takes with all it holds, a part held twice counted twice.

        Past `limit` the count stops, and some number above `limit` is returned.
        """
        if isinstance(value, _ATOMS):
            return sys.getsizeof(value)
        known = self._sizes.get(id(value))
        if known is not None and (known[2] or known[1] > limit):
            return known[1]
        total = sys.getsizeof(value)
        stack = [value]
        while stack and total <= limit:
            current = stack.pop()
            remembered = self._sizes.get(id(current))
            if current is not value and remembered is not None and remembered[2]:
                # Its own reference was counted when its holder was expanded.
                total += remembered[1] - sys.getsizeof(current)
                continue
            parts: Sequence[Any]
            if isinstance(current, dict):
                parts = [*current.keys(), *current.values()]
            elif isinstance(current, list | tuple | set | frozenset):
                parts = list(current)
            else:
                continue  # an object of another kind: only its own bytes
            # sys.getsizeof of each part is summed in C; only containers are expanded.
            self.step(1 + len(parts) // 16)
            total += sum(map(sys.getsizeof, parts))
            stack.extend(p for p in parts if isinstance(p, _CONTAINERS))
        self._sizes[id(value)] = (value, total, not stack and total <= limit)
        return total

    def compare_cost(self, value: Any) -> int:
        """Items C code may touch comparing or hashing `value`."""
        if isinstance(value, str | bytes):
            return len(value) // _SLOT + 1
        if isinstance(value, int):
            return value.bit_length() // 30 + 1
        if isinstance(value, _CONTAINERS):
            return self.size(value, WORK_LIMIT) // _SLOT + 1
        return 1


def evaluate(node: ast.expr, env: Mapping[str, Any], budget: Budget | None = None) -> Any:
    """The value of a checked plan expression; `PlanEvaluationError` when it fails.

    Pass the plan's `budget` to every expression of one plan: its limits are
    for the plan, not for each expression.
    """
    spending = budget if budget is not None else Budget()
    evaluator = _Evaluator(env, spending)
    try:
        return evaluator.eval(node)
    except PlanEvaluationError:
        raise
    except RecursionError:
        raise PlanEvaluationError(f"{_text(node)}: nested too deeply") from None
    except Exception as exc:  # any failure of an operation on the values is the plan's
        raise PlanEvaluationError(f"{_text(node)}: {type(exc).__name__}: {exc}") from None
    finally:
        del evaluator
        spending.release()


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
# After a `%` and an optional ``(key)``: flags, width, precision, length, conversion.
_PERCENT_TAIL = re.compile(r"[-+ #0]*(\*|\d+)?(?:\.(\*|\d*))?[hlL]?(.)?", re.DOTALL)
_DIGITS = re.compile(r"\d+")


def _shown(value: Any) -> str:
    """A short repr of `value`, made without writing out all of a large one."""
    if isinstance(value, str | bytes):
        return repr(value[:60]) + ("..." if len(value) > 60 else "")
    if isinstance(value, int) and value.bit_length() > 200:
        return f"a whole number of {value.bit_length():,} bits"
    if isinstance(value, _ATOMS):
        return repr(value)
    return f"a {type(value).__name__}"


def _describe_value(value: Any) -> str:
    if isinstance(value, Mapping):
        keys = ", ".join(_shown(k).strip("'") for k in list(value)[:20])
        return f"an object with the fields: {keys}" if keys else "an empty object"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)} item(s)"
    return f"a {type(value).__name__}, {_shown(value)}"


def _scalar(value: Any) -> bool:
    """Whether comparing `value` takes little time, whatever it is compared with."""
    kind = type(value)
    return kind in _SCALARS or (kind is int and value.bit_length() <= _INT_BITS_LIMIT)


def _number(text: str | None) -> int:
    """A width or precision as written; a very long one counts as too large to use."""
    if not text:
        return 0
    return int(text) if len(text) <= 12 else 10**12


def _percent_specs(
    form: str, step: Callable[[], None]
) -> Iterator[tuple[bool, str | None, str | None, str | None]]:
    """Each conversion of a ``%`` format: (keyed, width, precision, conversion).

    `step` is called for each place the scan stops at.
    """
    at = 0
    while (at := form.find("%", at)) >= 0:
        step()
        at += 1
        keyed = at < len(form) and form[at] == "("
        if keyed:  # the key may hold parentheses of its own, as Python reads it
            depth, at = 1, at + 1
            while depth:
                step()
                close = form.find(")", at)
                if close < 0:
                    at = len(form)
                    break
                depth += form.count("(", at, close) - 1
                at = close + 1
        match = _PERCENT_TAIL.match(form, at)
        assert match is not None  # every part of the pattern is optional
        at = match.end()
        yield keyed, match.group(1), match.group(2), match.group(3)


class _Evaluator:
    def __init__(self, env: Mapping[str, Any], budget: Budget) -> None:
        self.scopes: list[dict[str, Any]] = [dict(env)]
        self.budget = budget

    # --- limits -------------------------------------------------------------------------

    def too_large(self, node: ast.AST, size: int) -> PlanEvaluationError:
        return PlanEvaluationError(
            f"{_text(node)}: the result would be too large: about {size:,} bytes, over the "
            f"limit of {VALUE_LIMIT:,} bytes for one value in a plan{_HINT}"
        )

    def fits(self, node: ast.AST, size: int) -> None:
        """Refuse, before it is made, a value predicted to take `size` bytes."""
        if size > VALUE_LIMIT:
            raise self.too_large(node, size)

    def made(self, value: Any, size: int, node: ast.AST) -> Any:
        """Account for a new value of `size` bytes (with what it holds) and return it."""
        self.fits(node, size)
        self.budget.remember(value, size)
        return value

    def int_fits(self, node: ast.AST, bits: float) -> None:
        if bits > _INT_BITS_LIMIT:
            if bits == math.inf:
                about = f"more than {INT_DIGITS_LIMIT:,}"
            elif bits < 1e18:
                about = f"about {int(bits * math.log10(2)) + 1:,}"
            else:
                about = "more than 10**17"
            raise PlanEvaluationError(
                f"{_text(node)}: the result would be too large: {about} digits, over the limit of "
                f"{INT_DIGITS_LIMIT:,} digits for a whole number in a plan{_HINT}"
            )

    def whole(self, value: Any, node: ast.AST) -> Any:
        """`value`, unless it is a whole number with more digits than a plan may write out."""
        if isinstance(value, int) and not -_INT_CEILING < value < _INT_CEILING:
            self.int_fits(node, math.inf)
        return value

    def held(self, values: Sequence[Any]) -> int:
        """Bytes the values take, each with what it holds."""
        return sum(self.budget.size(v) for v in values)

    # --- the nodes ----------------------------------------------------------------------

    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise PlanEvaluationError(f"{name} has no value")

    def eval(self, node: ast.expr) -> Any:
        budget = self.budget
        budget.steps -= 1
        if budget.steps < 0:
            budget.step(0)  # raises: the plan's steps are spent
        evaluate_node = _NODES.get(type(node))
        if evaluate_node is None:
            raise PlanEvaluationError(f"`{type(node).__name__}` is not allowed in a plan")
        return evaluate_node(self, node)

    def constant(self, node: ast.Constant) -> Any:
        return node.value

    def name(self, node: ast.Name) -> Any:
        return self.lookup(node.id)

    def literal(self, node: ast.List | ast.Tuple | ast.Set) -> Any:
        return self.collect([self.eval(e) for e in node.elts], type(node), node)

    def mapping(self, node: ast.Dict) -> dict[Any, Any]:
        pairs = []
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                raise PlanEvaluationError("`**` unpacking is not allowed in a plan")
            pairs.append((self.eval(k), self.eval(v)))
        return self.collect(pairs, ast.Dict, node)  # type: ignore[no-any-return]

    def attribute(self, node: ast.Attribute) -> Any:
        return self.field(self.eval(node.value), node.attr, node)

    def boolean(self, node: ast.BoolOp) -> Any:
        value: Any = None
        for operand_node in node.values:
            value = self.eval(operand_node)
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        return value

    def choice(self, node: ast.IfExp) -> Any:
        return self.eval(node.body) if self.eval(node.test) else self.eval(node.orelse)

    def fstring(self, node: ast.JoinedStr) -> str:
        parts = [
            self.formatted(v, node) if isinstance(v, ast.FormattedValue) else self.eval(v)
            for v in node.values
        ]
        size = sum(len(p) for p in parts if isinstance(p, str))
        self.fits(node, size)
        self.budget.do(size // _SLOT + 1)
        joined = "".join(str(p) for p in parts)
        self.budget.create(sys.getsizeof(joined))
        return joined

    def listing(self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp) -> Any:
        items = self.comprehension(node.generators, node.elt, node)
        return self.collect(items, ast.Set if isinstance(node, ast.SetComp) else ast.List, node)

    def mapping_comprehension(self, node: ast.DictComp) -> Any:
        pairs = self.comprehension(node.generators, ast.Tuple([node.key, node.value]), node)
        return self.collect(pairs, ast.Dict, node)

    def collect(self, items: list[Any], kind: type[ast.AST], node: ast.AST) -> Any:
        """A list, tuple, set or dict of `items` (pairs for a dict), within the limits.

        A comprehension has checked each item as it went; this checks the whole.
        """
        if kind is ast.List:
            value: Any = items
        elif kind is ast.Tuple:
            value = tuple(items)
        elif kind is ast.Set:
            self.budget.do(sum(self.budget.compare_cost(i) for i in items))
            value = set(items)
        else:
            self.budget.do(sum(self.budget.compare_cost(k) for k, _ in items))
            value = dict(items)
        size = sys.getsizeof(value) + self.held(
            [p for pair in items for p in pair] if kind is ast.Dict else items
        )
        self.budget.create(sys.getsizeof(value))
        return self.made(value, size, node)

    def subscript(self, node: ast.Subscript) -> Any:
        container = self.eval(node.value)
        if isinstance(node.slice, ast.Slice):
            parts = [
                None if p is None else self.eval(p)
                for p in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            try:
                part = container[slice(*parts)]
            except TypeError:
                raise PlanEvaluationError(
                    f"{_text(node.value)} cannot be sliced: it is {_describe_value(container)}"
                ) from None
            # A slice is never longer than what it is cut from, so it is made first.
            if isinstance(part, _CONTAINERS):
                self.budget.do(len(part))
            elif isinstance(part, str | bytes):
                self.budget.do(len(part) // _SLOT + 1)
            self.budget.create(sys.getsizeof(part))
            return self.made(part, self.budget.size(part), node)
        key = self.eval(node.slice)
        if isinstance(container, Mapping):
            return self.field(container, key, node)
        try:
            return container[key]
        except IndexError:
            raise PlanEvaluationError(
                f"{_text(node)}: index {_shown(key)} is out of range: "
                f"{_text(node.value)} is {_describe_value(container)}"
            ) from None
        except (TypeError, KeyError):
            raise PlanEvaluationError(
                f"{_text(node)}: {_text(node.value)} is "
                f"{_describe_value(container)}, which has no item {_shown(key)}"
            ) from None

    def field(self, value: Any, key: Any, node: ast.expr) -> Any:
        if isinstance(value, Mapping):
            self.budget.do(self.budget.compare_cost(key))
            if key in value:
                return value[key]
            raise PlanEvaluationError(
                f"{_text(node)}: the result has no field {_shown(key)}; it is "
                f"{_describe_value(value)}"
            )
        raise PlanEvaluationError(
            f"{_text(node)}: the result is {_describe_value(value)}, which has no field "
            f"{_shown(key)}"
        )

    def unary(self, node: ast.UnaryOp) -> Any:
        operand = self.eval(node.operand)
        if isinstance(node.op, ast.Not):
            return not operand
        if not isinstance(operand, _NUMBERS):
            raise PlanEvaluationError(
                f"{_text(node)}: {_text(node.operand)} is {_describe_value(operand)}, not a number"
            )
        if isinstance(operand, int):
            self.budget.do(operand.bit_length() // 30 + 1)
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return +operand
        if isinstance(operand, complex | float):
            raise PlanEvaluationError(f"{_text(node)}: `~` takes a whole number")
        return ~operand

    def compare(self, node: ast.Compare) -> bool:
        left = self.eval(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.eval(right_node)
            if not (_scalar(left) and _scalar(right)):
                self.budget.do(self.compare_work(op, left, right))
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def compare_work(self, op: ast.cmpop, left: Any, right: Any) -> int:
        cost = self.budget.compare_cost
        if isinstance(op, ast.Is | ast.IsNot):
            return 1
        if isinstance(op, ast.In | ast.NotIn):
            if isinstance(right, str | bytes) and isinstance(left, str | bytes):
                # A short needle may be tried at every place in the text.
                return len(right) * min(len(left) + 1, 100) // _SLOT + 1
            if isinstance(right, list | tuple):
                return len(right) * cost(left) + 1
            if isinstance(right, _KNOWN):
                return cost(left)  # hashed once, for a dict or set
            raise PlanEvaluationError(f"`in` cannot look into {_describe_value(right)}")
        holders = isinstance(left, _CONTAINERS) + isinstance(right, _CONTAINERS)
        if holders == 1:
            return 1  # a list or an object against a string or a number: decided by the kinds
        if holders == 0:
            return min(cost(left), cost(right))
        # Both hold values: the comparison stops at the end of the smaller one.
        smaller = self.budget.size(left, WORK_LIMIT)
        return self.budget.size(right, smaller) // _SLOT + 1

    # --- arithmetic ---------------------------------------------------------------------

    def binary(self, node: ast.BinOp) -> Any:
        operation = _BINARY.get(type(node.op))
        if operation is None:
            raise PlanEvaluationError(f"the operator in {_text(node)} is not allowed")
        left = self.eval(node.left)
        right = self.eval(node.right)
        for operand in (left, right):
            if not isinstance(operand, _KNOWN):
                raise PlanEvaluationError(
                    f"{_text(node)}: a plan cannot compute with a {type(operand).__name__}"
                )
        op = node.op
        if isinstance(left, _NUMBERS) and isinstance(right, _NUMBERS):
            self.arithmetic(op, left, right, node)
            return self.whole(operation(left, right), node)
        if isinstance(op, ast.Add) and isinstance(left, _SEQUENCES) and type(left) is type(right):
            return self.joined(left, right, node)
        if isinstance(op, ast.Mult):
            if isinstance(left, _SEQUENCES) and isinstance(right, int):
                return self.repeated(left, right, node)
            if isinstance(right, _SEQUENCES) and isinstance(left, int):
                return self.repeated(right, left, node)
        if isinstance(op, ast.Mod) and isinstance(left, str | bytes):
            return self.percent(left, right, node)
        if isinstance(op, ast.Sub) and isinstance(left, set | frozenset):
            self.budget.do(len(left) + (len(right) if isinstance(right, _ITERABLE) else 0))
            result = operation(left, right)
            self.budget.create(sys.getsizeof(result))
            return self.made(result, self.budget.size(result), node)
        # Any other pair of these kinds is refused by Python at once (a TypeError).
        return operation(left, right)

    def arithmetic(self, op: ast.operator, left: Any, right: Any, node: ast.BinOp) -> None:
        """Refuse whole numbers too large to compute with; floats cost the same at any size."""
        if not (isinstance(left, int) and isinstance(right, int)):
            return
        a, b = left.bit_length(), right.bit_length()
        limbs = (a // 30 + 1) * (b // 30 + 1)
        if isinstance(op, ast.Add | ast.Sub):
            self.int_fits(node, max(a, b) + 1)
            self.budget.do(max(a, b) // 30 + 1)
        elif isinstance(op, ast.Mult):
            self.int_fits(node, a + b)
            self.budget.do(limbs)
        elif isinstance(op, ast.Pow):
            if right < 0 or abs(left) <= 1:
                return  # a float, or 0, 1 or -1: no larger than the operands
            bits = math.inf if b > 64 else right * math.log2(abs(left))
            self.int_fits(node, bits)
            self.budget.do((int(bits) // 30 + 1) ** 2)
        else:  # / // %: no larger than the operands, but long division is quadratic
            self.budget.do(limbs)

    def joined(self, left: Any, right: Any, node: ast.AST) -> Any:
        """``a + b`` of two strings, byte strings, lists or tuples."""
        size = self.budget.size(left) + self.budget.size(right)
        self.fits(node, size)
        if isinstance(left, str | bytes):
            self.budget.do((len(left) + len(right)) // _SLOT + 1)
            self.budget.create(size)
        else:
            self.budget.do(len(left) + len(right))
            self.budget.create(_SLOT * (len(left) + len(right)))
        return self.made(left + right, size, node)

    def repeated(self, sequence: Any, times: int, node: ast.AST) -> Any:
        """``s * n`` of a string, byte string, list or tuple."""
        times = max(times, 0)
        # The bytes of an empty one; a string that is not ASCII has a longer header.
        empty = sys.getsizeof(sequence[:0])
        if isinstance(sequence, str) and not sequence.isascii():
            empty = sys.getsizeof("\xe9") - 1
        # Each copy adds the sequence's contents; the items a list holds count in each copy.
        size = empty + (self.budget.size(sequence) - empty) * times
        self.fits(node, size)
        if isinstance(sequence, str | bytes):
            self.budget.do(len(sequence) * times // _SLOT + 1)
            self.budget.create(size)
        else:
            self.budget.do(len(sequence) * times)
            self.budget.create(empty + _SLOT * len(sequence) * times)
        return self.made(sequence * times, size, node)

    # --- text ---------------------------------------------------------------------------

    def text_size(self, value: Any, node: ast.AST) -> int:
        """Characters `value` takes written out, or, for one that holds values, its bytes.

        A value that holds others is written out in at most four times its bytes;
        its text is checked once made (`check_text`), so no more is ever made.
        """
        if isinstance(value, str | bytes):
            return len(value)
        if isinstance(value, bool) or value is None:
            return 5
        if isinstance(value, int):
            # Any base, with separators: binary is the longest.
            self.budget.do((value.bit_length() // 30 + 1) ** 2)
            return value.bit_length() * 5 // 4 + 2
        if isinstance(value, float | complex):
            return _NUMBER_TEXT
        size = self.budget.size(value)
        self.fits(node, size)
        return size

    def check_text(self, text: str | bytes, node: ast.AST) -> str | bytes:
        size = sys.getsizeof(text)
        self.budget.do(len(text) // _SLOT + 1)
        self.budget.create(size)
        self.fits(node, size)
        return text

    def formatted(self, node: ast.FormattedValue, whole: ast.AST) -> str:
        """One ``{value!conversion:spec}`` of the f-string `whole` (quoted in messages)."""
        inner = self.eval(node.value)
        if node.conversion in (ord("r"), ord("a")):
            self.fits(whole, self.text_size(inner, whole))
            inner = self.check_text((repr if node.conversion == ord("r") else ascii)(inner), whole)
        elif node.conversion == ord("s") and not isinstance(inner, str):
            self.fits(whole, self.text_size(inner, whole))
            inner = self.check_text(str(inner), whole)
        spec = self.eval(node.format_spec) if node.format_spec is not None else ""
        spec = str(spec)
        # Every number in a spec may be a width or a precision: together they bound the padding.
        padding = sum(_number(d) for d in _DIGITS.findall(spec))
        self.fits(whole, padding)
        self.fits(whole, padding + self.text_size(inner, whole) + (_NUMBER_TEXT if spec else 0))
        text = format(inner, spec)
        self.check_text(text, whole)
        return text

    def percent(self, form: str | bytes, args: Any, node: ast.AST) -> Any:
        """``form % args``: the widths, precisions and values bound the result."""
        self.budget.do(len(form) // _SLOT + 1)
        scanned = form.decode("latin-1") if isinstance(form, bytes) else form
        positional = list(args) if isinstance(args, tuple) else [args]
        keyed: int | None = None  # the longest value of the mapping, once a key is used
        taken = 0

        def take() -> Any:
            nonlocal taken
            taken += 1
            return positional[taken - 1] if taken <= len(positional) else None

        def star(written: str | None) -> int:
            if written != "*":
                return _number(written)
            value = take()
            return abs(value) if isinstance(value, int) else 0

        size = len(form)
        for is_keyed, width, precision, conversion in _percent_specs(scanned, self.budget.step):
            if conversion == "%":
                continue
            size += star(width) + star(precision) + _NUMBER_TEXT
            if is_keyed and isinstance(args, Mapping):
                # A key may name any value of the mapping, and name it again and again.
                if keyed is None:
                    self.budget.step(len(args) // 16 + 1)
                    keyed = max((self.text_size(v, node) for v in args.values()), default=0)
                size += keyed
            elif not is_keyed:
                size += self.text_size(take(), node)
            self.fits(node, size)
        return self.check_text(form % args, node)

    # --- calls --------------------------------------------------------------------------

    def call(self, node: ast.Call) -> Any:
        if not isinstance(node.func, ast.Name):
            raise PlanEvaluationError(f"{_text(node.func)} cannot be called in a plan")
        name = node.func.id
        args = [self.eval(a) for a in node.args]
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise PlanEvaluationError("`**` unpacking is not allowed in a plan")
            kwargs[keyword.arg] = self.eval(keyword.value)
        for value in (*args, *kwargs.values()):
            if not isinstance(value, _KNOWN):
                raise PlanEvaluationError(
                    f"{_text(node)}: a plan cannot pass a {type(value).__name__} to {name}"
                )
        call = _CALLS.get(name)
        if call is None:
            raise PlanEvaluationError(
                f"there is no function {name!r}; a plan calls {', '.join(ALLOWED_FUNCTIONS)}"
            )
        return call(self, node, args, kwargs)

    def iterated(self, value: Any, node: ast.AST) -> int:
        """How many items a builtin would loop over in `value`."""
        if not isinstance(value, _ITERABLE):
            raise PlanEvaluationError(f"{_text(node)}: cannot loop over {_describe_value(value)}")
        self.budget.do(len(value))
        return len(value)

    def listed(self, source: Any, extra: int, node: ast.AST) -> int:
        """Bytes of a new container of `source`'s items, each slot taking `extra` bytes more.

        Charges the new container's own bytes; its items (a string's characters
        become strings of their own) are counted in its size, not created again.
        """
        count = self.iterated(source, node)
        if isinstance(source, str | bytes):
            items = count * sys.getsizeof(source[:1])
        else:
            items = self.budget.size(source) - sys.getsizeof(source)
        own = 64 + (_SLOT + extra) * count
        self.fits(node, own + items)
        self.budget.create(own)
        return own + items

    def comprehension(
        self, generators: Sequence[ast.comprehension], element: ast.expr, whole: ast.AST
    ) -> list[Any]:
        """The items of a comprehension, checked one by one as the list grows."""
        out: list[Any] = []
        size = 64

        def loop(index: int) -> None:
            nonlocal size
            if index == len(generators):
                item = self.eval(element)
                size += _SLOT + self.budget.size(item)
                self.budget.create(_SLOT)
                self.fits(whole, size)
                out.append(item)
                return
            generator = generators[index]
            iterable = self.eval(generator.iter)
            if isinstance(iterable, Mapping):
                self.budget.do(len(iterable))
                iterable = list(iterable)
            if not isinstance(iterable, list | tuple | set | str):
                raise PlanEvaluationError(
                    f"cannot loop over {_text(generator.iter)}: it is {_describe_value(iterable)}"
                )
            for item in iterable:
                self.budget.step()
                self.scopes.append(_bind(generator.target, item))
                try:
                    if all(self.eval(test) for test in generator.ifs):
                        loop(index + 1)
                finally:
                    self.scopes.pop()

        loop(0)
        return out


_NODES: dict[type[ast.AST], Callable[[_Evaluator, Any], Any]] = {
    ast.Constant: _Evaluator.constant,
    ast.Name: _Evaluator.name,
    ast.List: _Evaluator.literal,
    ast.Tuple: _Evaluator.literal,
    ast.Set: _Evaluator.literal,
    ast.Dict: _Evaluator.mapping,
    ast.Subscript: _Evaluator.subscript,
    ast.Attribute: _Evaluator.attribute,
    ast.BinOp: _Evaluator.binary,
    ast.UnaryOp: _Evaluator.unary,
    ast.BoolOp: _Evaluator.boolean,
    ast.Compare: _Evaluator.compare,
    ast.IfExp: _Evaluator.choice,
    ast.JoinedStr: _Evaluator.fstring,
    ast.FormattedValue: lambda ev, node: ev.formatted(node, node),
    ast.Call: _Evaluator.call,
    ast.ListComp: _Evaluator.listing,
    ast.GeneratorExp: _Evaluator.listing,
    ast.SetComp: _Evaluator.listing,
    ast.DictComp: _Evaluator.mapping_comprehension,
}


def _call_number(ev: _Evaluator, node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """abs, bool, float, int, len, round: small results, a little work."""
    name = node.func.id  # type: ignore[attr-defined]
    function = ALLOWED_FUNCTIONS[name]
    first = args[0] if args else None
    if name == "int" and isinstance(first, str | bytes):
        base = args[1] if len(args) > 1 else kwargs.get("base", 10)
        per_digit = math.log2(base) if isinstance(base, int) and base > 1 else 4
        ev.int_fits(node, len(first) * per_digit)
        ev.budget.do((len(first) // 8 + 1) ** 2)
        return ev.whole(function(*args, **kwargs), node)
    if name == "round" and isinstance(first, int):
        digits = args[1] if len(args) > 1 else kwargs.get("ndigits")
        if isinstance(digits, int) and digits < 0:
            # Rounding to -n digits computes 10 ** n.
            ev.int_fits(node, -digits * math.log2(10))
            ev.budget.do((-digits // 9 + 1) ** 2)
    elif isinstance(first, str | bytes):
        ev.budget.do(len(first) // _SLOT + 1)
    elif isinstance(first, int):
        ev.budget.do(first.bit_length() // 30 + 1)
    return ev.whole(function(*args, **kwargs), node)


def _call_scan(ev: _Evaluator, node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """all, any, max, min: they look at each item once and make nothing new."""
    name = node.func.id  # type: ignore[attr-defined]
    looked = args[0] if len(args) == 1 else args
    ev.iterated(looked, node)
    ev.budget.do(ev.budget.compare_cost(looked))
    return ALLOWED_FUNCTIONS[name](*args, **kwargs)


def _call_copy(ev: _Evaluator, node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """list, tuple, set, sorted, dict: a new container of the items of another."""
    name = node.func.id  # type: ignore[attr-defined]
    function = ALLOWED_FUNCTIONS[name]
    if not args:
        held = ev.held(list(kwargs.values()))
        return ev.made(function(**kwargs), 64 + held + 100 * len(kwargs), node)
    source = args[0]
    extra = {"set": 56, "dict": 100}.get(name, 0)
    size = ev.listed(source, extra, node)
    if name in ("set", "dict"):
        ev.budget.do(ev.budget.compare_cost(source))
    elif name == "sorted":
        ev.budget.do(ev.budget.compare_cost(source) * max(1, len(source).bit_length()))
    if kwargs and name == "dict":
        size += ev.held(list(kwargs.values())) + 100 * len(kwargs)
        ev.fits(node, size)
    return ev.made(function(*args, **kwargs), size, node)


def _call_pairs(ev: _Evaluator, node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """enumerate, zip: a list of tuples, one for each item."""
    name = node.func.id  # type: ignore[attr-defined]
    sources = args[:1] if name == "enumerate" else args
    counts = [ev.iterated(s, node) for s in sources]
    count = min(counts, default=0)
    width = 2 if name == "enumerate" else len(sources)
    tuple_size = sys.getsizeof(()) + _SLOT * width
    items = sum(
        count * sys.getsizeof(s[:1]) if isinstance(s, str | bytes) else ev.budget.size(s)
        for s in sources
    )
    numbers = 0
    if name == "enumerate":
        start = args[1] if len(args) > 1 else kwargs.get("start", 0)
        numbers = 28 + (start.bit_length() // 8 if isinstance(start, int) else 0)
    own = 64 + count * (_SLOT + tuple_size + numbers)
    ev.fits(node, own + items)
    ev.budget.create(own)
    ev.budget.do(count * width)
    return ev.made(list(ALLOWED_FUNCTIONS[name](*args, **kwargs)), own + items, node)


def _call_range(ev: _Evaluator, node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> Any:
    span = range(*args, **kwargs)
    try:
        count = len(span)
    except OverflowError:
        count = sys.maxsize
    bits = max((abs(a).bit_length() for a in args if isinstance(a, int)), default=0)
    size = 64 + count * (_SLOT + 28 + bits // 8)
    ev.fits(node, size)
    ev.budget.create(size)
    ev.budget.do(count)
    return ev.made(list(span), size, node)


def _call_sum(ev: _Evaluator, node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> Any:
    source = args[0] if args else None
    start = args[1] if len(args) > 1 else kwargs.get("start", 0)
    count = ev.iterated(source, node)
    items = list(source or ())
    if isinstance(start, _NUMBERS) and all(isinstance(i, _NUMBERS) for i in items):
        bits = max((abs(i).bit_length() for i in items if isinstance(i, int)), default=0)
        ev.budget.do(count * (bits // 30 + 1))
        return ev.whole(sum(items, start), node)
    if isinstance(start, str | bytes):
        raise PlanEvaluationError(f"{_text(node)}: sum() cannot add strings; use f-strings")
    # Lists or tuples: each addition is checked like a `+`, as each makes a new value.
    total = start
    for item in items:
        ev.budget.step()
        if isinstance(total, _SEQUENCES) and type(total) is type(item):
            total = ev.joined(total, item, node)
        else:
            total = total + item
    return total


def _call_str(ev: _Evaluator, node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if len(args) == 1 and not kwargs:
        value = args[0]
        if isinstance(value, str):
            return value
        ev.text_size(value, node)
        return ev.check_text(str(value), node)
    # str(data, encoding): decoding never makes more characters than there are bytes.
    if args and isinstance(args[0], bytes):
        ev.fits(node, 4 * len(args[0]))
    return ev.check_text(str(*args, **kwargs), node)


_Call = Callable[[_Evaluator, ast.Call, list[Any], dict[str, Any]], Any]
_CALLS: dict[str, _Call] = {
    **dict.fromkeys(("abs", "bool", "float", "int", "len", "round"), _call_number),
    **dict.fromkeys(("all", "any", "max", "min"), _call_scan),
    **dict.fromkeys(("dict", "list", "set", "sorted", "tuple"), _call_copy),
    **dict.fromkeys(("enumerate", "zip"), _call_pairs),
    "range": _call_range,
    "str": _call_str,
    "sum": _call_sum,
}
assert set(_CALLS) == set(ALLOWED_FUNCTIONS)


def _bind(target: ast.expr, value: Any) -> dict[str, Any]:
    if isinstance(target, ast.Name):
        return {target.id: value}
    if isinstance(target, ast.Tuple | ast.List):
        if not isinstance(value, _ITERABLE):
            raise PlanEvaluationError(f"cannot unpack {_describe_value(value)}")
        # Counted before it is unpacked: a long string would become as many strings.
        if len(value) != len(target.elts):
            raise PlanEvaluationError(
                f"cannot unpack {len(value)} item(s) into {len(target.elts)} name(s)"
            )
        items = list(value)
        scope: dict[str, Any] = {}
        for part, item in zip(target.elts, items, strict=True):
            scope.update(_bind(part, item))
        return scope
    raise PlanEvaluationError("a comprehension loops over plain names only")
