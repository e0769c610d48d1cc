"""`run_script(sandbox, script, tools)`: the public contract for running a script with tools."""

from __future__ import annotations

import pytest

from examples.seed_tools import toolbox as seed_tools
from tooluse import UsageError, arun_script, run_script
from tooluse.sandbox import Sandbox


def test_run_with_a_toolbox_records_every_call() -> None:
    script = (
        "import tools\n"
        "rate = tools.get_exchange_rate('USD', target='EUR')\n"
        "print(round(100 * rate, 2))\n"
        "try:\n"
        "    tools.calculator(expression=3)\n"
        "except tools.ToolError as e:\n"
        "    print(e.kind)\n"
    )
    with Sandbox() as sb:
        r = run_script(sb, script, seed_tools, timeout=10)
        assert sb.isolation == "bwrap+seccomp"
    assert r.ok and r.stdout == "92.0\nvalidation\n" and r.error is None and not r.truncated
    (call,) = r.calls
    assert call.arguments == {"base": "USD", "target": "EUR"} and call.result == 0.92
    (rejected,) = r.rejected
    assert "argument 'expression' must be string" in rejected.error


def test_run_reports_a_failing_script() -> None:
    with Sandbox() as sb:
        r = run_script(
            sb,
            "import tools\nprint(tools.lookup_capital('Kenya'))\nraise ValueError('x')",
            seed_tools,
        )
    assert r.status == "error" and r.stdout == "Nairobi\n"
    assert r.error is not None and "ValueError: x" in r.error
    assert [c.result for c in r.calls] == ["Nairobi"]


async def test_run_script_inside_an_event_loop_says_to_await_arun_script() -> None:
    with Sandbox() as sb:
        with pytest.raises(UsageError, match="await arun_script"):
            run_script(sb, "print(1)", seed_tools)
        r = await arun_script(sb, "import tools\nprint(tools.lookup_capital('Kenya'))", seed_tools)
    assert r.ok and r.stdout == "Nairobi\n"
