"""Our oracle against AgentDojo's own ``GroundTruthPipeline``, task by task.

AgentDojo checks its suites by running each user task's ground truth through
its own runtime and scoring it; the oracle runs the same calls through tooluse's
dispatcher (validation, execution, records) and is scored by the same checks.
Every user task must get the same verdict both ways. (workspace agrees too, as
``tooluse bench agentdojo --model oracle`` shows; its environment takes seconds
to load, so it stays out of the test suite.)
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from tooluse.eval.agentdojo import AgentDojoBench, AgentDojoConfig, load_suite

SUITES = ("banking", "slack", "travel")


def agentdojo_verdicts(name: str) -> dict[str, bool]:
    from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline

    suite = load_suite(name)
    verdicts = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for task in suite.user_tasks():
            utility, _ = suite.raw.run_task_with_pipeline(GroundTruthPipeline(task), task, None, {})
            verdicts[task.ID] = utility
    return verdicts


@pytest.mark.parametrize("name", SUITES)
def test_the_oracle_gets_agentdojos_verdict_on_every_user_task(tmp_path: Path, name: str) -> None:
    expected = agentdojo_verdicts(name)
    config = AgentDojoConfig(out=tmp_path, suites=(name,), attacks=False, conventions=("json",))
    rows = AgentDojoBench(config).run()
    ours = {row.user_task: row.utility for row in rows}
    differ = {task: (ours.get(task), verdict) for task, verdict in expected.items()
              if ours.get(task) != verdict}  # fmt: skip
    assert not differ, f"(ours, AgentDojo's) per task: {differ}"
    assert all(row.error is None and row.status == "completed" for row in rows)
