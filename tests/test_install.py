"""What `pip install tooluse` brings runs an agent; a command needing an extra says which.

Each test runs a fresh interpreter in which an import hook makes some packages
unimportable, standing for an install without the extra that brings them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# This checkout's sources and its examples, whatever the directory the command runs in.
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}", "COLUMNS": "400", "NO_COLOR": "1"}
EVAL = ("numpy", "matplotlib")

# Installed first in the fresh interpreter: importing any of BLOCKED, or a module
# inside one, fails as it does where the package is not installed.
_HOOK = """
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
"""


def python(
    code: str, blocked: tuple[str, ...] = (), cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter where the `blocked` packages are not installed."""
    return subprocess.run(
        [sys.executable, "-c", f"BLOCKED = {set(blocked)!r}\n{_HOOK}\n{code}"],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def tooluse(
    *args: str, blocked: tuple[str, ...], cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    """The CLI's entry point on `args`, the `blocked` packages not installed."""
    code = f"sys.argv = ['tooluse', *{list(args)!r}]\nfrom tooluse.cli import main\nmain()"
    return python(code, blocked, cwd)


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


# --- what importing loads ----------------------------------------------------------------


@pytest.mark.parametrize(
    "module",
    [
        "tooluse",
        "tooluse.cli",
        "tooluse.models",
        "tooluse.decoding",
        "tooluse.conventions",
        "tooluse.context",
        "tooluse.sandbox",
        "tooluse.tools",
        # The viewer has an extra of its own and reads bench rows without plotting.
        "tooluse.view",
    ],
)
def test_importing_the_runtime_loads_neither_numpy_nor_matplotlib(module: str) -> None:
    proc = python(
        f"import json, {module}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.partition('.')[0] in "
        "('numpy', 'matplotlib'))))"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


# The packages that take longest to import, loaded by the parts that use them: a process
# that needs one part (an MCP server, a command's --help, the sandbox's host) pays for
# that part alone.
HEAVY = ("pydantic", "jsonschema", "referencing", "griffe", "httpx", "httpx2", "mcp", "pygments")


def loaded(code: str) -> list[str]:
    """Which of HEAVY a fresh interpreter holds after running `code`."""
    proc = python(
        f"{code}\nimport json\n"
        f"print(json.dumps(sorted({{m.partition('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))"
    )
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout.splitlines()[-1]))


def test_importing_the_package_loads_none_of_the_heavy_packages() -> None:
    assert loaded("import tooluse") == []
    # Its names are there all the same, each loaded when first used.
    assert "pydantic" in loaded(
        "import tooluse\nassert all(getattr(tooluse, n) is not None for n in tooluse.__all__)"
    )


def test_the_command_line_loads_no_schema_validator_docstring_parser_or_highlighter() -> None:
    assert set(loaded("import tooluse.cli")).isdisjoint(
        {"jsonschema", "referencing", "griffe", "pygments"}
    )


_RUN = """
from tooluse import Agent, tool
from tooluse.models import ScriptedModel


@tool
def double(x: int) -> int:
    \"\"\"Double a number.

    Args:
        x: the number
    \"\"\"
    return 2 * x


def call(arguments):
    return {"tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "double", "arguments": arguments}}]}


valid = Agent(ScriptedModel([call('{"x": 4}'), "done"]), [double]).run("double 4")
assert [c.result for c in valid.calls] == [8], valid.calls
assert "jsonschema" not in sys.modules, "a valid call loaded the Python validator"
invalid = Agent(ScriptedModel([call('{"y": 4}'), "done"]), [double]).run("double 4")
print(invalid.rejected[0].error)
"""


def test_a_valid_call_loads_no_python_schema_validator_and_an_invalid_one_is_worded() -> None:
    # The Rust validator answers "valid?"; jsonschema only words what is wrong.
    proc = python(_RUN)
    assert proc.returncode == 0, proc.stderr
    error = proc.stdout.strip()
    assert "missing required argument 'x'" in error, error
    assert "unknown argument 'y'" in error, error


# --- commands that need an extra say which -------------------------------------------------


@pytest.mark.parametrize("missing", EVAL)
def test_bench_without_the_eval_extra_is_one_line_and_runs_nothing(
    tmp_path: Path, missing: str
) -> None:
    out = tmp_path / "out"
    proc = tooluse(
        "bench", "fanout", "--model", "oracle", "--limit", "1", "--out", str(out),
        blocked=(missing,),
    )  # fmt: skip
    assert one_error_line(proc) == (
        f"error: tooluse bench needs the eval extra ({missing} is missing): "
        "pip install 'tooluse[eval]'"
    )
    assert not out.exists()


@pytest.mark.parametrize("command", [["buffer", "--turns", "10", "--trials", "1"], ["runtime"]])
def test_sim_without_the_eval_extra_is_one_line(tmp_path: Path, command: list[str]) -> None:
    proc = tooluse("sim", *command, blocked=EVAL, cwd=tmp_path)
    assert one_error_line(proc) == (
        "error: tooluse sim needs the eval extra (numpy is missing): pip install 'tooluse[eval]'"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_local_model_without_the_local_extra_is_one_line() -> None:
    proc = tooluse(
        "run", "x", "--tools", "examples.seed_tools:toolbox", "--model", "local",
        blocked=("numpy", "llama_cpp", "llguidance"),
    )  # fmt: skip
    assert one_error_line(proc) == (
        "error: --model local needs the local extra (numpy is missing): "
        "pip install 'tooluse[local]'"
    )


def test_mcp_without_the_mcp_extra_is_one_line() -> None:
    served = tooluse("mcp", "serve", "examples.seed_tools:toolbox", blocked=("mcp",))
    assert one_error_line(served) == (
        "error: tooluse mcp serve needs the mcp extra (mcp is missing): pip install 'tooluse[mcp]'"
    )
    shown = tooluse("tools", "show", "--mcp", "python -m mcp_server_time", blocked=("mcp",))
    assert one_error_line(shown) == (
        "error: --mcp needs the mcp extra (mcp is missing): pip install 'tooluse[mcp]'"
    )


def test_view_without_the_view_extra_is_one_line(tmp_path: Path) -> None:
    proc = tooluse("view", str(tmp_path), "--static", str(tmp_path / "site"), blocked=("uvicorn",))
    assert one_error_line(proc) == (
        "error: tooluse view needs the view extra (uvicorn is missing): pip install 'tooluse[view]'"
    )


# --- and what needs no extra works without one --------------------------------------------


def test_an_agent_runs_and_its_trace_is_viewed_without_numpy_or_matplotlib(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "runs" / "hotel.jsonl"
    ran = tooluse(
        "run", "Convert 100 USD to EUR", "--tools", "examples.seed_tools:toolbox",
        "--model", "scripted:examples/hotel.jsonl", "--trace", str(trace),
        blocked=EVAL,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "7.00 EUR to spare" in ran.stdout
    site = tmp_path / "site"
    viewed = tooluse("view", str(tmp_path / "runs"), "--static", str(site), blocked=EVAL)
    assert viewed.returncode == 0, viewed.stderr
    assert len(list(site.glob("run-*.html"))) == 1
    listed = tooluse("models", "list", blocked=EVAL)
    assert listed.returncode == 0, listed.stderr
    assert "smollm2-135m" in listed.stdout


# --- a vendor's SDK is imported when its backend is built ------------------------------------


def test_the_vendor_backends_import_their_sdk_only_when_built() -> None:
    sdks = "sorted(m for m in sys.modules if m.partition('.')[0] in ('openai', 'anthropic'))"
    proc = python(
        "import json\n"
        "from tooluse.models import AnthropicChat, OpenAIChat, resolve_model\n"
        f"print(json.dumps({sdks}))\n"
        "OpenAIChat('m', base_url='http://127.0.0.1:9/v1')\n"
        f"print(json.dumps(sorted({{m.partition('.')[0] for m in {sdks}}})))\n"
        "AnthropicChat('m', base_url='http://127.0.0.1:9')\n"
        f"print(json.dumps(sorted({{m.partition('.')[0] for m in {sdks}}})))\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line) for line in proc.stdout.splitlines()] == [
        [],
        ["openai"],
        ["anthropic", "openai"],
    ]


# --- durable runs are an extra -------------------------------------------------------------


@pytest.mark.parametrize("module", ["tooluse", "tooluse.durable", "tooluse.cli"])
def test_importing_loads_no_dbos(module: str) -> None:
    proc = python(
        f"import json, {module}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.partition('.')[0] in "
        "('dbos', 'sqlalchemy', 'psycopg'))))"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_a_durable_agent_without_the_extra_names_it_and_a_plain_one_runs() -> None:
    proc = python(
        "from tooluse import Agent, UsageError\n"
        "from tooluse.models import ScriptedModel\n"
        "print(Agent(ScriptedModel(['hi'])).run('say hi').answer)\n"
        "try:\n"
        "    Agent(ScriptedModel(['hi']), durable='sqlite:///x.sqlite')\n"
        "except UsageError as exc:\n"
        "    print(exc)\n",
        blocked=("dbos",),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "hi",
        "Agent(durable=...) needs the durable extra (dbos is missing): "
        "pip install 'tooluse[durable]'",
    ]


def test_tooluse_runs_without_the_durable_extra_is_one_line() -> None:
    proc = tooluse("runs", "list", blocked=("dbos",))
    assert one_error_line(proc) == (
        "error: tooluse runs needs the durable extra (dbos is missing): "
        "pip install 'tooluse[durable]'"
    )
