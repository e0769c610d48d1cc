"""The code convention end to end: scripted model, real sandbox, real tools on the host."""

from __future__ import annotations

import pytest

from examples.seed_tools import toolbox as seed_tools
from tooluse import Agent, Limits, Message, RunResult, Toolbox, ToolCall, tool
from tooluse._messages import openai_messages
from tooluse.models import ScriptedModel
from tooluse.run._loop import NO_CALL_NOTE


def fenced(code: str) -> dict[str, str]:
    return {"content": f"```python\n{code}\n```"}


def run(
    agents: list[Agent], replies: list[dict[str, str]], tools: Toolbox = seed_tools
) -> RunResult:
    agent = Agent(
        ScriptedModel(replies), tools, convention="code", limits=Limits(script_timeout=20)
    )
    agents.append(agent)
    return agent.run("task")


def test_fan_out_in_one_script_keeps_the_conversation_short(agents: list[Agent]) -> None:
    script = (
        "import tools\n"
        "wanted = [{'category': 'fruit', 'page': p} for p in range(1, 6)]\n"
        "pages = tools.parallel(tools.list_items, wanted)\n"
        "items = [i for page in pages for i in page['items']]\n"
        "print(len(items), items[0], items[-1])\n"
    )
    result = run(agents, [fenced(script), {"content": "47 fruits."}])
    assert result.status == "completed" and result.answer == "47 fruits."
    assert [m.role for m in result.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert result.messages[3].content == "47 fruit-001 fruit-047"
    assert len(result.calls) == 5 and {c.source for c in result.calls} == {"script"}
    assert len({c.id for c in result.calls}) == 5
    assert sorted(c.arguments["page"] for c in result.calls) == [1, 2, 3, 4, 5]
    (script_record,) = result.scripts
    assert script_record.status == "ok" and script_record.calls == 5


def test_tool_errors_and_invalid_arguments_are_catchable_and_recorded(
    agents: list[Agent],
) -> None:
    script = (
        "import tools\n"
        "try:\n"
        "    tools.get_current_weather('Paris', unit='kelvin')\n"
        "except tools.ToolError as e:\n"
        "    print('refused:', e.kind)\n"
        "try:\n"
        "    tools.lookup_capital('Atlantis')\n"
        "except tools.ToolError as e:\n"
        "    print('failed:', e.kind)\n"
    )
    result = run(agents, [fenced(script), {"content": "ok"}])
    assert result.messages[3].content == "refused: validation\nfailed: tool"
    (rejected,) = result.rejected
    assert "must be one of" in rejected.error and rejected.source == "script"
    (failed,) = result.calls
    assert "unknown country 'Atlantis'" in (failed.error or "")


def test_a_failing_script_reports_its_own_traceback(agents: list[Agent]) -> None:
    script = "import tools\nrate = tools.get_exchange_rate('USD', 'EUR')\nprint(rate)\n1 / 0\n"
    result = run(agents, [fenced(script), {"content": "gave up"}])
    content = result.messages[3].content or ""
    assert content.startswith("0.92\nError:") and "ZeroDivisionError" in content
    assert "line 4" in content
    assert result.scripts[0].status == "error"
    assert [c.result for c in result.calls] == [0.92]  # what ran before the failure is kept


@pytest.mark.parametrize(
    ("first", "said"),
    [
        ("print(tools.lookup_capital('Japan')", "syntax error at line 1"),
        ("lookup_capital Japan", "is written as a shell command"),  # a tool run as in a shell
    ],
)
def test_scripts_that_cannot_run_are_fed_back_without_running(
    agents: list[Agent], first: str, said: str
) -> None:
    result = run(
        agents,
        [
            fenced(first),
            fenced("import tools\nprint(tools.lookup_capital('Japan'))"),
            {"content": "Tokyo"},
        ],
    )
    assert result.status == "completed"
    assert said in (result.messages[3].content or "")
    assert [c.name for c in result.calls] == ["lookup_capital"]
    assert len(result.scripts) == 1 and result.messages[5].content == "Tokyo"


def test_retried_script_does_not_repeat_side_effects(agents: list[Agent]) -> None:
    sent: list[str] = []

    @tool(side_effects=True)
    def send_invoice(customer: str, amount: float) -> str:
        """Send an invoice."""
        sent.append(customer)
        return f"invoice to {customer}"

    script = (
        "import tools\n"
        "for name in ['ada', 'bob', 'cy']:\n"
        "    print(tools.send_invoice(name, 10.0))\n"
        "    if name == 'bob' and FAIL:\n"
        "        raise RuntimeError('half-way')\n"
    )
    result = run(
        agents,
        [
            fenced("FAIL = True\n" + script),
            fenced("FAIL = False\n" + script),
            {"content": "sent"},
        ],
        Toolbox([send_invoice]),
    )
    assert sent == ["ada", "bob", "cy"]  # ada and bob were not sent twice
    replayed = [c.arguments["customer"] for c in result.calls if c.replayed]
    assert replayed == ["ada", "bob"]


def test_every_tool_message_answers_one_record(agents: list[Agent]) -> None:
    result = run(
        agents,
        [
            fenced("import tools\nprint(tools.calculator('2 ** 10'))"),
            fenced("print('no tools')"),
            {"content": "1024"},
        ],
    )
    tool_messages = [m for m in result.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_messages] == [s.id for s in result.scripts]
    assert tool_messages[0].content == result.scripts[0].content == "1024.0"
    # What the script printed, and a note that it called no tool.
    assert result.scripts[1].content == "no tools"
    assert tool_messages[1].content == f"no tools\n{NO_CALL_NOTE}"


def test_a_script_that_types_in_its_data_is_told_it_called_no_tool(
    agents: list[Agent],
) -> None:
    result = run(
        agents,
        [
            fenced("weather = {'city': 'Paris', 'temp': 21}\nprint(weather)"),
            fenced("import tools\nprint(tools.get_current_weather('Paris, France'))"),
            {"content": "It is 22 degrees."},
        ],
    )
    typed_in, looked_up = [m.content or "" for m in result.messages if m.role == "tool"]
    assert typed_in.endswith(NO_CALL_NOTE) and "{'city': 'Paris'" in typed_in
    assert NO_CALL_NOTE not in looked_up and [c.name for c in result.calls] == [
        "get_current_weather"
    ]


def test_script_output_is_a_user_message_on_the_wire() -> None:
    messages = [
        Message("user", "task", id="m1"),
        Message("assistant", "```python\nprint(1)\n```", id="m2"),
        Message("tool", "1", tool_call_id="script_1", name="python", id="m3"),
        Message("assistant", None, (ToolCall("c1", "f", "{}"),), id="m4"),
        Message("tool", "ok", tool_call_id="c1", name="f", id="m5"),
    ]
    wire = openai_messages(messages)
    assert wire[2] == {"role": "user", "content": "Output of python:\n1"}
    assert wire[4] == {"role": "tool", "content": "ok", "tool_call_id": "c1"}


def test_a_second_run_sees_nothing_a_first_runs_script_left(agents: list[Agent]) -> None:
    """One agent, two runs (two users' tasks): the scratch directory is the script's own."""
    agent = Agent(
        ScriptedModel(
            [
                fenced("open('/tmp/card.txt', 'w').write('4111 1111 1111 1111')\nprint('saved')"),
                {"content": "Saved."},
                fenced("import os\nprint(sorted(os.listdir('/tmp')), os.path.exists('card.txt'))"),
                {"content": "Nothing there."},
            ]
        ),
        seed_tools,
        convention="code",
        limits=Limits(script_timeout=20),
    )
    agents.append(agent)
    first = agent.run("save the card")
    assert first.messages[3].content.startswith("saved\n")
    second = agent.run("look around")
    assert second.messages[3].content.startswith("[] False\n")


def test_a_huge_error_reaches_the_model_cut_to_the_output_limit(agents: list[Agent]) -> None:
    result = run(agents, [fenced("raise ValueError('x' * 3_000_000)"), {"content": "It failed."}])
    tool_message = result.messages[3].content
    assert "characters cut" in tool_message
    limit = agents[0].sandbox().limits.max_output_bytes
    assert len(tool_message) <= limit + 500
