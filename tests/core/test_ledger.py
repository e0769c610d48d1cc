"""The side-effect ledger answers only the retry of a script that failed half-way."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooluse import Agent, Limits, RunResult, Toolbox, tool
from tooluse.models import ScriptedModel


def fenced(code: str) -> dict[str, str]:
    return {"content": f"```python\nimport tools\n{code}\n```"}


def json_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


class Cart:
    """A tool with side effects, and what it really did."""

    def __init__(self) -> None:
        self.added: list[str] = []

        @tool(side_effects=True)
        def add(item: str) -> str:
            """Add an item to the cart."""
            self.added.append(item)
            return f"added {item}"

        self.toolbox = Toolbox([add])


@pytest.fixture
def cart() -> Cart:
    return Cart()


def code_agent(agents: list[Agent], cart: Cart, replies: list[dict[str, Any]]) -> Agent:
    agent = Agent(
        ScriptedModel(replies), cart.toolbox, convention="code", limits=Limits(script_timeout=20)
    )
    agents.append(agent)
    return agent


def replayed(result: RunResult) -> list[tuple[str, bool]]:
    return [(c.arguments["item"], c.replayed) for c in result.calls]


def test_identical_calls_in_one_script_all_run(agents: list[Agent], cart: Cart) -> None:
    script = "for _ in range(3):\n    print(tools.add(item='x'))"
    result = code_agent(agents, cart, [fenced(script), {"content": "done"}]).run("add x thrice")
    assert result.status == "completed"
    assert cart.added == ["x", "x", "x"]
    assert replayed(result) == [("x", False)] * 3


def test_identical_json_calls_in_later_rounds_run(cart: Cart) -> None:
    model = ScriptedModel(
        [
            json_call("c1", "add", {"item": "x"}),
            json_call("c2", "add", {"item": "x"}),
            {"content": "done"},
        ]
    )
    result = Agent(model, cart.toolbox).run("add x twice")
    assert result.status == "completed"
    assert cart.added == ["x", "x"]
    assert replayed(result) == [("x", False)] * 2


def test_a_script_that_succeeded_is_not_replayed(agents: list[Agent], cart: Cart) -> None:
    script = "print(tools.add(item='x'))"
    result = code_agent(agents, cart, [fenced(script), fenced(script), {"content": "done"}]).run(
        "add x, then again"
    )
    assert cart.added == ["x", "x"]
    assert replayed(result) == [("x", False)] * 2


def test_separate_runs_of_one_agent_share_nothing(agents: list[Agent], cart: Cart) -> None:
    failing = "print(tools.add(item='x'))\nraise RuntimeError('half-way')"
    # Each run answers twice: the answer after a script that failed past a call's
    # result gets a note (FAILED_SCRIPT_NOTE), and the one after the note ends the run.
    first_run = [fenced(failing), {"content": "gave up"}, {"content": "gave up"}]
    second_run = [fenced(failing), {"content": "no"}, {"content": "no"}]
    agent = code_agent(agents, cart, [*first_run, *second_run])
    first, second = agent.run("add x"), agent.run("add x again")
    assert [first.scripts[0].status, second.scripts[0].status] == ["error", "error"]
    assert cart.added == ["x", "x"]
    assert replayed(first) + replayed(second) == [("x", False)] * 2


def test_the_retry_of_a_failed_script_replays_its_successes_in_order(
    agents: list[Agent], cart: Cart
) -> None:
    failing = (
        "print(tools.add(item='a'))\n"
        "print(tools.add(item='b'))\n"
        "print(tools.add(item='a'))\n"
        "raise RuntimeError('half-way')"
    )
    retry = (
        "print(tools.add(item='a'))\n"
        "print(tools.add(item='b'))\n"
        "print(tools.add(item='c'))\n"
        "print(tools.add(item='a'))"
    )
    result = code_agent(agents, cart, [fenced(failing), fenced(retry), {"content": "done"}]).run(
        "fill the cart"
    )
    assert result.status == "completed"
    assert [s.status for s in result.scripts] == ["error", "ok"]
    # The first call that differs from the failed script ends the replay.
    assert cart.added == ["a", "b", "a", "c", "a"]
    assert replayed(result) == [
        ("a", False),
        ("b", False),
        ("a", False),
        ("a", True),
        ("b", True),
        ("c", False),
        ("a", False),
    ]
    told = result.messages[5].content or ""
    assert told.startswith("added a\nadded b\nadded c\nadded a\n")
    assert "not run again" in told
    assert "add(item='a'), add(item='b')" in told
    assert "not run again" not in (result.messages[3].content or "")


def test_a_retry_that_fails_again_is_retried_from_both(agents: list[Agent], cart: Cart) -> None:
    first = "print(tools.add(item='a'))\nraise RuntimeError('half-way')"
    second = "print(tools.add(item='a'))\nprint(tools.add(item='b'))\nraise RuntimeError('again')"
    third = "print(tools.add(item='a'))\nprint(tools.add(item='b'))\nprint(tools.add(item='c'))"
    result = code_agent(
        agents, cart, [fenced(first), fenced(second), fenced(third), {"content": "done"}]
    ).run("fill the cart")
    assert cart.added == ["a", "b", "c"]
    assert [c.replayed for c in result.calls] == [False, True, False, True, True, False]


class Shelf:
    """A write tool, an idempotent one and a read one, and what each really did."""

    def __init__(self) -> None:
        self.done: list[str] = []

        @tool(effects="write")
        def add(item: str) -> str:
            """Add an item to the cart."""
            self.done.append(f"add {item}")
            return f"added {item}"

        @tool(effects="idempotent")
        def label(item: str) -> str:
            """Label an item (labelling it again changes nothing)."""
            self.done.append(f"label {item}")
            return f"labelled {item}"

        @tool(effects="read")
        def look(item: str) -> str:
            """Look at an item."""
            self.done.append(f"look {item}")
            return f"saw {item}"

        self.toolbox = Toolbox([add, label, look])


def shelf_run(agents: list[Agent], shelf: Shelf, failing: str, retry: str) -> RunResult:
    agent = Agent(
        ScriptedModel([fenced(failing), fenced(retry), {"content": "done"}]),
        shelf.toolbox,
        convention="code",
        limits=Limits(script_timeout=20),
    )
    agents.append(agent)
    result = agent.run("stock the shelf")
    assert [s.status for s in result.scripts] == ["error", "ok"]
    return result


def test_an_idempotent_call_the_retry_skips_does_not_end_the_replay_of_writes(
    agents: list[Agent],
) -> None:
    shelf = Shelf()
    failing = "tools.add(item='a')\ntools.label(item='a')\ntools.add(item='b')\nraise RuntimeError"
    retry = "tools.add(item='a')\ntools.add(item='b')\ntools.add(item='c')"
    result = shelf_run(agents, shelf, failing, retry)
    # b was added once: the skipped label is no reason to add it again.
    assert shelf.done == ["add a", "label a", "add b", "add c"]
    assert [(c.name, c.replayed) for c in result.calls[3:]] == [
        ("add", True),
        ("add", True),
        ("add", False),
    ]


def test_an_idempotent_call_the_failed_script_did_not_make_runs_and_the_replay_goes_on(
    agents: list[Agent],
) -> None:
    shelf = Shelf()
    failing = "tools.add(item='a')\ntools.add(item='b')\nraise RuntimeError"
    retry = "tools.add(item='a')\ntools.label(item='a')\ntools.add(item='b')"
    result = shelf_run(agents, shelf, failing, retry)
    assert shelf.done == ["add a", "add b", "label a"]
    assert [c.replayed for c in result.calls[2:]] == [True, False, True]


def test_a_matching_idempotent_call_is_answered_and_read_calls_are_not_entries(
    agents: list[Agent],
) -> None:
    shelf = Shelf()
    failing = "tools.look(item='a')\ntools.label(item='a')\ntools.add(item='a')\nraise RuntimeError"
    retry = "tools.look(item='a')\ntools.label(item='a')\ntools.add(item='a')"
    result = shelf_run(agents, shelf, failing, retry)
    # The read runs again (it is no entry); the label and the add are answered.
    assert shelf.done == ["look a", "label a", "add a", "look a"]
    assert [c.replayed for c in result.calls[3:]] == [False, True, True]


def test_a_write_that_differs_still_ends_the_replay(agents: list[Agent]) -> None:
    shelf = Shelf()
    failing = "tools.add(item='a')\ntools.label(item='b')\ntools.add(item='b')\nraise RuntimeError"
    retry = "tools.add(item='c')\ntools.label(item='b')\ntools.add(item='b')"
    result = shelf_run(agents, shelf, failing, retry)
    assert shelf.done[3:] == ["add c", "label b", "add b"]
    assert not any(c.replayed for c in result.calls[3:])
