"""Tool calls from scripts: proxies, errors, fan-out, async, the call cap."""

from __future__ import annotations

import asyncio
import json

import pytest

from tooluse import UsageError
from tooluse.sandbox import ExecResult, ProxySpec, Sandbox, ToolReply

pytestmark = pytest.mark.usefixtures("no_leftovers")

WEATHER = ProxySpec("get_weather", ["location", "unit"])
ECHO = ProxySpec("echo", ["value"])
SLOW = ProxySpec("slow", ["seconds"])
FAIL = ProxySpec("fail", ["kind"])
TOOLS = [WEATHER, ECHO, SLOW, FAIL]


class Host:
    """A handler that records what it was asked and how many calls overlapped."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, object]]] = []
        self.running = 0
        self.peak = 0

    async def __call__(self, name: str, arguments: dict[str, object]) -> ToolReply:
        self.calls.append((name, arguments))
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            if name == "get_weather":
                unit = arguments.get("unit", "c")
                return ToolReply.ok({"location": arguments["location"], "temp": 21, "unit": unit})
            if name == "echo":
                return ToolReply.ok(arguments["value"])
            if name == "slow":
                await asyncio.sleep(float(str(arguments["seconds"])))
                return ToolReply.ok("slept")
            if arguments.get("kind") == "crash":
                raise RuntimeError("the database is down")
            return ToolReply.fail("unit must be 'c' or 'f'", kind="validation")
        finally:
            self.running -= 1


async def run(
    sandbox: Sandbox,
    script: str,
    host: Host | None = None,
    *,
    max_calls: int | None = 1_000,
    timeout: float = 10.0,
    module_name: str = "tools",
) -> ExecResult:
    return await sandbox.execute(
        script,
        tools=TOOLS,
        handler=host or Host(),
        max_calls=max_calls,
        timeout=timeout,
        module_name=module_name,
    )


async def test_positional_and_keyword_arguments(sandbox: Sandbox) -> None:
    host = Host()
    script = (
        "import tools\n"
        "from tools import get_weather\n"
        "print(get_weather('Paris'))\n"
        "print(tools.get_weather('Oslo', unit='f'))\n"
        "print(get_weather(location='Rome', extra=1)['location'])\n"
    )
    result = await run(sandbox, script, host)
    assert result.status == "ok", result.error
    assert result.stdout.splitlines() == [
        "{'location': 'Paris', 'temp': 21, 'unit': 'c'}",
        "{'location': 'Oslo', 'temp': 21, 'unit': 'f'}",
        "Rome",
    ]
    assert host.calls == [
        ("get_weather", {"location": "Paris"}),
        ("get_weather", {"location": "Oslo", "unit": "f"}),
        ("get_weather", {"location": "Rome", "extra": 1}),
    ]
    assert result.calls_made == 3


async def test_results_are_plain_json_values(sandbox: Sandbox) -> None:
    script = (
        "from tools import echo\n"
        "for value in [None, True, 3, 2.5, 'text', [1, 'a'], {'k': {'n': [1]}}]:\n"
        "    print(repr(echo(value)))\n"
    )
    result = await run(sandbox, script)
    assert result.stdout.splitlines() == [
        "None",
        "True",
        "3",
        "2.5",
        "'text'",
        "[1, 'a']",
        "{'k': {'n': [1]}}",
    ]


async def test_bad_arguments_fail_in_the_script(sandbox: Sandbox) -> None:
    script = (
        "from tools import get_weather, echo\n"
        "for attempt in (lambda: get_weather('a', 'c', 'extra'),\n"
        "                lambda: get_weather('a', location='b'),\n"
        "                lambda: echo({1, 2})):\n"
        "    try:\n"
        "        attempt()\n"
        "    except TypeError as exc:\n"
        "        print(exc)\n"
    )
    result = await run(sandbox, script)
    assert result.stdout.splitlines() == [
        "get_weather() takes 2 positional arguments but 3 were given",
        "get_weather() got multiple values for argument 'location'",
        "arguments to echo() must be JSON values: Object of type set is not JSON serializable",
    ]
    assert result.calls_made == 0


@pytest.mark.parametrize("served_by", ["loop", "channel thread"])
async def test_arguments_too_deep_or_too_long_are_refused_calls(
    sandbox: Sandbox, served_by: str
) -> None:
    # JSON values that cannot travel: the script's own encoder gives up on them first; a
    # script that lifts its own limits sends them, and the host refuses what it cannot
    # read. Either way the script gets a ToolError and goes on.
    script = (
        "import functools, sys, tools\n"
        "deep = functools.reduce(lambda inner, _: [inner], range(5000), [])\n"
        "attempts = {\n"
        "    'deep': lambda: tools.echo(deep),\n"
        "    'long': lambda: tools.echo(10 ** 5000),\n"
        "    'parallel': lambda: tools.parallel(tools.echo, [1, [deep]]),\n"
        "}\n"
        "def attempt_all():\n"
        "    for label, attempt in attempts.items():\n"
        "        try:\n"
        "            attempt()\n"
        "        except tools.ToolError as exc:\n"
        "            print(label, exc.kind, str(exc).split(':')[0])\n"
        "attempt_all()\n"
        "sys.setrecursionlimit(20_000)\n"
        "sys.set_int_max_str_digits(0)\n"
        "attempt_all()\n"
        "print(tools.echo('still here'))\n"
    )
    host = Host()
    result = await sandbox.execute(
        script,
        tools=TOOLS,
        handler=host,
        direct=(lambda name, arguments: None) if served_by == "channel thread" else None,
    )
    assert result.status == "ok", result.error
    assert result.stdout.splitlines() == [
        "deep validation the arguments to echo() cannot be sent",
        "long validation the arguments to echo() cannot be sent",
        "parallel validation the arguments to echo() cannot be sent",
        "deep validation the arguments cannot be read",
        "long validation the arguments cannot be read",
        "parallel validation the arguments cannot be read",
        "still here",
    ]
    assert host.calls == [
        ("echo", {"value": 1}),
        ("echo", {"value": 1}),
        ("echo", {"value": "still here"}),
    ]
    assert result.calls_made == 6


async def test_tool_error_caught_by_the_script(sandbox: Sandbox) -> None:
    script = (
        "import tools\n"
        "try:\n"
        "    tools.fail('validation')\n"
        "except tools.ToolError as exc:\n"
        "    print(exc.kind, exc.tool, '|', exc)\n"
    )
    result = await run(sandbox, script)
    assert result.status == "ok"
    assert result.stdout == "validation fail | unit must be 'c' or 'f'\n"


async def test_uncaught_tool_error(sandbox: Sandbox) -> None:
    result = await run(sandbox, "from tools import fail\nprint('before')\nfail('validation')\n")
    assert result.status == "error"
    assert result.stdout == "before\n"
    assert result.error == (
        "Traceback (most recent call last):\n"
        '  File "script.py", line 3, in <module>\n'
        "    fail('validation')\n"
        "tools.ToolError: unit must be 'c' or 'f'"
    )


async def test_handler_exception_becomes_a_tool_error(sandbox: Sandbox) -> None:
    script = (
        "import tools\n"
        "try:\n"
        "    tools.fail('crash')\n"
        "except tools.ToolError as exc:\n"
        "    print(exc.kind, exc)\n"
    )
    result = await run(sandbox, script)
    assert result.stdout == "internal RuntimeError: the database is down\n"


async def test_non_json_result_becomes_a_tool_error(sandbox: Sandbox) -> None:
    async def handler(name: str, arguments: dict[str, object]) -> ToolReply:
        return ToolReply.ok({1, 2})

    script = (
        "import tools\ntry:\n    tools.echo(1)\nexcept tools.ToolError as e:\n    print(e.kind)"
    )
    result = await sandbox.execute(script, tools=[ECHO], handler=handler)
    assert result.stdout == "internal\n"


async def test_plain_function_handler(sandbox: Sandbox) -> None:
    def handler(name: str, arguments: dict[str, object]) -> ToolReply:
        value = arguments["value"]
        assert isinstance(value, int)
        return ToolReply.ok(value * 2)

    result = await sandbox.execute(
        "import tools\nprint(tools.echo(21))", tools=[ECHO], handler=handler
    )
    assert result.stdout == "42\n"


async def test_async_handler_runs_in_a_task(sandbox: Sandbox) -> None:
    # Handlers that finish at once skip the event loop's scheduling, but an async handler
    # still runs as a task: asyncio.timeout() and libraries that look for the current task
    # (anyio, httpx) work in it.
    async def handler(name: str, arguments: dict[str, object]) -> ToolReply:
        async with asyncio.timeout(5):
            return ToolReply.ok(asyncio.current_task() is not None)

    result = await sandbox.execute(
        "import tools\nprint(tools.echo(1), tools.echo(2))", tools=[ECHO], handler=handler
    )
    assert result.stdout == "True True\n"


async def test_large_arguments_and_results(sandbox: Sandbox) -> None:
    # Several MiB each way: more than one read per line, and more than the socket buffers
    # hold, so the host keeps what the script has not read yet.
    script = (
        "import tools\n"
        "sent = 'ab' * 1_500_000\n"
        "back = tools.echo(sent)\n"
        "print(len(back), back == sent, tools.echo('small'))\n"
    )
    result = await run(sandbox, script)
    assert result.status == "ok", result.error
    assert result.stdout == "3000000 True small\n"


async def test_replies_the_script_never_reads(sandbox: Sandbox) -> None:
    # Forged calls whose replies outgrow the pipe's buffer; the script ends without
    # reading them and the host neither blocks nor fails.
    script = (
        "import json, os, tools\n"
        "cells = [cell.cell_contents for cell in tools.echo.__closure__]\n"
        "calls = next(c.calls for c in cells if hasattr(c, 'calls'))\n"
        "call = {'t': 'call', 'name': 'echo', 'args': {'value': 'x' * 10_000}}\n"
        "for i in range(300):\n"
        "    line = json.dumps({**call, 'id': 10_000 + i}).encode() + b'\\n'\n"
        "    while line:\n"
        "        line = line[os.write(calls, line):]\n"
        "print('sent')\n"
    )
    result = await run(sandbox, script)
    assert (result.status, result.stdout) == ("ok", "sent\n"), result.error


async def test_circular_result_becomes_a_tool_error(sandbox: Sandbox) -> None:
    def handler(name: str, arguments: dict[str, object]) -> ToolReply:
        loop: list[object] = []
        loop.append(loop)
        return ToolReply.ok(loop)

    script = (
        "import tools\ntry:\n    tools.echo(1)\nexcept tools.ToolError as e:\n"
        '    print(e.kind, str(e).startswith("the tool\'s result is not a JSON value"))'
    )
    result = await sandbox.execute(script, tools=[ECHO], handler=handler)
    assert result.stdout == "internal True\n"


async def test_custom_module_name(sandbox: Sandbox) -> None:
    result = await run(
        sandbox, "import weather_api as w\nprint(w.echo('hi'))", module_name="weather_api"
    )
    assert result.stdout == "hi\n"


async def test_forged_call_to_an_unpublished_tool_is_refused(sandbox: Sandbox) -> None:
    host = Host()
    script = (
        "import json, os, tools\n"
        "cells = [cell.cell_contents for cell in tools.echo.__closure__]\n"
        "channel = next(c for c in cells if hasattr(c, 'calls'))\n"
        "forged = {'t': 'call', 'id': 999, 'name': 'rm_rf', 'args': {}}\n"
        "os.write(channel.calls, json.dumps(forged).encode() + b'\\n')\n"
        "channel.ready.poll()\n"
        "print(os.read(channel.replies_fd, 1000).decode().strip())\n"
    )
    result = await run(sandbox, script, host)
    assert json.loads(result.stdout)["kind"] == "unknown_tool"
    assert host.calls == []


async def test_script_that_never_calls_a_tool(sandbox: Sandbox) -> None:
    host = Host()
    result = await run(sandbox, "import tools\nprint(len(tools.__all__))", host)
    assert (result.status, result.stdout, result.calls_made) == ("ok", "6\n", 0)
    assert host.calls == []


async def test_call_cap_stops_a_runaway_loop(sandbox: Sandbox) -> None:
    script = "from tools import echo\nfor i in range(10_000):\n    echo(i)\nprint('finished')"
    result = await run(sandbox, script)
    assert (result.status, result.limit) == ("killed", "calls")
    assert result.calls_made == 1_000
    assert result.error is not None
    assert result.error.startswith("the script made more than 1,000 tool calls")
    assert "finished" not in result.stdout


async def test_ten_thousand_calls_without_a_cap(sandbox: Sandbox) -> None:
    script = "from tools import echo\ntotal = sum(echo(i) for i in range(10_000))\nprint(total)"
    result = await run(sandbox, script, max_calls=None, timeout=60)
    assert result.status == "ok", result.error
    assert result.stdout == f"{sum(range(10_000))}\n"
    assert result.calls_made == 10_000


async def test_parallel_fan_out_of_100_calls(sandbox: Sandbox) -> None:
    host = Host()
    script = (
        "import tools\n"
        "cities = [f'city{i}' for i in range(100)]\n"
        "reports = tools.parallel(tools.get_weather, cities)\n"
        "print(len(reports), reports[0]['location'], reports[99]['location'])\n"
        "slept = tools.parallel(tools.slow, [{'seconds': 0.05}] * 100)\n"
        "print(set(slept))\n"
    )
    result = await run(sandbox, script, host)
    assert result.status == "ok", result.error
    assert result.stdout == "100 city0 city99\n{'slept'}\n"
    assert result.calls_made == 200
    # The host ran them side by side, up to its concurrency limit.
    assert host.peak == sandbox.limits.max_concurrent_calls


async def test_parallel_item_forms_and_failures(sandbox: Sandbox) -> None:
    script = (
        "import tools\n"
        "print(tools.parallel('get_weather', [('Paris', 'f'), {'location': 'Oslo'}]))\n"
        "items = ['validation', 'validation']\n"
        "out = tools.parallel(tools.fail, items, return_exceptions=True)\n"
        "print([type(x).__name__ for x in out])\n"
        "try:\n"
        "    tools.parallel(tools.echo, [1, 2, 3])\n"
        "    tools.parallel(tools.fail, ['validation'])\n"
        "except tools.ToolError as exc:\n"
        "    print('raised:', exc, exc.__notes__)\n"
    )
    result = await run(sandbox, script)
    assert result.status == "ok", result.error
    assert result.stdout.splitlines() == [
        "[{'location': 'Paris', 'temp': 21, 'unit': 'f'}, "
        "{'location': 'Oslo', 'temp': 21, 'unit': 'c'}]",
        "['ToolError', 'ToolError']",
        "raised: unit must be 'c' or 'f' ['(item 0 of the parallel() call)']",
    ]


async def test_async_proxies_with_gather(sandbox: Sandbox) -> None:
    host = Host()
    script = (
        "import asyncio, tools\n"
        "async def main():\n"
        "    got = await asyncio.gather(*(tools.slow.aio(0.05) for _ in range(20)))\n"
        "    one = await tools.get_weather.aio('Lima')\n"
        "    try:\n"
        "        await tools.fail.aio('validation')\n"
        "    except tools.ToolError as exc:\n"
        "        print('failed:', exc.kind)\n"
        "    print(len(got), one['location'], tools.echo('sync too'))\n"
        "asyncio.run(main())\n"
    )
    result = await run(sandbox, script, host)
    assert result.status == "ok", result.error
    assert result.stdout.splitlines() == ["failed: validation", "20 Lima sync too"]
    assert host.peak == 20


async def test_top_level_await_on_a_tool(sandbox: Sandbox) -> None:
    script = (
        "import asyncio, tools\nprint(await asyncio.gather(tools.echo.aio(1), tools.echo.aio(2)))"
    )
    result = await run(sandbox, script)
    assert result.stdout == "[1, 2]\n"


async def test_calls_are_refused_without_a_handler(sandbox: Sandbox) -> None:
    script = (
        "import tools\ntry:\n    tools.echo(1)\nexcept tools.ToolError as e:\n    print(e.kind)"
    )
    result = await sandbox.execute(script, tools=[ECHO])
    assert result.stdout == "internal\n"


def test_proxy_spec_validation() -> None:
    with pytest.raises(UsageError, match="reserved"):
        ProxySpec("parallel")
    with pytest.raises(UsageError, match="identifier"):
        ProxySpec("get-weather")
    with pytest.raises(UsageError, match="identifier"):
        ProxySpec("f", ["class"])
    with pytest.raises(TypeError):
        ProxySpec("f", "abc")
    with pytest.raises(UsageError, match="positional"):
        ProxySpec("f", ["a"], positional=2)
    assert ProxySpec("f", ["a", "b"]).params == ("a", "b")
    assert ProxySpec("f", ["a", "b"]).positional == 2
    assert ProxySpec("f", ["a", "b"], positional=1).positional == 1
