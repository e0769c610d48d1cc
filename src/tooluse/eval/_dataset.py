"""Evals over your own tasks: a `Dataset` of `Case`s, read from a YAML or JSONL file.

A case is a prompt, the calls it needs, and checks on the answer. Each case
becomes an eval `Task` (`CaseTask`), so the runner, the rows, the summary, the
plots, traces, the viewer and the Ray executor treat it as they treat the
built-in suites. The oracle answers a case with its expected calls and its
reference `answer` (or, without one, with text that passes its checks).

A case passes when its run completes, every expected call was made (the
arguments it lists equal, strings compared ignoring case and surrounding
spaces; arguments it does not list are free), no forbidden tool was called,
and every check holds.

The file format (``tooluse eval`` reads it; docs/evaluation.md shows it whole)::

    name: finance                          # optional: the file's stem
    tools: examples.finance.tools:toolbox  # optional: --tools gives it otherwise
    deps: examples.finance.tools:Ledger    # optional: made afresh for each run
    tasks:
      - id: checking-balance
        prompt: How much is in my checking account?
        calls: [{tool: balance, arguments: {account: checking}}]
        checks: [{number: 1250.0, tolerance: 0.005}]
        answer: Your checking account holds 1,250.00 USD.

A JSONL file holds one task per line, in the same shape.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import RunResult, Toolbox
from .._imports import import_target
from .._written import json_lines
from ..tools import Tool
from ._checks import Check, Contains, Number, Predicate, Regex, check_answer
from ._matching import maximum_matching
from ._metrics import call_metrics, values_equal
from ._oracle import statements_script
from ._task import BenchDataError, Call, OracleTurn, Score, Setup, Task, Turn

__all__ = [
    "TASK_FIELDS",
    "Case",
    "CaseTask",
    "Dataset",
    "ExpectedCall",
    "TaskFileError",
    "ToolsFactory",
    "load_dataset",
    "tools_factory",
]

#: Builds a fresh toolbox for one run of a case (tools may hold state, such as balances).
ToolsFactory = Callable[[], Toolbox]

TASK_FIELDS = (
    "id",
    "prompt",
    "calls",
    "forbid",
    "checks",
    "answer",
    "category",
    "max_rounds",
)
_FILE_FIELDS = ("name", "tools", "deps", "tasks")
_CALL_FIELDS = ("tool", "arguments", "unchecked")
_CHECK_KINDS = ("contains", "regex", "number", "predicate")
_CHECK_OPTIONS = {"contains": ("case_sensitive",), "number": ("tolerance",)}


class TaskFileError(BenchDataError):
    """A task file cannot be read: the message names the file, the line, the task and the field."""


@dataclass(frozen=True, slots=True)
class ExpectedCall:
    """A call a case needs: the arguments the oracle sends, less `unchecked` ones, must match.

    Arguments not listed at all are free too; list one under `unchecked` when
    the oracle needs a value for it but the model may choose its own (the
    expression given to a calculator).
    """

    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    unchecked: frozenset[str] = frozenset()

    @property
    def call(self) -> Call:
        """The call the oracle makes."""
        return Call(self.tool, dict(self.arguments))

    @property
    def checked(self) -> Call:
        """The call with only the arguments that are compared."""
        kept = {k: v for k, v in self.arguments.items() if k not in self.unchecked}
        return Call(self.tool, kept)


@dataclass(frozen=True, slots=True)
class Case:
    """One task of your own: the prompt, the calls it needs, checks on the answer.

    `calls` lists the calls needed (see `ExpectedCall`); `forbid` names
    tools the run must not call; `answer` is a reference answer the oracle
    gives (without one, it writes the text of the `contains` and `number`
    checks). `max_rounds` caps model requests (default 10).
    """

    prompt: str
    id: str = ""
    calls: tuple[ExpectedCall, ...] = ()
    checks: tuple[Check, ...] = ()
    forbid: tuple[str, ...] = ()
    answer: str | None = None
    category: str = ""
    max_rounds: int | None = None


@dataclass(frozen=True)
class Dataset:
    """Cases over one set of tools; `tasks()` makes them eval tasks for `Bench`.

    `tools` is a `Toolbox` (shared by every run) or a function returning a fresh
    one per run. `deps`, when given, is called for each run and its value is the
    run's dependencies (``agent.run(task, deps=...)``): what the tools that take a
    `RunContext` act on, made afresh so that no run sees another's changes.
    `name` labels the rows (their ``suite``).
    """

    name: str
    cases: tuple[Case, ...]
    tools: Toolbox | ToolsFactory
    #: Where the cases were read from, if from a file.
    path: Path | None = None
    deps: Callable[[], Any] | None = None

    def __post_init__(self) -> None:
        # A case without an id is named by its place, as in a file.
        cases = tuple(
            case if case.id else replace(case, id=str(i)) for i, case in enumerate(self.cases, 1)
        )
        object.__setattr__(self, "cases", cases)
        ids = [case.id for case in cases]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise BenchDataError(f"dataset {self.name!r}: repeated case ids {repeated}")

    @classmethod
    def from_file(
        cls, path: str | Path, tools: str | None = None, deps: str | None = None
    ) -> Dataset:
        """Read a task file (see the module docstring); `tools` and `deps` override the file's."""
        return load_dataset(Path(path), tools, deps)

    def toolbox(self) -> Toolbox:
        return self.tools if isinstance(self.tools, Toolbox) else self.tools()

    def tasks(self) -> list[Task]:
        """Every case as an eval `Task`, in order."""
        return [CaseTask(self, case) for case in self.cases]

    def categories(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(case.category for case in self.cases if case.category))


class CaseTask(Task):
    """A `Case` as an eval task: one turn, scored by its calls and checks."""

    def __init__(self, dataset: Dataset, case: Case) -> None:
        self.dataset = dataset
        self.case = case
        self.suite = dataset.name
        self.id = case.id
        self.category = case.category
        # Steps, for the plots that set accuracy against a task's size.
        self.width = len(case.calls) or None
        self.max_rounds = case.max_rounds or Task.max_rounds

    def setup(self) -> Setup:
        deps = self.dataset.deps() if self.dataset.deps is not None else None
        return Setup(turns=[Turn(self.case.prompt, self.dataset.toolbox())], deps=deps)

    def oracle(self, setup: Setup, convention: str) -> list[OracleTurn]:
        calls = [expected.call for expected in self.case.calls]
        script = statements_script(calls, setup.turns[0].tools) if calls else None
        return [
            OracleTurn(steps=[[c] for c in calls], script=script, answer=oracle_answer(self.case))
        ]

    def made_calls(self, runs: Sequence[RunResult]) -> list[Call]:
        """The calls the runs made, as the expected calls are compared with them."""
        return [Call(r.name, r.arguments) for run in runs for r in run.calls]

    def score(self, setup: Setup, runs: Sequence[RunResult]) -> Score:
        made = self.made_calls(runs)
        expected = [e.checked for e in self.case.calls]
        metrics = call_metrics(expected, made, fields=_listed_fields)
        if not runs:
            return metrics.score(correct=False, detail="no run")
        run = runs[-1]
        failures = []
        if run.status != "completed":
            failures.append(f"the run ended {run.status}" + (f": {run.error}" if run.error else ""))
        failures += [f"no call {_written(c)}" for c in missing_calls(expected, made)]
        failures += [
            f"called {name}, which the task forbids"
            for name in dict.fromkeys(c.tool for c in made if c.tool in self.case.forbid)
        ]
        failures += check_answer(self.case.checks, run.answer or "", run)
        return metrics.score(correct=not failures, detail="; ".join(failures) or None)


def oracle_answer(case: Case) -> str:
    """The case's reference answer, or text written to pass its checks."""
    if case.answer is not None:
        return case.answer
    samples = [sample for check in case.checks if (sample := check.sample()) is not None]
    return " ".join(samples) or "Done."


def _written(call: Call) -> str:
    arguments = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
    return f"{call.tool}({arguments})"


def _loose(value: Any) -> Any:
    """Strings case-folded and stripped, inside lists and mappings too."""
    if isinstance(value, str):
        return value.strip().casefold()
    if isinstance(value, list | tuple):
        return [_loose(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _loose(v) for k, v in value.items()}
    return value


def _agrees(expected: Call, made: Call, key: str) -> bool:
    return key in made.arguments and values_equal(
        _loose(expected.arguments[key]), _loose(made.arguments[key])
    )


def _listed_fields(expected: Call, made: Call) -> tuple[int, int]:
    """Argument accuracy over the fields the expected call lists (the others are free)."""
    keys = expected.arguments.keys()
    return sum(1 for key in keys if _agrees(expected, made, key)), len(keys)


def missing_calls(expected: Sequence[Call], made: Sequence[Call]) -> list[Call]:
    """Expected calls no made call answers, pairing each made call with one expected call."""
    compatible = [
        [m.tool == e.tool and all(_agrees(e, m, key) for key in e.arguments) for m in made]
        for e in expected
    ]
    paired = maximum_matching(compatible)
    return [call for i, call in enumerate(expected) if i not in paired]


# --- tools named as MODULE:ATTR -----------------------------------------------------


def tools_factory(target: str) -> ToolsFactory:
    """What ``MODULE:ATTR`` names, as a function giving the toolbox for one run.

    A `Toolbox`, a tool or a list of tools is shared by every run; a function
    without parameters is called for each run, so state such as balances starts
    over. Raises ValueError saying what is wrong.
    """
    value = import_target(target)
    if isinstance(value, Toolbox):
        return lambda: value
    if isinstance(value, Tool):
        box = Toolbox([value])
        return lambda: box
    if isinstance(value, list | tuple):
        box = Toolbox(value)
        return lambda: box
    if callable(value):
        if _required_parameters(value):
            # A plain typed function is one tool, as `tooluse run --tools` reads it.
            box = Toolbox([value])
            return lambda: box
        return lambda: _built(value, target)
    raise ValueError(f"{target} is a {type(value).__name__}, not a toolbox, tool or list of tools")


def _required_parameters(function: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.default is inspect.Parameter.empty for p in parameters)


def _built(factory: Callable[[], Any], target: str) -> Toolbox:
    made = factory()
    if isinstance(made, Toolbox):
        return made
    if isinstance(made, list | tuple):
        return Toolbox(made)
    raise BenchDataError(f"{target}() returned a {type(made).__name__}, not a Toolbox")


# --- reading a task file ------------------------------------------------------------


class _Bad(Exception):
    """A field is wrong: where (keys and indices from the task down) and why."""

    def __init__(self, where: Sequence[str | int], message: str) -> None:
        super().__init__(message)
        self.where = tuple(where)
        self.message = message


Locate = Callable[[Sequence[str | int]], int | None]
"""The line a path of keys and indices starts on, in the file as written."""


def load_dataset(path: Path, tools: str | None = None, deps: str | None = None) -> Dataset:
    """Read `path` (``.yaml``, ``.yml`` or ``.jsonl``) into a `Dataset`.

    `tools` and `deps` (``MODULE:ATTR``) override the file's ``tools`` and ``deps``.
    Any mistake raises `TaskFileError` naming the file, line, task and field.
    """
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".jsonl"):
        raise TaskFileError(f"{path}: a task file is .yaml, .yml or .jsonl, not {suffix or 'bare'}")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TaskFileError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    if suffix == ".jsonl":
        header: dict[str, Any] = {}
        entries = _jsonl_entries(path, text)
    else:
        header, entries = _yaml_entries(path, text)
    name = header.get("name", path.stem)
    if not isinstance(name, str) or not name.strip():
        raise TaskFileError(
            f"{path}:{header.get('name line', 1)}: name: must be a non-empty string"
        )
    target = tools or header.get("tools")
    if target is None:
        raise TaskFileError(
            f"{path}: no tools: pass --tools MODULE:ATTR, or add `tools: MODULE:ATTR` to the file"
        )
    if not isinstance(target, str):
        raise TaskFileError(f"{path}:{header.get('tools line', 1)}: tools: must be MODULE:ATTR")
    try:
        factory = tools_factory(target)
        box = factory()
    except (ValueError, BenchDataError) as exc:
        given = "--tools" if tools else f"{path}: tools"
        raise TaskFileError(f"{given}: {exc}") from None
    except Exception as exc:
        raise TaskFileError(
            f"{target}: building the tools failed: {type(exc).__name__}: {exc}"
        ) from exc
    deps_factory = _deps_factory(path, deps, header)
    cases: list[Case] = []
    seen: dict[str, int | None] = {}
    for index, (raw, locate) in enumerate(entries, 1):
        task_id = raw.get("id") if isinstance(raw, Mapping) else None
        label = f"task {task_id!r}" if isinstance(task_id, str | int) else f"task #{index}"
        try:
            case = _case(raw, index, box)
        except _Bad as bad:
            line = locate(bad.where)
            where = ".".join(_path_text(bad.where)) or "task"
            raise TaskFileError(f"{path}:{line or '?'}: {label}: {where}: {bad.message}") from None
        if case.id in seen:
            raise TaskFileError(
                f"{path}:{locate(['id']) or '?'}: {label}: id: repeats the id of the task "
                f"on line {seen[case.id] or '?'}"
            )
        seen[case.id] = locate([])
        cases.append(case)
    if not cases:
        raise TaskFileError(f"{path}: no tasks")
    return Dataset(
        name=name.strip(), cases=tuple(cases), tools=factory, path=path, deps=deps_factory
    )


def _deps_factory(
    path: Path, given: str | None, header: Mapping[str, Any]
) -> Callable[[], Any] | None:
    """What ``deps`` (or ``--deps``) names: a callable without parameters, made each run.

    It is called once here, so that one that cannot make its value fails now, by
    name, before anything has run.
    """
    target = given or header.get("deps")
    if target is None:
        return None
    where = "--deps" if given else f"{path}:{header.get('deps line', 1)}: deps"
    if not isinstance(target, str):
        raise TaskFileError(f"{where}: must be MODULE:ATTR")
    try:
        named = import_target(target)
    except ValueError as exc:
        raise TaskFileError(f"{where}: {exc}") from None
    if not callable(named) or _required_parameters(named):
        raise TaskFileError(
            f"{where}: {target} must be callable without arguments (a class or a function), "
            "to make each run's dependencies afresh"
        )
    factory: Callable[[], Any] = named
    try:
        factory()
    except Exception as exc:
        raise TaskFileError(
            f"{target}: making the dependencies failed: {type(exc).__name__}: {exc}"
        ) from exc
    return factory


def _path_text(where: Sequence[str | int]) -> list[str]:
    parts: list[str] = []
    for part in where:
        if isinstance(part, int) and parts:
            parts[-1] += f"[{part}]"
        else:
            parts.append(str(part))
    return parts


def _jsonl_entries(path: Path, text: str) -> list[tuple[Any, Locate]]:
    entries: list[tuple[Any, Locate]] = []
    for number, data in json_lines(text):
        if isinstance(data, json.JSONDecodeError):
            raise TaskFileError(f"{path}:{number}: not a JSON object: {data.msg}") from None
        entries.append((data, _at(number)))
    return entries


def _at(line: int) -> Locate:
    return lambda where: line


def _yaml_entries(path: Path, text: str) -> tuple[dict[str, Any], list[tuple[Any, Locate]]]:
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise TaskFileError(
            f"{path}: reading YAML task files needs PyYAML: pip install 'tooluse[eval]' "
            "(or write the tasks as JSONL, one JSON object a line)"
        ) from None
    try:
        root, data = _parsed(yaml, text, getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        # libyaml words some problems otherwise: the message is always PyYAML's own.
        try:
            root, data = _parsed(yaml, text, yaml.SafeLoader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{mark.line + 1}" if mark is not None else "?"
            problem = getattr(exc, "problem", None) or str(exc)
            raise TaskFileError(f"{path}:{where}: not valid YAML: {problem}") from None
    header: dict[str, Any] = {}
    tasks_node = root
    if isinstance(data, Mapping):
        unknown = [k for k in data if k not in _FILE_FIELDS]
        if unknown:
            raise TaskFileError(
                f"{path}:{_node_line(root, [unknown[0]]) or '?'}: unknown key {unknown[0]!r} "
                f"(a task file has {', '.join(_FILE_FIELDS)})"
            )
        header = {k: data[k] for k in ("name", "tools", "deps") if k in data}
        for key in ("name", "tools", "deps"):
            header[f"{key} line"] = _node_line(root, [key]) or 1
        pair = _child(root, "tasks")
        tasks_node = pair[1] if pair is not None else None
        data = data.get("tasks")
        if data is None:
            raise TaskFileError(f"{path}: no `tasks:` list")
    if not isinstance(data, list) or tasks_node is None:
        line = (tasks_node.start_mark.line + 1) if tasks_node is not None else 1
        raise TaskFileError(
            f"{path}:{line}: expected a list of tasks (or `tasks:` under name and tools)"
        )
    items = tasks_node.value

    def locator(item: Any) -> Locate:
        return lambda where: _node_line(item, where)

    return header, [(raw, locator(items[i])) for i, raw in enumerate(data)]


def _parsed(yaml: Any, text: str, loader_class: Any) -> tuple[Any, Any]:
    """The document's node tree (for the lines errors name) and its value, read once
    (libyaml's loader where PyYAML has it: the pure-Python one takes ten times longer)."""
    loader = loader_class(text)
    try:
        root = loader.get_single_node()
        return root, (loader.construct_document(root) if root is not None else None)
    finally:
        loader.dispose()


def _child(node: Any, key: str | int) -> Any:
    value = getattr(node, "value", None)
    if isinstance(key, int):
        if isinstance(value, list) and 0 <= key < len(value) and not isinstance(value[0], tuple):
            return value[key]
        return None
    if isinstance(value, list):
        for pair in value:
            if isinstance(pair, tuple) and getattr(pair[0], "value", None) == key:
                return pair
    return None


def _node_line(node: Any, where: Sequence[str | int]) -> int | None:
    """The line of the deepest node along `where` (a key's own line for a mapping entry)."""
    line = node.start_mark.line + 1 if node is not None else None
    for key in where:
        found = _child(node, key)
        if found is None:
            break
        if isinstance(found, tuple):  # a mapping entry: the key's line, then its value
            line = found[0].start_mark.line + 1
            node = found[1]
        else:
            node = found
            line = node.start_mark.line + 1
    return line


# --- one task ---------------------------------------------------------------------


def _case(raw: Any, index: int, box: Toolbox) -> Case:
    if not isinstance(raw, Mapping):
        raise _Bad([], f"must be a mapping of {', '.join(TASK_FIELDS)}, not {_kind(raw)}")
    unknown = [k for k in raw if k not in TASK_FIELDS]
    if unknown:
        raise _Bad([unknown[0]], f"unknown field (a task has {', '.join(TASK_FIELDS)})")
    task_id = raw.get("id", str(index))
    if isinstance(task_id, int) and not isinstance(task_id, bool):
        task_id = str(task_id)
    if not isinstance(task_id, str) or not task_id.strip():
        raise _Bad(["id"], "must be a non-empty string")
    prompt = raw.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise _Bad(["prompt"], "required: the task's text, a non-empty string")
    calls = tuple(_calls(raw.get("calls", []), box))
    forbid = tuple(_names(raw.get("forbid", []), box))
    checks = tuple(_checks(raw.get("checks", [])))
    if not calls and not checks:
        raise _Bad([], "needs `calls` or `checks` (or both): something to judge the run by")
    answer = raw.get("answer")
    if answer is not None and not isinstance(answer, str):
        raise _Bad(["answer"], f"must be a string, not {_kind(answer)}")
    category = raw.get("category", "")
    if not isinstance(category, str):
        raise _Bad(["category"], f"must be a string, not {_kind(category)}")
    max_rounds = raw.get("max_rounds")
    if max_rounds is not None and (
        not isinstance(max_rounds, int) or isinstance(max_rounds, bool) or max_rounds < 1
    ):
        raise _Bad(["max_rounds"], f"must be a positive integer, not {max_rounds!r}")
    return Case(
        prompt=prompt,
        id=task_id.strip(),
        calls=calls,
        checks=checks,
        forbid=forbid,
        answer=answer,
        category=category,
        max_rounds=max_rounds,
    )


def _kind(value: Any) -> str:
    names = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "empty"
    return names.get(type(value), f"a {type(value).__name__}")


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Bad([where], f"must be a list, not {_kind(value)}")
    return value


def _tool(box: Toolbox, name: Any, where: Sequence[str | int]) -> Tool:
    if not isinstance(name, str):
        raise _Bad(where, f"must be a tool's name, not {_kind(name)}")
    for candidate in box:
        if candidate.name == name:
            return candidate
    known = ", ".join(t.name for t in box)
    raise _Bad(where, f"no tool named {name!r} (the tools: {known})")


def _calls(value: Any, box: Toolbox) -> Iterable[ExpectedCall]:
    for i, item in enumerate(_list(value, "calls")):
        if not isinstance(item, Mapping):
            raise _Bad(
                ["calls", i], f"must be a mapping with tool and arguments, not {_kind(item)}"
            )
        extra = [k for k in item if k not in _CALL_FIELDS]
        if extra:
            raise _Bad(
                ["calls", i, extra[0]], f"unknown field (a call has {', '.join(_CALL_FIELDS)})"
            )
        if "tool" not in item:
            raise _Bad(["calls", i], "required: tool, the name of the tool to call")
        found = _tool(box, item["tool"], ["calls", i, "tool"])
        arguments = item.get("arguments", {})
        if not isinstance(arguments, Mapping):
            raise _Bad(["calls", i, "arguments"], f"must be a mapping, not {_kind(arguments)}")
        known = found.parameters.get("properties", {})
        for key in arguments:
            if key not in known:
                raise _Bad(
                    ["calls", i, "arguments", key],
                    f"{found.name} has no parameter {key!r} (it has: {', '.join(known) or 'none'})",
                )
        unchecked = item.get("unchecked", [])
        if not isinstance(unchecked, list) or not all(
            isinstance(k, str) and k in arguments for k in unchecked
        ):
            raise _Bad(["calls", i, "unchecked"], "must be a list of names of the call's arguments")
        yield ExpectedCall(found.name, dict(arguments), frozenset(unchecked))


def _names(value: Any, box: Toolbox) -> Iterable[str]:
    for i, item in enumerate(_list(value, "forbid")):
        yield _tool(box, item, ["forbid", i]).name


def _checks(value: Any) -> Iterable[Check]:
    for i, item in enumerate(_list(value, "checks")):
        where: list[str | int] = ["checks", i]
        if not isinstance(item, Mapping):
            raise _Bad(where, f"must be a mapping such as {{contains: text}}, not {_kind(item)}")
        kinds = [k for k in item if k in _CHECK_KINDS]
        if len(kinds) != 1:
            raise _Bad(where, f"must have exactly one of {', '.join(_CHECK_KINDS)}")
        kind = kinds[0]
        allowed = _CHECK_OPTIONS.get(kind, ())
        extra = [k for k in item if k != kind and k not in allowed]
        if extra:
            options = f" (a {kind} check takes {', '.join(allowed)})" if allowed else ""
            raise _Bad([*where, extra[0]], f"unknown option{options}")
        try:
            yield _check(kind, item)
        except _Bad as bad:
            raise _Bad([*where, *bad.where], bad.message) from None
        except ValueError as exc:
            raise _Bad([*where, kind], str(exc)) from None


def _check(kind: str, item: Mapping[str, Any]) -> Check:
    value = item[kind]
    if kind == "contains":
        texts = value if isinstance(value, list) else [value]
        if not texts or not all(isinstance(t, str) and t for t in texts):
            raise _Bad([kind], "must be a non-empty string or a list of them")
        sensitive = item.get("case_sensitive", False)
        if not isinstance(sensitive, bool):
            raise _Bad(["case_sensitive"], "must be true or false")
        return Contains(tuple(texts), case_sensitive=sensitive)
    if kind == "regex":
        if not isinstance(value, str) or not value:
            raise _Bad([kind], "must be a non-empty regular expression")
        return Regex(value)
    if kind == "number":
        number = _finite(value, kind)
        tolerance = _finite(item.get("tolerance", 0.0), "tolerance")
        if tolerance < 0:
            raise _Bad(["tolerance"], f"must be a number ≥ 0, not {item['tolerance']!r}")
        return Number(number, tolerance)
    if not isinstance(value, str):
        raise _Bad([kind], f"must be MODULE:FUNCTION, not {_kind(value)}")
    return Predicate(value)


def _finite(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _Bad([where], f"must be a number (no thousands separators), not {value!r}")
    return float(value)
