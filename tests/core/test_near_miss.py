"""A failed call whose argument nearly copies a word of the task gets a note naming it."""

from __future__ import annotations

import json

from tooluse import Agent, Toolbox, events, tool
from tooluse.models import ScriptedModel

TASK = "Who manages quinn.eriksen97@corp.example? Answer with their email address."
PEOPLE = {"quinn.eriksen97@corp.example": {"manager_email": "ada.ito12@corp.example"}}


@tool
def get_employee(email: str) -> dict[str, str]:
    """Look up an employee in the company directory.

    Args:
        email: the employee's email address
    """
    return PEOPLE[email]


def lookup(call_id: str, email: str) -> dict[str, object]:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_employee", "arguments": json.dumps({"email": email})},
    }
    return {"tool_calls": [call]}


def test_a_miscopied_argument_of_a_failed_call_gets_the_tasks_own_word() -> None:
    seen: list[events.Event] = []
    model = ScriptedModel(
        [
            lookup("c1", "Quinn.Erikson97@corp.example"),
            lookup("c2", "quinn.eriksen97@corp.example"),
            {"content": "ada.ito12@corp.example"},
        ]
    )
    agent = Agent(
        model, Toolbox([get_employee]), on_event=lambda d: seen.append(events.event_from_dict(d))
    )
    result = agent.run(TASK)
    assert result.status == "completed" and result.answer == "ada.ito12@corp.example"
    notes = [m.content for m in result.messages if m.role == "user"][1:]
    assert notes == [
        "Note: get_employee failed with email='Quinn.Erikson97@corp.example', which the "
        "task writes as 'quinn.eriksen97@corp.example'."
    ]
    assert [e.text for e in seen if isinstance(e, events.Feedback)] == notes
    # The call's record keeps the tool's own error: the note is the runtime's, apart.
    assert result.calls[0].error is not None and "Erikson" in result.calls[0].error


@tool(name="get_employee")
def directory_down(email: str) -> dict[str, str]:
    """Look up an employee in the company directory.

    Args:
        email: the employee's email address
    """
    raise KeyError(f"the directory is down ({email})")


def test_no_note_where_the_argument_is_the_tasks_word_or_far_from_any() -> None:
    for email in ("quinn.eriksen97@corp.example", "someone.else@example.org"):
        model = ScriptedModel([lookup("c1", email), {"content": "I could not find them."}])
        result = Agent(model, Toolbox([directory_down])).run(TASK)
        assert result.calls[0].error is not None
        assert [m for m in result.messages if m.role == "user"][1:] == []
