"""A durable agent whose calls must run side by side: ``python together.py CONFIG``.

One turn (json) or one plan wave (plan) makes two calls: ``wait_for`` waits until
``release`` has run, so run one after the other they would wait on each other. Every
execution is appended to ``executions`` in the work folder. With ``block``, the
second model request prints ``AT model`` and blocks on the fifo, to be killed there.
The run's result goes to stdout as its last line, as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tooluse import Agent, tool
from tooluse._messages import Message
from tooluse.durable import Durable
from tooluse.models import ScriptedModel

signal.alarm(240)  # a driver the test lost track of ends itself
config: dict[str, Any] = json.loads(Path(sys.argv[1]).read_text())
work = Path(config["work"])
released = threading.Event()


def executed(name: str) -> None:
    with (work / "executions").open("a") as f:
        f.write(name + "\n")


@tool(effects="read", timeout=120)
def wait_for() -> str:
    """Wait until release has run."""
    executed("wait_for")
    # Bounded only so that a wrong run ends; a right one is released at once.
    return "met" if released.wait(60) else "never released"


@tool(effects="write")
def release() -> str:
    """Release whoever waits."""
    executed("release")
    released.set()
    return "released"


CALLS = [
    {"id": "c1", "type": "function", "function": {"name": "wait_for", "arguments": "{}"}},
    {"id": "c2", "type": "function", "function": {"name": "release", "arguments": "{}"}},
]
PLAN = "```plan\nseen = wait_for()\ndone = release()\n```"


def reply(messages: Sequence[Message]) -> dict[str, Any] | str:
    if not any(m.role == "assistant" for m in messages):
        return {"tool_calls": CALLS} if config["convention"] == "json" else {"content": PLAN}
    if config.get("block"):
        print("AT model", flush=True)
        with (work / "fifo").open():  # nobody writes it: blocks until killed
            pass
    shown = [m.content for m in messages if m.role == "tool"] or [messages[-1].content]
    return {"content": " | ".join(str(s).strip() for s in shown)}


agent = Agent(
    ScriptedModel(reply),
    [wait_for, release],
    convention=config["convention"],
    durable=Durable(config["url"]),
    isolation="none",
)
with agent:
    result = agent.run("meet", run_id="r")
    calls = [[c.name, c.result, c.error] for c in result.calls]
    shown = {"status": result.status, "answer": result.answer, "calls": calls}
    print(json.dumps(shown), flush=True)
os._exit(0)  # DBOS's threads are not waited for
