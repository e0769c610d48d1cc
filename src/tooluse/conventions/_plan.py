"""The plan convention: the whole chain of calls in one reply, placeholders filled by the runtime.

Chain-of-Abstraction (Gao et al. 2024) has the model write its reasoning once,
with placeholders where tool results go; LLMCompiler (Kim et al. 2024) runs
such a graph of calls with independent calls in parallel. Here a plan is a few
lines of Python assignments, a syntax small models already write well::

    rate = get_exchange_rate(base="USD", target="EUR")
    price = convert(amount=100, rate=rate["rate"])
    result = price <= 85

Each line is a step: a tool call whose arguments may use earlier steps' values
(``rate["rate"]``, ``rate.rate``), a map of one tool over a list
(``stock = [get_stock(sku=s) for s in skus]``), or a value computed from
earlier steps. The last line is the plan's result. The runtime reads the whole
plan and checks it before anything runs (unknown tools, arguments, names with
no step behind them, steps used before they are defined), then runs each step
as soon as the steps it uses are done, independent ones together.

Only a small, side-effect-free part of Python is evaluated, on the host, by
`evaluate`: literals, names of steps, indexing, arithmetic, comparisons,
comprehensions, f-strings and a few builtins (`ALLOWED_FUNCTIONS`).
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._exceptions import InvalidCallError
from .._records import names_handle
from .._syntax import dotted
from ..models import ModelResponse
from ..tools import StubSignature, Tool, Toolbox
from ..tools._validate import ArgumentChecker, ArgumentsError
from ._base import (
    Answer,
    Convention,
    Interpretation,
    Plan,
    Prepared,
    Retry,
    example_and_finish,
    system_text,
    written_reply,
)
from ._per_run import PerRun
from ._plan_eval import ALLOWED_FUNCTIONS, PlanEvaluationError, evaluate
from ._plan_program import PlanProgram, PlanStep

__all__ = [
    "ALLOWED_FUNCTIONS",
    "MAX_STEPS",
    "Plan",
    "PlanConvention",
    "PlanError",
    "PlanEvaluationError",
    "PlanProgram",
    "PlanStep",
    "evaluate",
    "parse_plan",
]

#: Steps one plan may hold.
MAX_STEPS = 200
PROMPT = """\
Answer with a plan in one ```plan block: one step a line, `name = function(arg=value)`, \
calling the functions below. A step may use earlier steps' results by name \
(`b = {example}(x=a["id"])`); `[f(x=v) for v in a]` calls f once per item of a. Never type \
in results. The last line is the result, e.g. `total = sum(b)`. {finish}

```python
{stubs}```"""

FINISH = "You then see it; reply with the answer in plain text."
#: With an output type: how the run ends, and the note for a reply in text.
OUTPUT_FINISH = (
    "End with a step that passes the answer to {name}, e.g. `done = {name}(...)`: a reply "
    "in plain text does not end the task."
)
OUTPUT_NOTE = (
    "Your reply was plain text, but this task ends only with a plan step that calls "
    "{name}: send a ```plan block that gives it your answer."
)

_FENCE = re.compile(r"```[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)(?:```|\Z)", re.DOTALL)
_PLAN_LANGS = {"", "plan", "python", "py", "python3"}
_STEP_LINE = re.compile(r"^\s*[A-Za-z_]\w*\s*=\s*\[?\s*(?:tools\.)?(?P<fn>[A-Za-z_][\w.]*)\s*\(")


class PlanError(InvalidCallError, ValueError):
    """A plan that cannot run as written; nothing of it was run.

    `line` is 1-based within the plan; `step` names the step (None for the plan as a whole).
    """

    def __init__(self, message: str, line: int | None = None, step: str | None = None) -> None:
        super().__init__(message, line, step)
        self.message = message
        self.line = line
        self.step = step

    def __str__(self) -> str:
        where = []
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.step is not None:
            where.append(f"step {self.step}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


# --- reading a reply ------------------------------------------------------------------


def plan_text(text: str, functions: Iterable[str]) -> str | None:
    """The plan in a reply, or None when the reply is prose (a final answer).

    A fenced block is the plan; without one, a reply any line of which assigns
    a tool call is read whole as a plan, so prose around it is reported, not dropped.
    """
    blocks = [m.group("body") for m in _FENCE.finditer(text) if m.group("lang") in _PLAN_LANGS]
    if blocks:
        return "\n".join(b.strip("\n") for b in blocks) + "\n"
    known = set(functions)
    for line in text.splitlines():
        match = _STEP_LINE.match(line)
        if match and match.group("fn").removeprefix("tools.") in known:
            return text.strip() + "\n"
    return None


class _Names:
    """How a plan may name each tool, and its parameters."""

    def __init__(self, tools: Toolbox) -> None:
        self.tools = tools
        self.signatures: dict[str, StubSignature] = {}
        self.by_written: dict[str, str] = {}
        for signature in tools.stub_signatures():
            self.signatures[signature.tool] = signature
            self.by_written[signature.function] = signature.tool
            self.by_written.setdefault(signature.tool, signature.tool)

    def tool_of(self, func: ast.expr) -> str | None:
        written = dotted(func)
        if written is None:
            return None
        written = written.removeprefix("tools.")
        return self.by_written.get(written)

    def closest(self, written: str) -> list[str]:
        return difflib.get_close_matches(written, list(self.by_written), n=2, cutoff=0.6)


def parse_plan(code: str, tools: Toolbox) -> PlanProgram:
    """Read and check a plan against `tools`; `PlanError` says what is wrong, and where."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise PlanError(
            f"this is not a plan: {exc.msg}. Every line must be a step such as "
            "`a = tool(x=1)`; write any explanation outside the ```plan block",
            exc.lineno,
        ) from None
    except (RecursionError, MemoryError):
        # Python's parser gives up on deep nesting with these rather than a SyntaxError.
        raise PlanError(
            "the plan is nested too deeply to read: split long expressions into steps"
        ) from None
    body = [s for s in tree.body if not _skippable(s)]
    if not body:
        raise PlanError("the plan has no steps")
    if len(body) > MAX_STEPS:
        raise PlanError(
            f"a plan holds at most {MAX_STEPS} steps and this one has {len(body):,}: map one "
            "tool over a list in a single step (`[f(x=v) for v in values]`) instead"
        )
    names = _Names(tools)
    lines = code.splitlines()
    assigned: dict[str, int] = {}
    for statement in body:
        if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
            target = statement.targets[0].id
            if target in assigned:
                raise PlanError(
                    f"{target} is assigned twice (lines {assigned[target]} and "
                    f"{statement.lineno}); give each step its own name",
                    statement.lineno,
                    target,
                )
            assigned[target] = statement.lineno
    steps: list[PlanStep] = []
    for index, statement in enumerate(body):
        last = index == len(body) - 1
        step = _step(statement, last=last, names=names, lines=lines)
        needs = _needs(
            step, statement, defined=[s.name for s in steps], assigned=assigned, body=body
        )
        steps.append(dataclasses.replace(step, needs=needs))
    if not any(s.kind != "value" for s in steps):
        raise PlanError(
            "this plan calls no tool, so every value in it was typed in: call the tools that "
            "look the facts up, or, if you already know the answer, reply in plain text"
        )
    return PlanProgram(code, tuple(steps))


def _skippable(statement: ast.stmt) -> bool:
    """``import tools`` and ``pass``: harmless lines copied from the code convention."""
    if isinstance(statement, ast.Import | ast.ImportFrom | ast.Pass):
        return True
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)


def _step(statement: ast.stmt, *, last: bool, names: _Names, lines: list[str]) -> PlanStep:
    line = statement.lineno
    text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    if isinstance(statement, ast.Assign):
        if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
            raise PlanError("assign each step to one plain name, such as `a = ...`", line)
        name = statement.targets[0].id
        value = statement.value
    elif isinstance(statement, ast.Expr) and last:
        name, value = "result", statement.value
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "print"
            and len(value.args) == 1
            and not value.keywords
        ):
            value = value.args[0]
    else:
        kind = type(statement).__name__.lower()
        raise PlanError(
            f"a plan holds only steps such as `a = tool(x=1)`, not a `{kind}` statement: "
            "loops become `[tool(x=v) for v in values]`, choices become `a if c else b`",
            line,
        )
    if isinstance(value, ast.Call) and names.tool_of(value.func) is not None:
        tool = names.tool_of(value.func)
        assert tool is not None
        arguments = _arguments(value, tool, names, name=name, line=line)
        return PlanStep(name, line, "call", text, (), tool=tool, arguments=arguments)
    if (
        isinstance(value, ast.ListComp)
        and isinstance(value.elt, ast.Call)
        and names.tool_of(value.elt.func) is not None
    ):
        return _map_step(value, name=name, line=line, text=text, names=names)
    _check_expression(value, names, name=name, line=line)
    return PlanStep(name, line, "value", text, (), source=value)


def _map_step(value: ast.ListComp, *, name: str, line: int, text: str, names: _Names) -> PlanStep:
    call = value.elt
    assert isinstance(call, ast.Call)
    tool = names.tool_of(call.func)
    assert tool is not None
    if len(value.generators) != 1 or value.generators[0].is_async:
        raise PlanError("a map step has exactly one `for` clause", line, name)
    generator = value.generators[0]
    if not isinstance(generator.target, ast.Name):
        raise PlanError("a map step loops over one name: `[f(x=v) for v in values]`", line, name)
    if len(generator.ifs) > 1:
        raise PlanError("a map step takes at most one `if` condition", line, name)
    _check_expression(generator.iter, names, name=name, line=line)
    condition = generator.ifs[0] if generator.ifs else None
    if condition is not None:
        _check_expression(condition, names, name=name, line=line)
    arguments = _arguments(call, tool, names, name=name, line=line)
    return PlanStep(
        name,
        line,
        "map",
        text,
        (),
        tool=tool,
        arguments=arguments,
        variable=generator.target.id,
        source=generator.iter,
        condition=condition,
    )


def _arguments(
    call: ast.Call, tool_name: str, names: _Names, *, name: str, line: int
) -> tuple[tuple[str, ast.expr], ...]:
    signature = names.signatures[tool_name]
    tool = names.tools.get(tool_name)
    assert tool is not None
    by_python = dict(signature.params)
    schema_names = {schema for _, schema in signature.params}
    out: dict[str, ast.expr] = {}
    if len(call.args) > signature.positional:
        raise PlanError(
            f"{signature.function} takes at most {signature.positional} argument(s) by "
            f"position and was given {len(call.args)}; name them, as in "
            f"{signature.function}({', '.join(p + '=...' for p, _ in signature.params[:2])})",
            line,
            name,
        )
    for (_, schema), expression in zip(signature.params, call.args, strict=False):
        if isinstance(expression, ast.Starred):
            raise PlanError("`*` unpacking is not allowed in a plan", line, name)
        out[schema] = expression
    for keyword in call.keywords:
        if keyword.arg is None:
            raise PlanError("`**` unpacking is not allowed in a plan", line, name)
        found = by_python.get(keyword.arg, keyword.arg if keyword.arg in schema_names else None)
        if found is None:
            close = difflib.get_close_matches(keyword.arg, list(by_python), n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            known = ", ".join(by_python) or "none"
            raise PlanError(
                f"{signature.function} has no parameter '{keyword.arg}'{hint}; its parameters: "
                f"{known}",
                line,
                name,
            )
        if found in out:
            raise PlanError(f"argument '{keyword.arg}' is given twice", line, name)
        out[found] = keyword.value
    for expression in out.values():
        _check_expression(expression, names, name=name, line=line)
    missing = [p for p in tool.required if p not in out]
    if missing:
        python = {schema: py for py, schema in signature.params}
        raise PlanError(
            f"{signature.function} is missing required argument(s): "
            f"{', '.join(python.get(m, m) for m in missing)}",
            line,
            name,
        )
    _check_literals(tool, out, name=name, line=line)
    return tuple(out.items())


def _check_literals(tool: Tool, arguments: Mapping[str, ast.expr], *, name: str, line: int) -> None:
    """Check the arguments written as literals against the schema, before anything runs."""
    literal: dict[str, Any] = {}
    for key, expression in arguments.items():
        try:
            literal[key] = ast.literal_eval(expression)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return  # uses a step's value: checked when the step runs
    if names_handle(literal):
        return  # a handle stands for a stored value: checked when the step runs, resolved
    try:
        ArgumentChecker(tool.parameters).check(literal)
    except ArgumentsError as exc:
        raise PlanError(f"invalid call to {tool.name}: {exc}", line, name) from None
    except Exception:
        # The tool's own schema fails (a $ref that does not resolve, say): the step's
        # call is refused when it runs, and recorded with the reason, like any call.
        return


_ALLOWED_NODES = (
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.Store,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.Subscript,
    ast.Slice,
    ast.Attribute,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.JoinedStr,
    ast.FormattedValue,
    ast.Call,
    ast.keyword,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.comprehension,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
    ast.expr_context,
)


def _check_expression(node: ast.expr, names: _Names, *, name: str, line: int) -> None:
    for child in ast.walk(node):
        if not isinstance(child, _ALLOWED_NODES):
            raise PlanError(
                f"`{type(child).__name__}` is not allowed in a plan; use steps, indexing, "
                "arithmetic, comprehensions and " + ", ".join(ALLOWED_FUNCTIONS),
                line,
                name,
            )
        if isinstance(child, ast.Attribute) and child.attr.startswith("_"):
            raise PlanError(f"field names starting with '_' are not allowed: {child.attr}", line)
        if isinstance(child, ast.Call):
            if names.tool_of(child.func) is not None:
                raise PlanError(
                    "a tool call must be a step of its own line: write `a = tool(...)` and "
                    "then use `a` (for one call per item, `a = [tool(x=v) for v in values]`)",
                    line,
                    name,
                )
            if not (isinstance(child.func, ast.Name) and child.func.id in ALLOWED_FUNCTIONS):
                written = dotted(child.func) or ast.unparse(child.func)
                close = names.closest(written)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise PlanError(
                    f"there is no function {written!r}{hint}; a plan calls the tools listed "
                    f"and {', '.join(ALLOWED_FUNCTIONS)}",
                    line,
                    name,
                )


def _free_names(node: ast.AST) -> set[str]:
    """Names an expression reads that it does not bind itself (in comprehensions).

    The name a call is made through (``sum`` in ``sum(a)``) is a function, not a value.
    """
    bound: set[str] = set()
    functions: set[int] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.comprehension):
            bound.update(n.id for n in ast.walk(child.target) if isinstance(n, ast.Name))
        if isinstance(child, ast.Call):
            functions.update(id(n) for n in ast.walk(child.func))
    return {
        child.id
        for child in ast.walk(node)
        if isinstance(child, ast.Name)
        and isinstance(child.ctx, ast.Load)
        and id(child) not in functions
        and child.id not in bound
    }


def _needs(
    step: PlanStep,
    statement: ast.stmt,
    *,
    defined: list[str],
    assigned: Mapping[str, int],
    body: Sequence[ast.stmt],
) -> tuple[str, ...]:
    """The earlier steps `step` uses; `PlanError` for any other name it reads."""
    value = statement.value if isinstance(statement, ast.Assign | ast.Expr) else statement
    free = _free_names(value)
    needs: list[str] = []
    for used in sorted(free):
        if used in defined:
            needs.append(used)
            continue
        if used == step.name:
            raise PlanError(f"{step.name} uses its own value", step.line, step.name)
        if used in assigned:
            if _reaches(used, step.name, assigned, body):
                raise PlanError(
                    f"a cycle: {step.name} uses {used} (line {assigned[used]}), which in "
                    f"turn needs {step.name}; a plan's steps must form a chain without loops",
                    step.line,
                    step.name,
                )
            raise PlanError(
                f"{step.name} uses {used}, which is only defined later, at line "
                f"{assigned[used]}: a step may use only the steps above it",
                step.line,
                step.name,
            )
        known = ", ".join(defined) or "none yet"
        raise PlanError(
            f"{step.name} uses {used!r}, which no step above defines (steps so far: {known}); "
            "results must come from steps, never typed in",
            step.line,
            step.name,
        )
    return tuple(needs)


def _reaches(start: str, goal: str, assigned: Mapping[str, int], body: Sequence[ast.stmt]) -> bool:
    """Whether step `start` depends, directly or not, on step `goal`."""
    by_name: dict[str, ast.stmt] = {}
    for statement in body:
        if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
            by_name[statement.targets[0].id] = statement
    seen: set[str] = set()
    todo = [start]
    while todo:
        current = todo.pop()
        if current == goal:
            return True
        if current in seen or current not in by_name:
            continue
        seen.add(current)
        statement = by_name[current]
        assert isinstance(statement, ast.Assign)
        todo.extend(n for n in _free_names(statement.value) if n in assigned)
    return False


# --- the convention ---------------------------------------------------------------------


class PlanConvention(Convention):
    """Chain-of-Abstraction: the model writes every call at once, with placeholders."""

    name = "plan"
    caller = "model"

    def __init__(self) -> None:
        self._tools: PerRun[Toolbox] = PerRun("the plan convention")

    def prompt(self, tools: Toolbox) -> str:
        example, finish = example_and_finish(tools, FINISH, OUTPUT_FINISH)
        return PROMPT.format(stubs=tools.stub_module(), example=example, finish=finish)

    def prepare(self, tools: Toolbox, system_prompt: str | None) -> Prepared:
        self._tools.set(tools)
        return written_reply(system_text(system_prompt, self.prompt(tools)), tools, OUTPUT_NOTE)

    def interpret(self, response: ModelResponse) -> Interpretation:
        text = response.content or ""
        tools = self._tools.get()
        if response.tool_calls and not text.strip():
            return Retry("Tools are not called natively here: send a plan in one ```plan block.")
        functions = {s.function for s in tools.stub_signatures()} | set(tools.names)
        code = plan_text(text, functions)
        if code is None:
            if not text.strip():
                return Retry("Your last reply was empty. Send a ```plan block, or your answer.")
            return Answer(text)
        try:
            program = parse_plan(code, tools)
        except PlanError as exc:
            return Retry(plan_feedback(code, exc))
        return Plan(program)

    def read_plan(self, code: str) -> PlanProgram:
        """A plan's code read over this run's tools (a paused plan, resumed); `PlanError` if not."""
        return parse_plan(code, self._tools.get())


def plan_feedback(code: str, error: PlanError) -> str:
    """What the model is told about a plan that cannot run: where, why, and that nothing ran."""
    lines = code.splitlines()
    shown = ""
    if error.line is not None and 0 < error.line <= len(lines):
        shown = f"\n    {lines[error.line - 1].strip()}"
    return (
        f"Your plan cannot run ({error}).{shown}\n"
        "Nothing was run. Send the corrected plan in one ```plan block."
    )
