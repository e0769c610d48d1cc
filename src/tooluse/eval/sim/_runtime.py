"""The buffer experiment on the real runtime: the simulation predicts, this measures.

A scripted agent works through a long task through the real loop, the real
window and the real store. Every turn it observes one item (a tool result of
heavy-tailed size carrying a unique key and value); some items are needed
again after a Pareto-distributed delay. When an item is needed, the agent
looks for its value in the window it was shown; if the value is not there it
either has no way back (``harness`` policy: threshold offload by the harness
alone, no context tools) or asks the store (``agent`` policy: the agent
offloads what it believes it will not need before the harness has to, and
queries on a miss). An item needed but neither visible nor recovered is lost.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ... import Agent, Limits, Message
from ..._tokens import count_tokens
from ...context import ContextStore
from ...context._window import ContextPolicy
from ...models import ScriptedModel
from ...tools import Tool
from ._buffer import BufferSimConfig

__all__ = ["ExperimentConfig", "ExperimentResult", "render_results", "run_experiment"]

Policy = Literal["harness", "agent"]
_FILLER = [
    "sensor", "reading", "nominal", "pressure", "within", "range", "operator", "note",
    "calibrated", "yesterday", "valve", "cycle", "count", "logged", "ambient", "temperature",
    "stable", "backlog",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class ExperimentConfig:
    # The workload is the simulation's by default, so that the two stay comparable.
    budget: int = 12_000
    turns: int = 300
    alpha: float = BufferSimConfig.alpha
    reuse_fraction: float = BufferSimConfig.reuse_fraction
    signal_accuracy: float = BufferSimConfig.signal_accuracy
    item_tokens: float = BufferSimConfig.item_tokens
    item_sigma: float = BufferSimConfig.item_sigma
    trials: int = 5
    seed: int = BufferSimConfig.seed
    agent_trigger: float = 0.85  # the agent makes room before the harness would


@dataclass(slots=True)
class ExperimentResult:
    policy: Policy
    needed: int = 0
    lost: int = 0
    queries: int = 0
    harness_offloads: int = 0
    agent_offloads: int = 0
    peak_fraction: float = 0.0
    per_trial_loss: list[float] = field(default_factory=list)

    @property
    def loss(self) -> float:
        return self.lost / self.needed if self.needed else 0.0


@dataclass(slots=True)
class _Item:
    key: str
    value: str
    text: str
    needed_at: int | None
    believed_needed: bool


def _episode_items(cfg: ExperimentConfig, rng: random.Random) -> list[_Item]:
    items = []
    for t in range(cfg.turns):
        size = max(20, int(rng.lognormvariate(0, cfg.item_sigma) * cfg.item_tokens))
        key = f"k{rng.getrandbits(40):010x}"
        value = str(rng.randrange(10**8, 10**9))
        words = " ".join(rng.choice(_FILLER) for _ in range(int(size * 0.8)))
        text = f"Observation {t} for key {key}: value {value}. {words}"
        reused = rng.random() < cfg.reuse_fraction
        distance = int(rng.paretovariate(cfg.alpha)) + 1
        needed_at = t + distance if reused and t + distance < cfg.turns else None
        truth = needed_at is not None
        believed = truth if rng.random() < cfg.signal_accuracy else not truth
        items.append(_Item(key, value, text, needed_at, believed))
    return items


class _ScriptedAgent:
    """The policy under test, answering the loop as a model would."""

    def __init__(self, items: list[_Item], policy: Policy, cfg: ExperimentConfig) -> None:
        self.items = items
        self.policy = policy
        self.cfg = cfg
        self.turn = 0
        self.due: dict[int, list[int]] = {}
        for i, item in enumerate(items):
            if item.needed_at is not None:
                self.due.setdefault(item.needed_at, []).append(i)
        self.pending: list[int] = []  # needs of this turn still to check
        self.querying: int | None = None
        self.result = ExperimentResult(policy)
        self.message_of: dict[int, str] = {}  # item -> id of the message that carried it
        self.calls = 0

    def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        return {
            "tool_calls": [
                {
                    "id": f"c{self.calls}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            ]
        }

    def __call__(self, messages: Sequence[Message]) -> dict[str, Any]:
        visible = "\n".join(m.content or "" for m in messages)
        tokens = sum(count_tokens(m.content or "") + 4 for m in messages)
        self.result.peak_fraction = max(self.result.peak_fraction, tokens / self.cfg.budget)
        last = messages[-1]
        if last.role == "tool" and last.content and last.content.startswith("[m"):
            match = re.match(r"\[(m\d+)\] Observation (\d+) ", last.content)
            if match:
                self.message_of[int(match.group(2))] = match.group(1)
        if self.querying is not None:
            item = self.items[self.querying]
            self.querying = None
            if item.value not in (last.content or ""):
                self.result.lost += 1
        while self.pending:
            index = self.pending.pop(0)
            item = self.items[index]
            self.result.needed += 1
            if item.value in visible:
                continue
            if self.policy == "agent":
                self.querying = index
                self.result.queries += 1
                return self._call("context_query", {"query": f"key {item.key} value", "top_k": 1})
            self.result.lost += 1
        if self.policy == "agent" and tokens > self.cfg.agent_trigger * self.cfg.budget:
            goal = tokens - (self.cfg.agent_trigger - 0.6) * self.cfg.budget
            chosen: list[str] = []
            order = sorted(self.message_of, key=lambda i: (self.items[i].believed_needed, i))
            for index in order:
                message_id = self.message_of[index]
                marker = f"[{message_id}] Observation {index} "
                if marker not in visible or index >= self.turn - 1:
                    continue
                chosen.append(message_id)
                goal += count_tokens(self.items[index].text)
                if goal >= tokens:
                    break
            if chosen:
                self.result.agent_offloads += len(chosen)
                for index in list(self.message_of):
                    if self.message_of[index] in chosen:
                        del self.message_of[index]
                return self._call("context_offload", {"span_ids": chosen})
        if self.turn >= len(self.items):
            return {"content": "done"}
        t = self.turn
        self.turn += 1
        self.pending = list(self.due.get(t, []))
        return self._call("observe", {"t": t})


def run_experiment(
    cfg: ExperimentConfig, policies: Sequence[Policy] = ("harness", "agent")
) -> list[ExperimentResult]:
    """Run every policy on the same episodes; one result per policy."""
    master = random.Random(cfg.seed)
    seeds = [master.getrandbits(32) for _ in range(cfg.trials)]
    results = {p: ExperimentResult(p) for p in policies}
    for seed in seeds:
        for policy in policies:
            items = _episode_items(cfg, random.Random(seed))
            texts = [item.text for item in items]

            def observe(t: int, texts: list[str] = texts) -> str:
                return texts[t]

            tool = Tool.from_schema(
                "observe",
                "Observe the item of turn t.",
                {"type": "object", "properties": {"t": {"type": "integer"}}, "required": ["t"]},
                observe,
            )
            agent_policy = _ScriptedAgent(items, policy, cfg)
            context = ContextPolicy(
                budget=cfg.budget,
                result_limit=cfg.budget,  # items are moved whole, as in the simulation
                store=ContextStore(":memory:"),
                agent_tools=policy == "agent",
            )
            harness_moves: list[int] = []

            def count_harness(event: dict[str, Any], moves: list[int] = harness_moves) -> None:
                if event["event"] == "context_offload" and event["by"] == "harness":
                    moves.append(len(event["ids"]))

            agent = Agent(
                ScriptedModel(agent_policy),
                [tool],
                context=context,
                max_rounds=cfg.turns * 3 + 10,
                limits=Limits(cycle_limit=None),
                on_event=count_harness,
            )
            run = agent.run("Work through every item; recall earlier values when asked.")
            if run.status != "completed":
                raise RuntimeError(f"experiment run ended with {run.status}: {run.error}")
            outcome = agent_policy.result
            total = results[policy]
            total.needed += outcome.needed
            total.lost += outcome.lost
            total.queries += outcome.queries
            total.agent_offloads += outcome.agent_offloads
            total.harness_offloads += sum(harness_moves)
            total.peak_fraction = max(total.peak_fraction, outcome.peak_fraction)
            total.per_trial_loss.append(outcome.loss)
    return list(results.values())


def render_results(results: Sequence[ExperimentResult], trials: int) -> str:
    header = (
        f"{'policy':<10}{'needed':>8}{'lost':>7}{'loss':>9}{'queries/ep':>12}"
        f"{'agent moves/ep':>16}{'harness moves/ep':>18}{'peak/B':>8}"
    )
    lines = [header, "=" * len(header)]
    for r in results:
        lines.append(
            f"{r.policy:<10}{r.needed:>8}{r.lost:>7}{r.loss:>9.4f}{r.queries / trials:>12.1f}"
            f"{r.agent_offloads / trials:>16.1f}{r.harness_offloads / trials:>18.1f}"
            f"{r.peak_fraction:>8.3f}"
        )
    return "\n".join(lines)
