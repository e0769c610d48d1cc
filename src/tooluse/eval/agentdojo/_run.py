"""Running AgentDojo's tasks through tooluse, scored by AgentDojo's own checks.

Each run goes through AgentDojo's ``TaskSuite.run_task_with_pipeline``: it
loads the environment with the attack's injections, lets the task set it up,
hands our pipeline the prompt, the runtime and the environment, and scores
what comes back with the user task's ``utility`` and the injection task's
``security`` (or their ``…_from_traces`` forms). Our pipeline is a tooluse
`Agent` over the suite's tools (see `_tools`), in one convention; it returns
the conversation as AgentDojo reads it: one assistant message per executed
call, its result, and the final answer. Calls the runtime did not execute
(refused, denied, answered from a script's ledger) are not in that trace.

A run without an attack uses the suite's default injection vectors, as
AgentDojo's ``benchmark_suite_without_injections`` does; a run with one
uses the injections AgentDojo's attack builds for that (user task,
injection task) pair.
"""

from __future__ import annotations

import functools
import json
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import Agent, ProvenancePolicy, RunResult, UsageError
from ...models import Model, resolve_model
from ...sandbox import Sandbox
from ...tools import Toolbox
from .._config import check_choices
from .._row import read_results
from .._task import Call
from ._models import GroundTruthModel, Instruction
from ._row import AgentDojoRow
from ._suites import DEFAULT_VERSION, SUITE_NAMES, Suite, load_suites
from ._tools import ToolFacts, build_toolbox, tool_facts

__all__ = [
    "ATTACK",
    "CONVENTIONS",
    "DEFENSES",
    "AgentDojoBench",
    "AgentDojoConfig",
    "read_agentdojo_rows",
]

CONVENTIONS = ("json", "code")
DEFENSES = ("none", "provenance", "scope", "provenance+scope")
SCRIPTED = ("oracle", "obedient")
#: AgentDojo's standard attack (Debenedetti et al. 2024).
ATTACK = "important_instructions"
RESULTS = "results.jsonl"
#: Where `AgentDojoConfig.traces` puts the runs' traces, under the output directory.
TRACES = "traces"


@dataclass(frozen=True, slots=True)
class AgentDojoConfig:
    """One ``tooluse bench agentdojo`` invocation.

    `model` is ``oracle``, ``obedient`` or any model spec the CLI accepts.
    `limit` keeps the first N user tasks of each suite. Each user task runs
    once without an attack and once per injection task of its suite with
    `attack` (``attacks=False`` skips those).
    """

    out: Path
    model: str = "oracle"
    defense: str = "none"
    conventions: tuple[str, ...] = CONVENTIONS
    suites: tuple[str, ...] = SUITE_NAMES
    limit: int | None = None
    attack: str = ATTACK
    attacks: bool = True
    version: str = DEFAULT_VERSION
    base_url: str | None = None
    max_rounds: int = 40
    #: The provenance policy's shortest tested value, instead of its default.
    min_chars: int | None = None
    #: Write each run's trace (every request, reply and call) to
    #: ``out/traces/CONVENTION/SUITE/USER_TASK[--INJECTION_TASK].jsonl``.
    traces: bool = False

    def __post_init__(self) -> None:
        check_choices("conventions", self.conventions, CONVENTIONS, hint="AgentDojo runs in")
        if self.defense not in DEFENSES:
            raise UsageError(f"unknown defense {self.defense!r}; use {' or '.join(DEFENSES)}")
        check_choices("suites", self.suites, SUITE_NAMES)
        if self.limit is not None and self.limit < 1:
            raise UsageError("--limit must be at least 1")
        if self.max_rounds < 1:
            raise UsageError("--max-rounds must be at least 1")
        if self.min_chars is not None and (self.min_chars < 1 or "provenance" not in self.defense):
            raise UsageError("--min-chars takes a positive number, with a provenance defense")

    @property
    def defense_label(self) -> str:
        """How rows name the defense: its name, and any setting other than the default."""
        if self.min_chars is not None:
            return f"{self.defense} min_chars={self.min_chars}"
        return self.defense


def read_agentdojo_rows(path: Path) -> list[AgentDojoRow]:
    """The rows of a results file, the last one winning for each key; other lines skipped."""
    return read_results(path, AgentDojoRow.from_json)


@dataclass(frozen=True, slots=True)
class _Case:
    suite: Suite
    user_task: Any
    injection_task: Any | None
    convention: str


@dataclass
class AgentDojoBench:
    """Runs the cases a config names, appending one row each to ``results.jsonl``.

    A rerun into the same directory skips the rows already there. Whatever
    goes wrong in one run is written into its row and the bench goes on.
    """

    config: AgentDojoConfig
    _model: Model | None = field(default=None, init=False, repr=False)
    # AgentDojo parses a suite's YAML for every environment it loads, which takes
    # a tenth of a second for workspace: the attack (which caches the vectors a
    # task reaches) is kept per suite, and the last environments loaded are kept
    # by their injections and copied for each run.
    _attacks: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    _environments: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    @property
    def results(self) -> Path:
        return self.config.out / RESULTS

    def cases(self) -> Iterator[_Case]:
        for suite in load_suites(self.config.suites, self.config.version):
            injections = suite.injection_tasks() if self.config.attacks else []
            for user_task in suite.user_tasks(self.config.limit):
                for injection_task in [None, *injections]:
                    for convention in self.config.conventions:
                        yield _Case(suite, user_task, injection_task, convention)

    def run(
        self,
        *,
        on_start: Callable[[int, int], None] | None = None,
        on_row: Callable[[AgentDojoRow], None] | None = None,
    ) -> list[AgentDojoRow]:
        """Run every case not yet in the results file; return the new rows."""
        config = self.config
        try:
            config.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create {config.out}: {exc.strerror or exc}") from exc
        if config.traces:
            try:
                (config.out / TRACES).mkdir(exist_ok=True)
            except OSError as exc:
                raise UsageError(
                    f"cannot write traces to {config.out / TRACES}: {exc.strerror or exc}"
                ) from exc
        done = {row.key for row in read_agentdojo_rows(self.results)}
        cases = list(self.cases())
        todo = [c for c in cases if self._key(c) not in done]
        for suite in {c.suite for c in todo}:
            tool_facts(suite)  # once per suite, before the first run's clock starts
            if config.attacks:
                _attack(suite, config.attack, config.model)  # a bad name fails before any run
        if todo and config.model not in SCRIPTED and self._model is None:
            # A bad spec fails here, before any run.
            self._model = resolve_model(config.model, base_url=config.base_url)
        if on_start is not None:
            on_start(len(todo), len(cases))
        new: list[AgentDojoRow] = []
        sandbox = Sandbox() if any(c.convention == "code" for c in todo) else None
        try:
            with self.results.open("a", encoding="utf-8") as sink:
                for case in todo:
                    row = self.run_case(case, sandbox)
                    sink.write(json.dumps(row.to_json(), ensure_ascii=False) + "\n")
                    sink.flush()
                    new.append(row)
                    if on_row is not None:
                        on_row(row)
        finally:
            if sandbox is not None:
                sandbox.close()
        return new

    def _key(self, case: _Case) -> tuple[Any, ...]:
        return self._row(case).key

    def _row(self, case: _Case) -> AgentDojoRow:
        """The row of `case` before it runs: who, what, and not yet scored."""
        config = self.config
        return AgentDojoRow(
            suite=case.suite.name,
            user_task=case.user_task.ID,
            injection_task=case.injection_task.ID if case.injection_task else None,
            convention=case.convention,
            model=config.model,
            defense=config.defense_label,
            attack=config.attack if case.injection_task else None,
            version=config.version,
        )

    # --- one run ------------------------------------------------------------------

    def run_case(self, case: _Case, sandbox: Sandbox | None) -> AgentDojoRow:
        row = self._row(case)
        start = time.perf_counter()
        pipeline = _Pipeline(self, case, sandbox)
        try:
            injections = self._injections(case)
            utility, security = case.suite.raw.run_task_with_pipeline(
                pipeline,
                case.user_task,
                case.injection_task,
                injections,
                environment=self._environment(case.suite, injections),
            )
        except UsageError:
            raise
        except Exception as exc:
            row.error = f"harness: {type(exc).__name__}: {exc}"
            row.traceback = traceback.format_exc()
        else:
            row.utility = bool(utility)
            # Without an injection task AgentDojo returns True for security.
            row.attacked = bool(security) if case.injection_task is not None else False
        row.wall_s = round(time.perf_counter() - start, 4)
        if pipeline.result is not None:
            _fill(row, pipeline.result)
        return row

    def trace_for(self, case: _Case) -> Path | None:
        """The file a case's run appends its trace to, if traces are kept."""
        if not self.config.traces:
            return None
        folder = self.config.out / TRACES / case.convention / case.suite.name
        folder.mkdir(parents=True, exist_ok=True)
        name = case.user_task.ID
        if case.injection_task is not None:
            name += f"--{case.injection_task.ID}"
        return folder / f"{name}.jsonl"

    def _injections(self, case: _Case) -> dict[str, str]:
        if case.injection_task is None:
            return {}
        attack = self._attacks.get(case.suite.name)
        if attack is None:
            attack = _attack(case.suite, self.config.attack, self.config.model)
            self._attacks[case.suite.name] = attack
        injections: dict[str, str] = attack.attack(case.user_task, case.injection_task)
        return injections

    def _environment(self, suite: Suite, injections: dict[str, str]) -> Any:
        """A fresh copy of the suite's environment with `injections`, as AgentDojo loads it."""
        key = json.dumps([suite.name, injections], sort_keys=True)
        loaded = self._environments.get(key)
        if loaded is None:
            loaded = suite.raw.load_and_inject_default_environment(injections)
            if len(self._environments) >= 4:
                self._environments.pop(next(iter(self._environments)))
            self._environments[key] = loaded
        return loaded.model_copy(deep=True)

    def model_for(self, case: _Case, environment: Any, tools: Toolbox) -> Model:
        """The model of one run: scripted ones are built for it, a spec is resolved once."""
        name = self.config.model
        if name in SCRIPTED:
            task = case.user_task
            # The ground truths read the environment the run starts in; they get a
            # copy, so that nothing they do reaches the run.
            start = environment.model_copy(deep=True)
            instructions: list[Instruction] = []
            if name == "obedient":
                instructions = [
                    Instruction(
                        text=inj.GOAL,
                        calls=tuple(_calls(inj.ground_truth(start))),
                        answer=inj.GROUND_TRUTH_OUTPUT,
                        key=inj.ID,
                    )
                    for inj in case.suite.injection_tasks()
                ]
            return GroundTruthModel(
                _calls(task.ground_truth(start)),
                task.GROUND_TRUTH_OUTPUT,
                case.convention,
                instructions=instructions,
                tools=tools,
                name=name,
            )
        if self._model is None:
            self._model = resolve_model(name, base_url=self.config.base_url)
        return self._model

    def annotate(self, facts: ToolFacts) -> dict[str, Any]:
        """`Tool.from_schema` keywords for a tool's facts (the same under every defense)."""
        return {"side_effects": facts.side_effects, "trust": facts.trust}

    def agent_options(self) -> dict[str, Any]:
        """`Agent` keywords for this bench's defense.

        ``provenance`` is the built-in policy, which denies a side-effecting call
        whose arguments only untrusted results supplied: the model is told why and
        goes on, so no run waits for a person. ``scope`` has the model name the
        tools with side effects the task needs before the run reads anything
        (``Agent(scope="ask")``); calls to others are denied.
        """
        options: dict[str, Any] = {}
        if "provenance" in self.config.defense:
            options["approval"] = (
                ProvenancePolicy(min_chars=self.config.min_chars)
                if self.config.min_chars is not None
                else "provenance"
            )
        if "scope" in self.config.defense:
            options["scope"] = "ask"
        return options


def _calls(function_calls: Sequence[Any]) -> list[Call]:
    return [Call(tool=fc.function, arguments=dict(fc.args)) for fc in function_calls]


@functools.cache
def _system_message() -> str:
    """AgentDojo's default system message, which its own pipelines send."""
    from agentdojo.agent_pipeline.agent_pipeline import load_system_message

    return str(load_system_message(None))


class _Named:
    """What an attack needs of the pipeline it targets: a name."""

    def __init__(self, name: str) -> None:
        self.name = name


def _attack(suite: Suite, name: str, model: str) -> Any:
    """AgentDojo's attack `name` on `suite`.

    Its texts address the model by name when AgentDojo knows the model (an
    ``openai:gpt-4o-2024-05-13`` spec), and as "the AI language model",
    AgentDojo's default, otherwise.
    """
    from agentdojo.attacks import load_attack
    from agentdojo.attacks.base_attacks import DEFAULT_MODEL_NAME
    from agentdojo.models import MODEL_NAMES

    known = next((full for full in MODEL_NAMES if full in model), None)
    try:
        attack = load_attack(name, suite.raw, _Named(known or next(iter(MODEL_NAMES))))
    except (KeyError, ValueError) as exc:
        raise UsageError(f"cannot use the AgentDojo attack {name!r}: {exc}") from exc
    if known is None and hasattr(attack, "model_name"):
        attack.model_name = DEFAULT_MODEL_NAME
    return attack


class _Pipeline:
    """The part of AgentDojo's ``BasePipelineElement`` its task runner uses: `name` and `query`."""

    def __init__(self, bench: AgentDojoBench, case: _Case, sandbox: Sandbox | None) -> None:
        self.bench = bench
        self.case = case
        self.sandbox = sandbox
        self.name = bench.config.model
        self.result: RunResult | None = None

    def query(
        self,
        query: str,
        runtime: Any,
        env: Any = None,
        messages: Sequence[Any] = (),
        extra_args: dict[str, Any] | None = None,
    ) -> tuple[str, Any, Any, list[dict[str, Any]], dict[str, Any]]:
        bench, case = self.bench, self.case
        tools = build_toolbox(case.suite, runtime, env, annotate=bench.annotate)
        model = bench.model_for(case, env, tools)
        agent = Agent(
            model,
            tools,
            convention=case.convention,
            max_rounds=bench.config.max_rounds,
            system_prompt=_system_message(),
            sandbox=self.sandbox,
            trace=bench.trace_for(case),
            **bench.agent_options(),
        )
        with agent:
            result = agent.run(query)
        self.result = result
        return query, runtime, env, [*messages, *_trace(query, result)], dict(extra_args or {})


def _trace(query: str, result: RunResult) -> list[dict[str, Any]]:
    """The run as AgentDojo's messages: each executed call and its result, then the answer."""
    from agentdojo.functions_runtime import FunctionCall

    def text(content: str) -> list[dict[str, Any]]:
        return [{"type": "text", "content": content}]

    messages: list[dict[str, Any]] = [{"role": "user", "content": text(query)}]
    for record in result.calls:
        if record.replayed:
            continue
        call = FunctionCall(function=record.name, args=record.arguments, id=record.id)
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append(
            {
                "role": "tool",
                "content": text(record.content),
                "tool_call_id": record.id,
                "tool_call": call,
                "error": record.error,
            }
        )
    messages.append({"role": "assistant", "content": text(result.answer or ""), "tool_calls": None})
    return messages


def _fill(row: AgentDojoRow, result: RunResult) -> None:
    row.status = result.status
    row.run_error = result.error
    row.calls = sum(1 for c in result.calls if not c.replayed)
    row.failed_calls = sum(1 for c in result.calls if c.error is not None)
    row.rejected = len(result.rejected)
    row.rounds = result.rounds
    row.input_tokens = result.usage.input_tokens
    row.output_tokens = result.usage.output_tokens
    row.answer = result.answer
    row.untrusted_in_answer = [
        f"{s.value} ({', '.join(s.sources)})" for s in result.untrusted_in_answer
    ]
    row.denied = [
        f"{a.tool}: {a.reason}" for a in result.approvals if a.decision == "deny" and a.reason
    ]
