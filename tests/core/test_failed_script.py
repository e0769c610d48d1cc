"""The note for an answer right after a script that raised once some of its calls had
returned: a small model writes a whole script before it sees a result, looks up an
identifier of its own after listing the real ones, and then answers with the failure."""

from __future__ import annotations

from typing import Any

from tooluse import Agent, tool
from tooluse.models import ScriptedModel
from tooluse.run._loop import FAILED_SCRIPT_NOTE

STOCK = {"GAR-2425": 7, "GAR-F66A": 5}


@tool
def list_products(category: str) -> list[str]:
    """List the SKU of every product in a category."""
    return sorted(STOCK) if category == "garden" else []


@tool
def get_stock(sku: str) -> int:
    """Return how many units of a product are in stock."""
    if sku not in STOCK:
        raise KeyError(f"no product with SKU {sku!r}")
    return STOCK[sku]


def script(code: str) -> str:
    return f"```python\n{code}\n```"


GUESSED = script("print(list_products('garden'))\nprint(get_stock('GAR-1F2A'))")
GAVE_UP = "The stock of the product with SKU 'GAR-1F2A' is not available."
LOOPED = script("print(sum(get_stock(s) for s in list_products('garden')))")
TASK = "What is the total stock of the garden category?"


def test_an_answer_after_a_script_that_failed_past_a_result_gets_the_note() -> None:
    seen: list[dict[str, Any]] = []
    model = ScriptedModel([GUESSED, GAVE_UP, LOOPED, "12 units in all."])
    with Agent(model, [list_products, get_stock], convention="code", on_event=seen.append) as agent:
        result = agent.run(TASK)
    assert result.status == "completed" and result.answer == "12 units in all."
    assert [s.status for s in result.scripts] == ["error", "ok"]
    notes = [e["text"] for e in seen if e["event"] == "feedback"]
    assert notes == [FAILED_SCRIPT_NOTE]
    # The note follows the answer it is about; the model then wrote the script again.
    contents = [m.content for m in result.messages]
    assert contents.index(FAILED_SCRIPT_NOTE) == contents.index(GAVE_UP) + 1


def test_the_note_comes_once_and_the_answer_after_it_ends_the_run() -> None:
    model = ScriptedModel([GUESSED, GAVE_UP, GAVE_UP])
    with Agent(model, [list_products, get_stock], convention="code") as agent:
        result = agent.run(TASK)
    assert result.status == "completed" and result.answer == GAVE_UP
    assert [m.content for m in result.messages].count(FAILED_SCRIPT_NOTE) == 1


def test_no_note_when_the_script_failed_before_any_call_returned() -> None:
    # The first call failed: nothing was returned that a second script could use.
    first_fails = script("print(get_stock('GAR-1F2A'))")
    model = ScriptedModel([first_fails, "There is no product GAR-1F2A."])
    with Agent(model, [list_products, get_stock], convention="code") as agent:
        result = agent.run(TASK)
    assert result.answer == "There is no product GAR-1F2A."
    assert FAILED_SCRIPT_NOTE not in [m.content for m in result.messages]


def test_no_note_for_an_answer_after_a_script_that_ran() -> None:
    model = ScriptedModel([LOOPED, "12 units in all."])
    with Agent(model, [list_products, get_stock], convention="code") as agent:
        result = agent.run(TASK)
    assert result.answer == "12 units in all."
    assert [m.role for m in result.messages] == ["system", "user", "assistant", "tool", "assistant"]


def test_no_note_in_the_last_round() -> None:
    model = ScriptedModel([GUESSED, GAVE_UP])
    with Agent(model, [list_products, get_stock], convention="code", max_rounds=2) as agent:
        result = agent.run(TASK)
    assert result.status == "completed" and result.answer == GAVE_UP
    assert FAILED_SCRIPT_NOTE not in [m.content for m in result.messages]
