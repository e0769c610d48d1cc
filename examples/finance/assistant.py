"""A finance assistant: a chat over your ledger that asks before it pays.

What it puts together:

- typed tools (`tools.py`) whose ledger is the run's dependency (``deps=``), so
  each user's money is their own;
- a third-party MCP server, ``mcp-server-time``, for today's date (which bills are
  overdue is a question of the date);
- an approval policy that asks you on the terminal before `pay_bill` runs;
- a conversation kept in SQLite, so ``--id`` continues it another day;
- typed output: ``/summary`` is a turn whose answer is a `Summary`, checked
  against its fields before the run ends (``output_type=``).

    python -m examples.finance.assistant                      # the local model
    python -m examples.finance.assistant --model openai:gpt-4.1-mini
    python -m examples.finance.assistant --store chats.sqlite --id me

Each line you type is a turn (``/summary`` a typed one); an empty line or end of
input stops. The eval file
beside it measures a model on the same tools: ``tooluse eval examples/finance/evals.yaml``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from pydantic import BaseModel

from tooluse import Agent, Approval, ApprovalRequest, Conversation, RunResult
from tooluse.mcp import MCPClient, combine
from tooluse.models import Model, resolve_model

from .tools import Ledger, toolbox

SYSTEM = (
    "You are a careful personal-finance assistant. Use the tools for every figure: "
    "balances, bills, rates and today's date (get_current_time, timezone 'UTC'). "
    "Pay a bill only when asked to; say what was paid and its confirmation code."
)

#: What ``/summary`` asks for.
SUMMARY = (
    "Summarize my finances: both balances, the ids of the bills still due, and their "
    "total in USD (convert the ones in other currencies)."
)


class Summary(BaseModel):
    """Where the money stands: the answer of a ``/summary`` turn."""

    checking_usd: float
    savings_usd: float
    bills_due: list[str]
    total_due_usd: float


#: Answers a payment put to the person: True runs it, False denies it.
Decide = Callable[[ApprovalRequest], bool]


def ask_before_paying(request: ApprovalRequest) -> Approval:
    """Every call with side effects (here `pay_bill`) waits for the person's yes."""
    return Approval.defer(f"{request.tool} moves money: the account holder decides")


def time_server() -> MCPClient:
    """``mcp-server-time`` (from PyPI) in a subprocess, its clock in UTC."""
    return MCPClient.stdio(
        [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"], name="time"
    )


def assistant(
    model: Model, *, store: str = ":memory:", conversation_id: str | None = None
) -> tuple[Conversation, MCPClient]:
    """The conversation, and the MCP client (started) to close when done."""
    clock = time_server().open()
    agent = Agent(
        model,
        combine(toolbox, clock),
        system_prompt=SYSTEM,
        approval=ask_before_paying,
        max_rounds=8,
    )
    return Conversation(agent, store=store, id=conversation_id), clock


def turn(
    conversation: Conversation,
    message: str,
    ledger: Ledger,
    decide: Decide,
    output_type: Any = None,
) -> RunResult:
    """One turn: the run, and each payment it asks about put to `decide`."""
    result = conversation.run(message, deps=ledger, output_type=output_type)
    while result.status == "needs_approval":
        decisions = {request.call_id: decide(request) for request in result.pending}
        result = conversation.resume(result, decisions, deps=ledger, output_type=output_type)
    return result


def ask_on(terminal: TextIO, out: TextIO) -> Decide:
    """A `Decide` that shows the payment and reads y/N from `terminal`."""

    def decide(request: ApprovalRequest) -> bool:
        shown = json.dumps(request.arguments, ensure_ascii=False)
        out.write(f"approve {request.tool}({shown})? [y/N] ")
        out.flush()
        return terminal.readline().strip().lower() in ("y", "yes")

    return decide


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.finance.assistant")
    parser.add_argument("--model", default="local", help="a model spec, as tooluse run takes")
    parser.add_argument("--store", default=":memory:", help="SQLite file of the conversations")
    parser.add_argument("--id", default=None, help="the conversation to continue or start")
    args = parser.parse_args(argv)
    conversation, clock = assistant(
        resolve_model(args.model), store=args.store, conversation_id=args.id
    )
    ledger = Ledger()
    decide = ask_on(sys.stdin, sys.stdout)
    with clock, conversation.agent:
        print(f"conversation {conversation.id}; an empty line ends it")
        while True:
            print("> ", end="", flush=True)
            message = sys.stdin.readline().strip()
            if not message:
                return 0
            if message == "/summary":
                result = turn(conversation, SUMMARY, ledger, decide, output_type=Summary)
            else:
                result = turn(conversation, message, ledger, decide)
            _show(result)


def _show(result: RunResult) -> None:
    for call in result.calls:
        outcome: Any = call.error if call.error is not None else call.result
        print(f"  {call.name}({json.dumps(call.arguments)}) -> {json.dumps(outcome)}")
    if isinstance(result.output, Summary):
        print(f"[{result.status}] {result.output!r}")
    else:
        print(f"[{result.status}] {result.answer}")


if __name__ == "__main__":
    raise SystemExit(main())
