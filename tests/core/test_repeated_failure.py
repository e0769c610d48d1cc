"""The loop notices a call that keeps failing, a script run again and again, and a
script that printed nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from examples.seed_tools import toolbox as seed_tools
from tooluse import Agent, Limits, Message
from tooluse.models import ScriptedModel


def calls(*items: tuple[str, dict[str, Any]], turn: int) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"id": f"t{turn}c{i}", "function": {"name": name, "arguments": arguments}}
            for i, (name, arguments) in enumerate(items)
        ]
    }


def fenced(code: str) -> dict[str, str]:
    return {"content": f"```python\n{code}\n```"}


def notes(messages: Sequence[Message]) -> list[str]:
    return [m.content or "" for m in messages if m.role == "user"][1:]


def test_the_same_failing_call_gets_one_note_then_stops_the_run() -> None:
    # Each turn also makes a call whose result changes, which hides the loop from the
    # check for identical call and result.
    def reply(messages: Sequence[Message]) -> dict[str, Any]:
        turn = sum(1 for m in messages if m.role == "assistant")
        return calls(
            ("lookup_capital", {"country": "Atlantis"}),
            ("calculator", {"expression": f"{turn} + 1"}),
            turn=turn,
        )

    model = ScriptedModel(reply)
    result = Agent(model, seed_tools, max_rounds=10).run("Capital of Atlantis?")

    assert result.status == "cycle"
    assert "lookup_capital failed 3 times with the same arguments" in (result.error or "")
    assert len(model.requests) == 3
    (note,) = [n for n in notes(result.messages) if "failed" in n]
    assert note.startswith("Note: lookup_capital has now failed 2 times")
    assert "unknown country 'Atlantis'" in note


def test_a_call_failing_in_two_turns_apart_gets_one_note_and_the_run_goes_on() -> None:
    model = ScriptedModel(
        [
            calls(("lookup_capital", {"country": "Atlantis"}), turn=1),
            calls(("lookup_capital", {"country": "France"}), turn=2),
            calls(("lookup_capital", {"country": "Atlantis"}), turn=3),
            "Paris; Atlantis has none.",
        ]
    )
    result = Agent(model, seed_tools).run("Capitals of France and Atlantis?")
    # Atlantis failed in two turns, not in a row: one note, and the run goes on.
    assert result.status == "completed"
    assert len([n for n in notes(result.messages) if "has now failed 2 times" in n]) == 1


def test_without_a_cycle_limit_the_note_comes_and_the_run_goes_on() -> None:
    def reply(messages: Sequence[Message]) -> dict[str, Any]:
        turn = sum(1 for m in messages if m.role == "assistant")
        return calls(("lookup_capital", {"country": "Atlantis"}), turn=turn)

    result = Agent(
        ScriptedModel(reply), seed_tools, max_rounds=4, limits=Limits(cycle_limit=None)
    ).run("x")
    assert result.status == "max_rounds"
    assert any("has now failed" in n for n in notes(result.messages))


def test_a_script_that_keeps_failing_the_same_call_stops_the_run() -> None:
    script = (
        "import tools, random\n"
        "print(tools.calculator(str(random.random())))\n"
        "print(tools.lookup_capital('Atlantis'))\n"
    )
    model = ScriptedModel(lambda messages: fenced(script))
    agent = Agent(
        model, seed_tools, convention="code", max_rounds=10, limits=Limits(script_timeout=20)
    )
    with agent:
        result = agent.run("Capital of Atlantis?")
    assert result.status == "cycle"
    assert "lookup_capital failed 3 times" in (result.error or "")
    assert len(result.scripts) == 3


def test_a_script_that_printed_nothing_gets_its_calls_results() -> None:
    script = (
        "import tools\n"
        "capital = tools.lookup_capital('Japan')\n"
        "rate = tools.get_exchange_rate('USD', 'EUR')\n"
    )
    model = ScriptedModel([fenced(script), "Tokyo."])
    agent = Agent(model, seed_tools, convention="code", limits=Limits(script_timeout=20))
    with agent:
        result = agent.run("Capital of Japan?")
    assert result.status == "completed"
    shown = next(m.content or "" for m in result.messages if m.role == "tool")
    assert shown.startswith("The script printed nothing. Its calls returned:")
    assert "lookup_capital(country='Japan') -> Tokyo" in shown
    assert "get_exchange_rate(base='USD', target='EUR') -> 0.92" in shown


def test_a_denied_call_asked_again_is_not_a_failing_call() -> None:
    # The approval gate denies it again each time; the model may go on and answer.
    from tooluse import tool

    @tool(side_effects=True)
    def send_money(to: str, amount: float) -> str:
        """Send money to an account."""
        return "sent"

    replies: list[dict[str, Any] | str] = [
        calls(("send_money", {"to": "X", "amount": 5.0}), turn=t) for t in range(3)
    ]
    model = ScriptedModel([*replies, "I was not allowed to send it."])
    result = Agent(model, [send_money], approval=lambda request: False).run("Send 5 to X")
    assert result.status == "completed"
    assert [r.kind for r in result.rejected] == ["denied"] * 3


def test_the_same_script_with_the_same_output_gets_a_note_then_stops_the_run() -> None:
    # Its tool reports failure in its result, as many APIs do, so no call fails: only
    # the script and its output repeat.
    from tooluse import tool

    @tool
    def move(source: str, destination: str) -> dict[str, str]:
        """Move a file.

        Args:
            source: the file's name
            destination: the directory to move it into
        """
        return {"error": f"mv: cannot move '{source}': No such file or directory"}

    script = "import tools\ntools.move('log.txt', 'archive')\n"
    model = ScriptedModel(lambda messages: fenced(script))
    agent = Agent(model, [move], convention="code", max_rounds=20, limits=Limits(script_timeout=20))
    with agent:
        result = agent.run("Move log.txt into archive.")
    assert result.status == "cycle"
    assert "the same script ran 5 times" in (result.error or "")
    assert len(result.scripts) == 5
    script_notes = [n for n in notes(result.messages) if "this script has now run" in n]
    assert [n.split(" with")[0] for n in script_notes] == [
        "Note: this script has now run 3 times",
        "Note: this script has now run 4 times",
    ]


def test_a_script_run_again_whose_output_changes_is_no_cycle() -> None:
    # The same code, a different result each time (the rate moved): not a loop.
    rates = iter(range(100))
    from tooluse import tool

    @tool
    def rate() -> int:
        """Today's rate, as it is now."""
        return next(rates)

    script = "import tools\nprint(tools.rate())\n"
    replies: list[dict[str, str] | str] = [fenced(script)] * 6
    model = ScriptedModel([*replies, "Done."])
    agent = Agent(model, [rate], convention="code", max_rounds=10, limits=Limits(script_timeout=20))
    with agent:
        result = agent.run("Watch the rate.")
    assert result.status == "completed"
    assert not any("this script has now run" in n for n in notes(result.messages))
