"""A child process that resumes a saved paused run against a shared approval store.

argv: the saved run's JSON file, then the store's SQLite file. Prints one JSON line:
what left this process's bank, and the resumed run's status, or the refusal.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tooluse import Agent, AlreadyResumedError, ApprovalStore, RunResult
from tooluse.models import ScriptedModel

from ._bank import Bank, defer


def main() -> None:
    saved, store = Path(sys.argv[1]), Path(sys.argv[2])
    paused = RunResult.from_dict(json.loads(saved.read_text()))
    bank = Bank()
    agent = Agent(
        ScriptedModel([{"content": "paid"}]),
        bank.toolbox(),
        approval=defer,
        approval_store=ApprovalStore(store),
    )
    with agent:
        try:
            result = agent.resume(paused, {p.call_id: True for p in paused.pending})
        except AlreadyResumedError as exc:
            print(json.dumps({"sent": bank.sent, "refused": str(exc)}))
            return
    print(json.dumps({"sent": bank.sent, "status": result.status}))


if __name__ == "__main__":
    main()
