"""Run one of the scripted scenarios and print what happened."""

from __future__ import annotations

import json
from pathlib import Path

from tooluse import Agent, RunResult
from tooluse.models import ScriptedModel

from .seed_tools import toolbox

HERE = Path(__file__).parent


def run_scenario(script: str, task: str) -> RunResult:
    """Run `task` against the example tools with the scripted replies in `script`."""
    model = ScriptedModel.from_file(HERE / script)
    result = Agent(model, toolbox, convention="json", max_rounds=8).run(task)
    for record in result.calls:
        outcome = record.error or json.dumps(record.result)
        print(f"  call  {record.name}({json.dumps(record.arguments)}) -> {outcome}")
    for rejected in result.rejected:
        print(f"  refused {rejected.name}: {rejected.error}")
    print(f"[{result.status}] {result.answer}")
    return result
