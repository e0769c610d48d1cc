"""A durable agent in a process of its own, for the kill tests: ``python driver.py CONFIG``.

CONFIG is a JSON file: the database URL, the run id, the convention, the work folder,
and ``block``: the point at which to stop and wait to be killed (a tool, or the model,
says so by a line on stdout, then blocks reading a fifo nobody writes). Every tool
execution appends its name to ``executions`` in the work folder, so a test counts what
ran. The model is a `ScriptedModel` answering from the conversation, so a recovered
run, which replays the recorded replies, is asked the same question at the same place.
The run's result goes to stdout as its last line, as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tooluse import Agent, Approval, ApprovalRequest, Limits, tool
from tooluse._messages import Message
from tooluse.durable import Durable, recover
from tooluse.models import ScriptedModel

# A driver the test lost track of ends itself rather than outlive the test.
signal.alarm(240)
# Imported (by `tooluse runs recover driver:make`), it takes its CONFIG from the environment.
_config_path = sys.argv[1] if __name__ == "__main__" else os.environ["DRIVER_CONFIG"]
config: dict[str, Any] = json.loads(Path(_config_path).read_text())
work = Path(config["work"])
block: str | None = config.get("block")


def at(point: str) -> None:
    """Tell the test that the run is at ``point``; if it is the one asked for, wait there."""
    if point != block:
        return
    print(f"AT {point}", flush=True)
    fifo = work / "fifo"
    with fifo.open():  # nobody opens it for writing: blocks until the process is killed
        pass


def executed(name: str) -> None:
    with (work / "executions").open("a") as f:
        f.write(name + "\n")


@tool(effects="read")
def lookup(key: str) -> int:
    """Look a number up.

    Args:
        key: what to look up
    """
    executed(f"lookup:{key}")
    at(f"lookup:{key}")
    return len(key) * 10


@tool(effects="write")
def send(to: str, amount: int) -> str:
    """Send money.

    Args:
        to: who receives it
        amount: how much
    """
    at(f"send:{to}")
    executed(f"send:{to}")
    at(f"send-after:{to}")
    return f"sent {amount} to {to}"


KEYS = ["a", "bb", "ccc"]


def json_reply(messages: Sequence[Message]) -> dict[str, Any] | str:
    done = sum(1 for m in messages if m.role == "tool")
    at(f"model:{done}")
    if done < len(KEYS):
        key = KEYS[done]
        args = json.dumps({"key": key})
        return {
            "tool_calls": [
                {
                    "id": f"c{done}",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": args},
                }
            ]
        }
    if done == len(KEYS):
        args = json.dumps({"to": "bob", "amount": 60})
        return {
            "tool_calls": [
                {"id": "c9", "type": "function", "function": {"name": "send", "arguments": args}}
            ]
        }
    return {"content": f"done after {done} calls"}


SCRIPT = """```python
total = 0
for key in ["a", "bb", "ccc"]:
    total += tools.lookup(key=key)
print(tools.send(to="bob", amount=total))
print("total", total)
```"""


def code_reply(messages: Sequence[Message]) -> dict[str, Any] | str:
    asked = sum(1 for m in messages if m.role == "assistant")
    at(f"model:{asked}")
    if asked == 0:
        return {"content": SCRIPT}
    return {"content": "done: " + (messages[-1].content or "").strip().replace("\n", " | ")}


PLAN = """```plan
values = [lookup(key=k) for k in ["a", "bb", "ccc"]]
total = sum(values)
receipt = send(to="bob", amount=total)
```"""


def plan_reply(messages: Sequence[Message]) -> dict[str, Any] | str:
    asked = sum(1 for m in messages if m.role == "assistant")
    at(f"model:{asked}")
    if asked == 0:
        return {"content": PLAN}
    return {"content": "done: " + (messages[-1].content or "").strip().splitlines()[-1]}


def told(event: dict[str, Any]) -> None:
    if event.get("event") == "script":  # a script ended
        print(f"SCRIPT {event['status']}", flush=True)
    # A durable run tells of a call waiting for a decision once the database has it.
    if event.get("event") == "approval_needed":
        for request in event["pending"]:
            print(f"PENDING {request['call_id']} {request.get('in_doubt', False)}", flush=True)


def approval(request: ApprovalRequest) -> Approval:
    if config.get("ask") and request.tool == "send" and not request.in_doubt:
        print(f"WAITING {request.call_id}", flush=True)
        return Approval.defer("a person decides")
    if config.get("edit") and request.tool == "send":
        # Another decision than the recorded run's: the call it lets run is another call.
        return Approval.allow({"to": "bob", "amount": 61})
    if request.in_doubt:
        print(f"IN_DOUBT {request.call_id}", flush=True)
        decided = config.get("in_doubt")
        if decided is None:
            return Approval.defer(request.reason)
        return Approval.allow() if decided else Approval.deny("not sent twice")
    return Approval.allow()


convention = config["convention"]


@tool(effects="read")
def clock() -> str:
    """The time."""
    return "noon"


replies = {"json": json_reply, "code": code_reply, "plan": plan_reply}


def make(durable: Durable) -> Agent:
    """The driver's agent, recording to ``durable``."""
    return Agent(
        ScriptedModel(replies[convention]),
        [lookup, send, clock] if config.get("changed_tools") else [lookup, send],
        convention=convention,
        durable=durable,
        approval=approval if config.get("policy", True) else None,
        isolation="none",
        on_event=told,
        max_rounds=12,
        limits=Limits(script_timeout=config.get("script_timeout", 60)),
    )


TASK = "pay bob what the keys add up to"


def main() -> None:
    with make(Durable(config["url"], worker=config.get("worker", "local"))) as agent:
        drive(agent)
    os._exit(0)  # DBOS's threads are not waited for


def drive(agent: Agent) -> None:
    if config.get("before"):
        # A run of this worker's own, to the end, before it takes over another's.
        print("BEFORE " + agent.run(TASK, run_id=config["before"]).answer, flush=True)
    if config.get("recover"):
        print("RECOVERED " + " ".join(recover(config["recover"])), flush=True)
    if config.get("only_wait"):
        # Asks nothing to run: the run ends only if the agent's start recovered it.
        from dbos import DBOS

        data = DBOS.retrieve_workflow(config["run_id"]).get_result()
        print(json.dumps({"answer": data["answer"], "status": data["status"]}), flush=True)
        os._exit(0)
    # A run id that names a pending run (recovered here or not) waits for it to end.
    result = agent.run(TASK, run_id=config["run_id"])
    print(
        json.dumps(
            {
                "status": result.status,
                "answer": result.answer,
                "error": result.error,
                "calls": [[c.name, c.arguments, c.error] for c in result.calls],
                "rejected": [[r.name, r.error] for r in result.rejected],
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
