"""`RunContext`: a run's dependencies reach the tools that ask for them, and nothing else."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tooluse import Dispatcher, RunContext, Toolbox, ToolDefinitionError, run_script, tool
from tooluse.sandbox import Sandbox


@dataclass
class Deps:
    user: str
    db: sqlite3.Connection


def bank() -> Toolbox:
    @tool
    def balance(ctx: RunContext[Deps], account: str) -> float:
        """The balance of one of the user's accounts, in EUR.

        Args:
            account: The account's name.
        """
        (amount,) = ctx.deps.db.execute(
            "SELECT amount FROM accounts WHERE user = ? AND name = ?", (ctx.deps.user, account)
        ).fetchone()
        return float(amount)

    @tool
    async def whoami(context: RunContext[Deps]) -> str:
        """The name of the user the agent acts for."""
        await asyncio.sleep(0)
        return f"{context.deps.user} ({context.tool}, {context.call_id})"

    return Toolbox([balance, whoami])


def database() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("CREATE TABLE accounts (user TEXT, name TEXT, amount REAL)")
    db.executemany(
        "INSERT INTO accounts VALUES (?, ?, ?)",
        [("ada", "current", 120.0), ("bob", "current", 7.5)],
    )
    return db


@pytest.fixture
def db() -> Iterator[sqlite3.Connection]:
    connection = database()
    yield connection
    connection.close()


def test_the_context_parameter_is_in_no_schema_stub_or_grammar() -> None:
    from tooluse.decoding import calls_grammar, to_gbnf

    box = bank()
    balance = box.get("balance")
    assert balance is not None
    assert list(balance.parameters["properties"]) == ["account"]
    assert balance.parameters["required"] == ["account"]
    assert balance.positional == ("account",)
    assert box.get("whoami") is not None and box.get("whoami").parameters["properties"] == {}  # type: ignore[union-attr]
    shown = " ".join(
        [
            str(box.to_openai()),
            box.stub_module(),
            to_gbnf(calls_grammar(list(box))),
            calls_grammar(list(box)).lark,
        ]
    )
    assert "ctx" not in shown.split() and "RunContext" not in shown and "Deps" not in shown


def test_each_call_gets_the_runs_deps_and_the_record_keeps_only_the_arguments(
    db: sqlite3.Connection,
) -> None:
    async def main() -> list[object]:
        dispatcher = Dispatcher(bank(), deps=Deps("ada", db))
        try:
            first = await dispatcher.call("balance", {"account": "current"}, call_id="c1")
            second = await dispatcher.call("whoami", {}, call_id="c2")
        finally:
            dispatcher.close()
        return [first, second]

    first, second = asyncio.run(main())
    assert getattr(first, "result", None) == 120.0
    assert getattr(first, "arguments", None) == {"account": "current"}
    assert getattr(second, "result", None) == "ada (whoami, c2)"


def test_two_runs_at_once_never_see_each_others_deps(db: sqlite3.Connection) -> None:
    async def main() -> dict[str, list[object]]:
        both = {
            "ada": Dispatcher(bank(), deps=Deps("ada", db)),
            "bob": Dispatcher(bank(), deps=Deps("bob", db)),
        }

        async def calls(user: str) -> list[object]:
            outcomes = []
            for i in range(20):
                name = "whoami" if i % 2 else "balance"
                arguments = {} if i % 2 else {"account": "current"}
                outcome = await both[user].call(name, arguments, call_id=f"{user}{i}")
                outcomes.append(getattr(outcome, "result", None))
            return outcomes

        try:
            ada, bob = await asyncio.gather(calls("ada"), calls("bob"))
        finally:
            for dispatcher in both.values():
                dispatcher.close()
        return {"ada": ada, "bob": bob}

    seen = asyncio.run(main())
    assert set(seen["ada"][::2]) == {120.0} and set(seen["bob"][::2]) == {7.5}
    assert all(str(r).startswith("ada ") for r in seen["ada"][1::2])
    assert all(str(r).startswith("bob ") for r in seen["bob"][1::2])


def test_a_script_calls_such_a_tool_and_its_deps_stay_on_the_host(
    db: sqlite3.Connection,
) -> None:
    # A database connection cannot cross into the sandbox: it works because it never does.
    script = "import tools\nprint(tools.balance('current'), tools.whoami())\nprint(dir(tools))"
    with Sandbox() as sandbox:
        run = run_script(sandbox, script, bank(), deps=Deps("bob", db))
    assert run.status == "ok", run.error
    first, listing = run.stdout.splitlines()
    assert first.startswith("7.5 bob (whoami, ")
    assert "Deps" not in listing and "RunContext" not in listing
    assert [c.arguments for c in run.calls] == [{"account": "current"}, {}]


def test_a_tool_takes_the_context_once() -> None:
    def twice(a: RunContext[Deps], b: RunContext[Deps], x: int) -> int:
        """Take the context twice."""
        return x

    with pytest.raises(ToolDefinitionError, match="a tool takes it once"):
        tool(twice)


@pytest.mark.parametrize("convention", ["json", "code"])
def test_two_agent_runs_at_once_never_see_each_others_deps(
    db: sqlite3.Connection, convention: str
) -> None:
    from tooluse import Agent
    from tooluse.models import ScriptedModel

    if convention == "json":
        first: dict[str, object] = {
            "tool_calls": [
                {"id": "a", "function": {"name": "balance", "arguments": {"account": "current"}}},
                {"id": "b", "function": {"name": "whoami", "arguments": {}}},
            ]
        }
    else:
        code = "import tools\nprint(tools.balance('current'), tools.whoami())"
        first = {"content": f"```python\n{code}\n```"}

    async def main() -> list[list[object]]:
        agents = [
            Agent(ScriptedModel([first, "done"]), bank(), convention=convention) for _ in range(2)
        ]
        try:
            results = await asyncio.gather(
                agents[0].arun("mine", deps=Deps("ada", db)),
                agents[1].arun("mine", deps=Deps("bob", db)),
            )
        finally:
            for agent in agents:
                agent.close()
        return [[c.result for c in r.calls] for r in results]

    ada, bob = asyncio.run(main())
    assert ada[0] == 120.0 and str(ada[1]).startswith("ada ")
    assert bob[0] == 7.5 and str(bob[1]).startswith("bob ")
