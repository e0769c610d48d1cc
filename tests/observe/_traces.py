"""Real traces for the viewer's tests, written by real runs of `Agent` with scripted models."""

from __future__ import annotations

import json
from pathlib import Path

from examples.seed_tools import toolbox as seed_tools
from tooluse import Agent, Toolbox, tool
from tooluse.context import ContextPolicy
from tooluse.eval._report import write_summary
from tooluse.eval._row import Row
from tooluse.models import ScriptedModel

#: Text that would run in the page if the viewer did not escape it.
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
#: What the refusal of the misspelled argument says (part of the validator's message).
REJECTED_WORD = "locaton"
SCRIPT_STDOUT = "weather checked for 2 cities"


@tool
def save_note(text: str) -> str:
    """Save a note and return it as stored.

    Args:
        text: the note
    """
    return f"stored: {text}"


def call(call_id: str, name: str, **arguments: object) -> dict[str, object]:
    return {
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


def json_run(path: Path) -> None:
    """A run with a refused call, a good one, a hostile result and a hostile answer."""
    replies = [
        call("c1", "get_current_weather", locaton="Paris"),
        call("c2", "get_current_weather", location="Paris"),
        call("c3", "save_note", text=HOSTILE),
        {"content": f"Done. {HOSTILE}"},
    ]
    tools = Toolbox([*seed_tools, save_note])
    Agent(ScriptedModel(replies), tools, trace=path).run(f"Weather in Paris? {HOSTILE}")


def code_run(path: Path) -> None:
    """A script that makes two calls, has a third refused, and prints."""
    script = (
        "import tools\n"
        "for city in ['Paris', 'Tokyo']:\n"
        "    tools.get_current_weather(location=city)\n"
        "try:\n"
        "    tools.get_current_weather('Oslo', unit='kelvin')\n"
        "except tools.ToolError:\n"
        "    pass\n"
        f"print({SCRIPT_STDOUT!r})\n"
    )
    replies = [{"content": f"```python\n{script}```"}, {"content": "Both are mild."}]
    with Agent(ScriptedModel(replies), seed_tools, convention="code", trace=path) as agent:
        agent.run("Weather in Paris and Tokyo?")


def context_run(path: Path) -> None:
    """A run whose small budget makes the harness offload old results."""
    replies = [call(f"p{page}", "list_items", category="fruit", page=page) for page in (1, 2, 3, 4)]
    replies.append({"content": "40 fruits."})
    policy = ContextPolicy(budget=620, agent_tools=False)
    Agent(ScriptedModel(replies), seed_tools, context=policy, trace=path).run("List fruits.")


def bench_dir(folder: Path, correct: dict[str, int]) -> Path:
    """A bench directory of BFCL-like rows: per category, how many of 4 entries passed."""
    folder.mkdir()
    rows = []
    for category, passed in correct.items():
        for i in range(4):
            rows.append(
                Row(
                    suite="bfcl",
                    entry_id=f"{category}_{i}",
                    category=category,
                    convention="json",
                    model="m",
                    correct=i < passed,
                    status="completed",
                )
            )
    (folder / "results.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in rows))
    write_summary(folder, rows)
    return folder
