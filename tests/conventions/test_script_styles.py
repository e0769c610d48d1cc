"""Scripts as models write them: bare tool names, `import tools`, and awaited calls.

Each style runs through the real agent loop, sandbox and dispatcher; every call it
makes must arrive on the host as a validated, recorded call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tooluse import Agent, Limits, RunResult, Toolbox, tool
from tooluse.models import ScriptedModel

Make = Callable[[str], Agent]


@tool
def get_weather(city: str) -> dict[str, object]:
    """Current weather in a city.

    Args:
        city: City name, e.g. 'Paris'
    """
    return {"city": city, "temp": len(city) * 3}


@tool(name="max")
def largest(values: list[int]) -> int:
    """The largest value, as a tool that shares a builtin's name."""
    return -1


TOOLS = Toolbox([get_weather, largest])
CITIES = ["Paris", "Oslo", "Lima"]


@pytest.fixture
def agent() -> Iterator[Make]:
    agents: list[Agent] = []

    def make(script: str) -> Agent:
        replies = [{"content": f"```python\n{script}\n```"}, {"content": "done"}]
        made = Agent(
            ScriptedModel(replies), TOOLS, convention="code", limits=Limits(script_timeout=20)
        )
        agents.append(made)
        return made

    yield make
    for made in agents:
        made.close()


def run(make: Make, script: str) -> tuple[RunResult, str]:
    result = make(script).run("Weather in three cities")
    (record,) = result.scripts
    assert record.status == "ok", record.error
    return result, record.stdout


def cities_called(result: RunResult) -> list[str]:
    return sorted(str(c.arguments["city"]) for c in result.calls if c.name == "get_weather")


# smolagents' CodeAgent: tools are plain functions in scope, called without any import.
def test_bare_tool_names_need_no_import(agent: Make) -> None:
    script = (
        "for city in ['Paris', 'Oslo', 'Lima']:\n    print(city, get_weather(city=city)['temp'])\n"
    )
    result, stdout = run(agent, script)
    assert stdout == "Paris 15\nOslo 12\nLima 12\n"
    assert cities_called(result) == sorted(CITIES)
    assert {c.source for c in result.calls} == {"script"}


# Scripts written for an async tool API (Anthropic's programmatic tool calling) await
# each call and gather a fan-out.
def test_awaited_and_gathered_bare_calls(agent: Make) -> None:
    script = (
        "import asyncio\n"
        "first = await get_weather(city='Paris')\n"
        "rest = await asyncio.gather(*[get_weather(city=c) for c in ['Oslo', 'Lima']])\n"
        "print(first['temp'], [r['temp'] for r in rest])\n"
    )
    result, stdout = run(agent, script)
    assert stdout == "15 [12, 12]\n"
    assert cities_called(result) == sorted(CITIES)


def test_awaited_calls_through_the_module_and_inside_async_functions(agent: Make) -> None:
    script = (
        "import asyncio\n"
        "import tools as t\n"
        "from tools import get_weather as weather\n"
        "async def one(city):\n"
        "    return (await weather(city=city))['temp']\n"
        "async def main():\n"
        "    a = await t.get_weather(city='Paris')\n"
        "    b = await asyncio.gather(one('Oslo'), one('Lima'))\n"
        "    return a['temp'], b\n"
        "print(asyncio.run(main()))\n"
    )
    result, stdout = run(agent, script)
    assert stdout == "(15, [12, 12])\n"
    assert cities_called(result) == sorted(CITIES)


# The prompt speaks of `tools.parallel` and `tools.ToolError`; small models then use
# the module without importing it.
def test_the_module_needs_no_import_either(agent: Make) -> None:
    script = (
        "temps = tools.parallel(get_weather, [{'city': c} for c in ['Paris', 'Oslo']])\n"
        "try:\n"
        "    tools.get_weather(town='Lima')\n"
        "except tools.ToolError as exc:\n"
        "    print('refused:', exc.kind)\n"
        "print([t['temp'] for t in temps], (await tools.get_weather(city='Lima'))['temp'])\n"
    )
    result, stdout = run(agent, script)
    assert stdout == "refused: validation\n[15, 12] 12\n"
    assert cities_called(result) == sorted(CITIES)


def test_a_script_may_use_the_module_name_for_its_own_value(agent: Make) -> None:
    script = "tools = ['hammer']\nprint(tools[0], get_weather(city='Oslo')['temp'])\n"
    _, stdout = run(agent, script)
    assert stdout == "hammer 12\n"


# The style of `import tools` and `from tools import ...` keeps working unchanged.
def test_module_imports_still_work(agent: Make) -> None:
    script = (
        "import tools\n"
        "from tools import get_weather\n"
        "print(tools.get_weather('Paris')['temp'], get_weather('Oslo')['temp'])\n"
    )
    result, stdout = run(agent, script)
    assert stdout == "15 12\n"
    assert cities_called(result) == ["Oslo", "Paris"]


def test_a_builtin_keeps_its_meaning_over_a_tool_of_the_same_name(agent: Make) -> None:
    script = "import tools\nprint(max([1, 5, 2]), tools.max(values=[1, 5, 2]))\n"
    result, stdout = run(agent, script)
    # The bare name is Python's max; the tool is still reachable through the module.
    assert stdout == "5 -1\n"
    assert [c.name for c in result.calls] == ["max"]


def test_a_name_the_script_defines_is_the_scripts_own(agent: Make) -> None:
    script = (
        "def get_weather(city):\n"
        "    return {'temp': 0}\n"
        "print(get_weather('Paris')['temp'])\n"
        "async def twice():\n"
        "    return get_weather('Oslo')\n"
        "import asyncio\n"
        "print((await twice())['temp'])\n"
    )
    result, stdout = run(agent, script)
    assert stdout == "0\n0\n"
    assert result.calls == []
