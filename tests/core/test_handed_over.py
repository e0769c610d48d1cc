"""The notes for an answer that should have been a call: a tool handed to the user as a
command, and a claim that the model cannot act, as small chat-trained models write."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooluse import Agent, Toolbox, tool
from tooluse.models import ScriptedModel
from tooluse.run._loop import HANDED_OVER_NOTE, REFUSAL_NOTE

made: list[str] = []


@tool
def mkdir(dir_name: str) -> dict[str, str]:
    """Create a directory in the current directory."""
    made.append(dir_name)
    return {"created": dir_name}


@tool
def ls() -> dict[str, list[str]]:
    """List the current directory."""
    return {"entries": sorted(made)}


tools = Toolbox([mkdir, ls])


def calls(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ]
    }


HANDED = "To create it, run this command:\n\n```bash\nmkdir Projects\n```"
REFUSED = (
    "I apologize, but as an AI language model, I don't have the ability to execute "
    "commands on your computer. You can run `mkdir Projects` in a terminal."
)


def test_a_tool_handed_to_the_user_as_a_command_gets_a_note_and_a_required_call() -> None:
    made.clear()
    model = ScriptedModel(
        [
            calls("ls", {}, "a1"),
            HANDED,
            calls("mkdir", {"dir_name": "Projects"}, "a2"),
            "Created the directory Projects.",
        ]
    )
    result = Agent(model, tools).run("Create a directory Projects.")
    assert result.status == "completed" and result.answer == "Created the directory Projects."
    assert made == ["Projects"]
    note = result.messages[4]
    assert note.role == "user" and note.content == HANDED_OVER_NOTE.format(name="mkdir")
    # After a call had already run, the note still asks for one more: required until it comes.
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "required", "auto"]


def test_a_refusal_before_any_call_gets_a_note_and_the_call_follows() -> None:
    made.clear()
    model = ScriptedModel(
        [REFUSED, calls("mkdir", {"dir_name": "Projects"}, "b1"), "Created Projects."]
    )
    result = Agent(model, tools).run("Create a directory Projects.")
    assert result.answer == "Created Projects." and made == ["Projects"]
    assert result.messages[2].content == REFUSAL_NOTE
    assert [r.tool_choice for r in model.requests] == ["auto", "required", "auto"]


def test_the_notes_come_once_a_run_and_never_in_the_last_round() -> None:
    twice = ScriptedModel([REFUSED, calls("ls", {}, "c1"), HANDED])
    result = Agent(twice, tools).run("Create a directory Projects.")
    assert result.answer == HANDED and len(twice.requests) == 3
    last = ScriptedModel([HANDED])
    result = Agent(last, tools, max_rounds=1).run("Create a directory Projects.")
    assert result.answer == HANDED and len(last.requests) == 1


@pytest.mark.parametrize(
    "answer",
    [
        # A refusal about something no tool here does, after the tools answered.
        "I listed the directory. I can't access your calendar, though.",
        # A code block that shows a result, not a command to run.
        "The directory holds:\n```\nProjects\nnotes.md\n```",
        # The tool named inside a line of code, not as its command.
        "Done:\n```bash\nsudo mkdir Projects\n```",
        # A claim about the model's reach after a call that worked is an answer.
        "I don't have the ability to execute commands on your computer beyond these tools; "
        "the listing above is complete.",
    ],
)
def test_answers_that_are_answers_get_no_note(answer: str) -> None:
    model = ScriptedModel([calls("ls", {}, "d1"), answer])
    result = Agent(model, tools).run("What is in the directory?")
    assert result.answer == answer and len(model.requests) == 2


def test_a_refusal_right_after_a_failed_call_gets_the_note() -> None:
    model = ScriptedModel(
        [
            calls("mkdir", {"name": "Projects"}, "e1"),  # wrong argument name: refused
            "I'm sorry, but I don't have the capability to create files on your system.",
            calls("mkdir", {"dir_name": "Projects"}, "e2"),
            "Created Projects.",
        ]
    )
    result = Agent(model, tools).run("Create a directory Projects.")
    assert result.answer == "Created Projects."
    assert len(result.rejected) == 1 and [c.error for c in result.calls] == [None]
    assert REFUSAL_NOTE in [m.content for m in result.messages if m.role == "user"]
