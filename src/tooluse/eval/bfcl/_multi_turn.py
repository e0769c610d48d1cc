"""BFCL multi-turn suites, run against BFCL's own executable backends and scored by its checker.

Each run gets fresh backend instances (GorillaFileSystem, TradingBot, …) loaded
with the entry's initial configuration; their public methods are the tools,
described by BFCL's function documents. Every user turn is one pass of the
agent loop over the conversation so far. The calls the run executed are handed,
turn by turn, to BFCL's ``multi_turn_checker``, which replays them on its own
instances and compares state and results with the ground truth's.

In ``miss_func`` entries some functions are held back until a later turn (BFCL
then says "I have updated some more functions you can choose from"); in
``miss_param`` entries a turn lacks a needed value and its ground truth is to
make no call.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import RunResult, Tool, Toolbox
from ..._syntax import CallSyntaxError, parse_python_calls
from .._metrics import call_metrics
from .._oracle import statements_script
from .._task import BenchDataError, Call, OracleTurn, Score, Setup, Task, Turn
from ._single_turn import BrokenTask, bfcl_parameters, data_dir, read_jsonl, read_lines

__all__ = ["MULTI_TURN_CATEGORIES", "BfclMultiTurnTask", "multi_turn_tasks"]

MULTI_TURN_CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
_VERSION = "BFCL_v4"
_CONFIG = "bfcl_eval.constants.executable_backend_config"
_UTILS = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils"
_CHECKER = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker"
_PROMPTS = "bfcl_eval.constants.default_prompts"
# BFCL's limit on model steps per turn.
_STEPS_PER_TURN = 20
_NO_CALL_ANSWER = (
    "I can't do that with what I have: please give me the missing detail, or a function "
    "that can do it."
)


def _bfcl(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise BenchDataError(
            f"cannot import {module} ({exc}); install bfcl-eval with "
            "pip install --no-deps bfcl-eval==2026.3.23 (MathAPI also needs mpmath)"
        ) from exc


def _as_bfcl_text(value: Any) -> str:
    """A method's return value as BFCL's inference loop shows it to a model."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def _backend_tool(doc: Mapping[str, Any], method: Callable[..., Any]) -> Tool:
    # An async tool that never awaits runs to completion in call order, so calls
    # sent together act on the backend one after another, as BFCL executes them.
    # The backends keep references to what they are given (a tweet's mention
    # list grows later); a copy keeps the run's record of the call as it was made.
    async def call(**arguments: Any) -> str:
        return _as_bfcl_text(method(**copy.deepcopy(arguments)))

    return Tool.from_schema(
        str(doc["name"]),
        str(doc.get("description", "")),
        bfcl_parameters(doc.get("parameters", {})),
        call,
    )


@dataclass(slots=True)
class _Backends:
    instances: dict[str, Any]
    methods: dict[str, Callable[..., Any]] = field(default_factory=dict)


def _load_docs(directory: Path, classes: Sequence[str]) -> list[dict[str, Any]]:
    files = _bfcl(_CONFIG).MULTI_TURN_FUNC_DOC_FILE_MAPPING
    docs: list[dict[str, Any]] = []
    for class_name in classes:
        path = directory / "multi_turn_func_doc" / files[class_name]
        for _, item in _read_docs(path):
            if isinstance(item, BenchDataError):
                raise item
            docs.append(item)
    return docs


def _read_docs(path: Path) -> list[tuple[int, dict[str, Any] | BenchDataError]]:
    return list(read_lines(path))


def parse_call(text: str, methods: Mapping[str, Callable[..., Any]]) -> Call:
    """``"mv(source='a', destination='b')"`` as a call with named arguments.

    Positional arguments are named from the backend method's signature.
    """
    parameters = {name: list(inspect.signature(m).parameters) for name, m in methods.items()}
    try:
        calls = parse_python_calls(text.strip(), parameters=parameters)
    except CallSyntaxError as exc:
        raise BenchDataError(f"not a call to a backend method: {text!r} ({exc})") from None
    if len(calls) != 1 or "." in calls[0][0]:
        raise BenchDataError(f"not a function call: {text!r}")
    name, arguments = calls[0]
    return Call(name, {k: _json_value(v) for k, v in arguments.items()})


def _json_value(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


def call_text(name: str, arguments: Mapping[str, Any]) -> str:
    """A call in the form BFCL's checker executes: ``name(a='x',b=1)``."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"


class BfclMultiTurnTask(Task):
    """One BFCL multi-turn entry."""

    suite = "bfcl"

    def __init__(self, entry: dict[str, Any], answer: list[list[str]], directory: Path) -> None:
        self.entry = entry
        self.answer = answer
        self.directory = directory
        self.id = str(entry["id"])
        self.category = self.id.rsplit("_", 1)[0]
        longest = max((len(turn) for turn in answer), default=0)
        # Room for the truth made one call per message, and BFCL's own step limit.
        self.max_rounds = max(_STEPS_PER_TURN + 1, longest + 2)

    @property
    def _long_context(self) -> bool:
        return "long_context" in self.category

    def _backends(self) -> _Backends:
        config = _bfcl(_CONFIG)
        initial = self.entry.get("initial_config", {})
        backends = _Backends({})
        for class_name in self.entry["involved_classes"]:
            module = _bfcl(config.CLASS_FILE_PATH_MAPPING[class_name])
            instance = getattr(module, class_name)()
            if class_name not in config.STATELESS_CLASSES:
                instance._load_scenario(
                    copy.deepcopy(initial.get(class_name, {})), long_context=self._long_context
                )
            backends.instances[class_name] = instance
            # A later class's method of the same name wins, as in BFCL.
            for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not name.startswith("_"):
                    backends.methods[name] = method
        return backends

    def setup(self) -> Setup:
        backends = self._backends()
        docs = _load_docs(self.directory, self.entry["involved_classes"])
        missed: dict[int, list[str]] = {
            int(turn): list(names) for turn, names in self.entry.get("missed_function", {}).items()
        }
        held_back = {name for names in missed.values() for name in names}
        by_name = {str(d["name"]): d for d in docs}
        available = [name for name in by_name if name not in held_back]
        turns: list[Turn] = []
        prompt = _bfcl(_PROMPTS).DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC
        for index, messages in enumerate(self.entry["question"]):
            added = missed.get(index, [])
            available.extend(added)
            tools = Toolbox(
                _backend_tool(by_name[name], backends.methods[name])
                for name in available
                if name in backends.methods
            )
            if added:
                text = prompt
            else:
                text = "\n\n".join(str(m["content"]) for m in messages if m.get("role") == "user")
            turns.append(Turn(text, tools, added=tuple(added)))
        return Setup(turns=turns, state=backends)

    def _truth(self, setup: Setup) -> list[list[Call]]:
        backends: _Backends = setup.state
        return [[parse_call(text, backends.methods) for text in turn] for turn in self.answer]

    def oracle(self, setup: Setup, convention: str) -> list[OracleTurn]:
        out = []
        for turn, truth in zip(setup.turns, self._truth(setup), strict=True):
            # A few ground truths call a function that this turn does not offer
            # yet; no model could make that call through the runtime.
            calls = [call for call in truth if call.tool in turn.tools]
            if not calls:
                out.append(OracleTurn(steps=[], script=None, answer=_NO_CALL_ANSWER))
                continue
            out.append(
                OracleTurn(
                    steps=[[call] for call in calls],
                    script=statements_script(calls, turn.tools),
                    answer="Done.",
                )
            )
        return out

    def score(self, setup: Setup, runs: Sequence[RunResult]) -> Score:
        expected = [call for turn in self._truth(setup) for call in turn]
        made = [Call(c.name, c.arguments) for run in runs for c in run.calls]
        metrics = call_metrics(expected, made)
        score = metrics.score(correct=False)
        unfinished = len(runs) < len(self.answer) or any(
            run.status in ("cancelled", "error", "max_rounds", "cycle") for run in runs
        )
        if unfinished:
            score.detail = f"force-terminated: {len(runs)} of {len(self.answer)} turns finished"
            return score
        verdict = self._check([_steps(run) for run in runs])
        score.correct = bool(verdict.get("valid"))
        if not score.correct:
            message = f"{verdict.get('error_type')}: {verdict.get('error_message')}"
            score.detail = message[:500]
        return score

    def _check(self, decoded: list[list[list[str]]]) -> dict[str, Any]:
        checker = _bfcl(_CHECKER).multi_turn_checker
        # BFCL caches backend instances by model name and entry id in a module
        # global; a fresh name per check keeps checks independent of each other.
        model_name = f"tooluse_{uuid.uuid4().hex}"
        entry = {
            "id": self.id,
            "initial_config": self.entry.get("initial_config", {}),
            "involved_classes": self.entry["involved_classes"],
        }
        try:
            result: dict[str, Any] = checker(decoded, self.answer, entry, self.category, model_name)
        finally:
            _forget_instances(model_name)
        return result


def _steps(run: RunResult) -> list[list[str]]:
    """The run's executed calls as BFCL call strings, one list per model round."""
    steps: dict[int, list[str]] = {}
    for call in run.calls:
        steps.setdefault(call.round, []).append(call_text(call.name, call.arguments))
    return [steps[r] for r in sorted(steps)]


def _forget_instances(model_name: str) -> None:
    namespace = vars(_bfcl(_UTILS))
    prefix = re.sub(r"[-./:]", "_", model_name)
    for key in [k for k in namespace if k.startswith(prefix)]:
        del namespace[key]


def multi_turn_tasks(
    categories: Sequence[str], *, directory: Path | None = None, limit: int | None = None
) -> list[Task]:
    """Tasks for the given multi-turn categories (``limit``: the first N of each)."""
    where = directory or data_dir()
    return [task for category in categories for task in _category(category, where, limit)]


def _category(category: str, where: Path, limit: int | None) -> list[Task]:
    """One category's tasks: a broken entry (or answer) stands as a `BrokenTask`."""
    name = f"{_VERSION}_{category}.json"
    tasks: list[Task] = []
    try:
        answers: dict[str, Any] = {}
        for number, item in read_jsonl(where / "possible_answer" / name):
            if isinstance(item, BenchDataError):
                tasks.append(BrokenTask("bfcl", f"{category}:answer-line-{number}", category, item))
                continue
            answers[str(item["id"])] = item.get("ground_truth")
        rows = list(read_jsonl(where / name))
    except BenchDataError as exc:
        return [*tasks, BrokenTask("bfcl", f"{category}:file", category, exc)]
    for number, item in rows[:limit]:
        if isinstance(item, BenchDataError):
            tasks.append(BrokenTask("bfcl", f"{category}:line-{number}", category, item))
            continue
        entry_id = str(item["id"])
        answer = answers.get(entry_id)
        if not isinstance(answer, list) or len(answer) != len(item.get("question", [])):
            error = BenchDataError(f"{entry_id}: no ground truth with one list per turn")
            tasks.append(BrokenTask("bfcl", entry_id, category, error))
            continue
        tasks.append(BfclMultiTurnTask(item, answer, where))
    return tasks
