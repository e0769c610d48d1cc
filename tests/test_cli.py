"""The `tooluse` command, run as a real process."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLUSE = Path(sys.executable).parent / "tooluse"
# This checkout's sources, whatever the directory the command runs in.
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def tooluse(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLUSE), *args],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def assert_one_error_line(proc: subprocess.CompletedProcess[str], expected: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert expected in lines[0]


def test_run_prints_the_answer_and_writes_a_trace(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    proc = tooluse(
        "run",
        "Convert 100 USD to EUR",
        "--tools",
        "examples.seed_tools:toolbox",
        "--model",
        "scripted:examples/hotel.jsonl",
        "--trace",
        str(trace),
    )
    assert proc.returncode == 0, proc.stderr
    assert "7.00 EUR to spare" in proc.stdout
    assert "rejected get_exchange_rate" in proc.stderr and "did you mean 'target'" in proc.stderr
    assert "completed · 4 rounds · 2 calls · 1 rejected" in proc.stderr
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert events[-1]["event"] == "run_end" and events[-1]["status"] == "completed"


def test_run_json_output_is_the_run_result() -> None:
    proc = tooluse(
        "run",
        "x",
        "--tools",
        "examples.seed_tools:toolbox",
        "--model",
        "scripted:examples/weather.jsonl",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "completed" and len(data["calls"]) == 2


def test_unfinished_run_exits_non_zero(tmp_path: Path) -> None:
    script = tmp_path / "loop.jsonl"
    line = json.dumps(
        {
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "lookup_capital", "arguments": '{"country": "Japan"}'},
                }
            ]
        }
    )
    script.write_text((line + "\n") * 3)
    proc = tooluse(
        "run",
        "x",
        "--tools",
        "examples.seed_tools:toolbox",
        "--model",
        f"scripted:{script}",
        "--max-rounds",
        "2",
    )
    assert proc.returncode == 1
    assert "no final answer after 2 rounds" in proc.stderr


def test_usage_errors_are_one_clear_line() -> None:
    proc = tooluse("run", "x", "--tools", "examples.nothing:toolbox", "--model", "scripted:x")
    assert_one_error_line(proc, "error: cannot import 'examples.nothing'")
    proc = tooluse("run", "x", "--tools", "examples.seed_tools:toolbox", "--model", "gpt")
    assert_one_error_line(proc, "unknown model spec 'gpt'")
    proc = tooluse("run", "x", "--tools", "examples.seed_tools", "--model", "scripted:x")
    assert_one_error_line(proc, "MODULE:ATTR")


def test_a_long_error_stays_on_one_line() -> None:
    proc = tooluse(
        "run",
        "x",
        "--tools",
        "examples.seed_tools:toolbox",
        "--model",
        "scripted:examples/weather.jsonl",
        "--tool-choice",
        "get_the_weather_for_a_location_please",
    )
    assert_one_error_line(proc, "'get_current_weather', 'lookup_capital', 'calculator'")


@pytest.mark.parametrize(
    ("trace", "reason"),
    [(".", "Is a directory"), ("notes.txt/run.jsonl", "File exists: {tmp}/notes.txt")],
)
def test_an_unwritable_trace_is_refused_before_the_run(
    tmp_path: Path, trace: str, reason: str
) -> None:
    (tmp_path / "notes.txt").write_text("a file, not a directory\n")
    proc = tooluse(
        "run",
        "x",
        "--tools",
        "examples.seed_tools:toolbox",
        "--model",
        f"scripted:{ROOT / 'examples/weather.jsonl'}",
        "--trace",
        str(tmp_path / trace),
    )
    reason = reason.format(tmp=tmp_path)
    assert_one_error_line(proc, f"cannot write the trace to {tmp_path / trace}: {reason}")
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(:\n", "cannot import 'broken': SyntaxError: invalid syntax (broken.py, line 1)"),
        ("raise RuntimeError('no config')\n", "cannot import 'broken': RuntimeError: no config"),
    ],
)
@pytest.mark.parametrize("command", ["run", "tools"])
def test_a_tools_module_that_fails_to_import_is_one_error_line(
    tmp_path: Path, source: str, expected: str, command: str
) -> None:
    (tmp_path / "broken.py").write_text(source)
    if command == "run":
        proc = tooluse("run", "x", "--tools", "broken:toolbox", "--model", "local", cwd=tmp_path)
    else:
        proc = tooluse("tools", "show", "broken:toolbox", cwd=tmp_path)
    assert_one_error_line(proc, expected)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["mcp", "serve", "srvtools"], "error: TARGET takes MODULE:ATTR, e.g. "),
        (["mcp", "serve", "srvtools:"], "error: TARGET takes MODULE:ATTR, e.g. "),
        (["tools", "show", "srvtools"], "error: TARGET takes MODULE:ATTR, e.g. "),
        (["tools", "lint", "srvtools"], "error: TARGET takes MODULE:ATTR, e.g. "),
        (["tools", "show"], "error: give the tools: TARGET as MODULE:ATTR, --mcp CMD|URL, or both"),
        (["tools", "lint"], "error: give the tools: TARGET as MODULE:ATTR, --mcp CMD|URL, or both"),
        (["run", "x", "--tools", "srvtools", "--model", "scripted:x"], "error: --tools takes "),
        (
            ["run", "x", "--model", "scripted:x"],
            "error: give the tools: --tools MODULE:ATTR, --mcp",
        ),
    ],
)
def test_a_toolbox_given_wrongly_is_named_as_the_command_takes_it(
    args: list[str], expected: str
) -> None:
    proc = tooluse(*args)
    assert_one_error_line(proc, expected)
    # Only `run` has a --tools option; the others take the toolbox as their argument.
    assert ("--tools" in proc.stderr) == (args[0] == "run")


@pytest.mark.parametrize("command", [["run"], ["tools", "show"], ["sim", "buffer"], ["bench"]])
def test_flags_show_no_value_type(command: list[str]) -> None:
    proc = tooluse(*command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "--help" in proc.stdout and "<bool>" not in proc.stdout


def test_tools_show_every_format() -> None:
    for fmt in ("openai", "openai-strict", "anthropic"):
        proc = tooluse("tools", "show", "examples.seed_tools:toolbox", "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        rendered = json.loads(proc.stdout)
        assert len(rendered) == 5
    proc = tooluse("tools", "show", "examples.seed_tools:toolbox", "--format", "stubs")
    assert proc.returncode == 0
    tree = ast.parse(proc.stdout)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == [
        "get_current_weather",
        "lookup_capital",
        "calculator",
        "get_exchange_rate",
        "list_items",
    ]
    proc = tooluse("tools", "show", "examples.seed_tools:toolbox", "--format", "yaml")
    assert proc.returncode == 2


def test_run_with_the_code_convention() -> None:
    proc = tooluse(
        "run",
        "How many fruit items are there?",
        "--tools",
        "examples.seed_tools:toolbox",
        "--model",
        "scripted:examples/fanout_code.jsonl",
        "--convention",
        "code",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "completed"
    assert len(data["calls"]) == 5 and data["scripts"][0]["stdout"] == "47 items; last: fruit-047\n"


def test_sim_buffer_prints_one_row_per_policy_and_draws_the_figure(tmp_path: Path) -> None:
    png = tmp_path / "buffer.png"
    proc = tooluse("sim", "buffer", "--trials", "8", "--plot", str(png))
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.split()[:1]]
    names = [r[0] for r in rows if r[0] in {"threshold_truncate", "random_evict", "agent_offload"}]
    assert names == ["threshold_truncate", "random_evict", "agent_offload"]
    losses = {r[0]: float(r[1]) for r in rows if r[0] in names}
    assert losses["agent_offload"] < losses["threshold_truncate"] < losses["random_evict"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_run_check_answers_shows_the_note_and_ends_with_the_answer_after_it(
    tmp_path: Path, stream: str
) -> None:
    script = tmp_path / "replies.jsonl"
    replies = [
        {
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "calculator", "arguments": '{"expression": "90 + 2"}'},
                }
            ]
        },
        {"content": "92 is less than 85."},
        {"content": "92 is more than 85."},
    ]
    script.write_text("".join(json.dumps(r) + "\n" for r in replies))
    task = "Is 90 + 2 more than 85?"
    args = ["run", task, "--tools", "examples.seed_tools:toolbox", "--model", f"scripted:{script}"]
    proc = tooluse(*args, stream, "--check-answers")
    assert proc.returncode == 0, proc.stderr
    assert "92 is more than 85." in proc.stdout and "less" not in proc.stdout
    assert 'answer check: Check your answer: it says "92 is less than 85", but 92 ≥ 85.' in (
        " ".join(proc.stderr.split())
    )
    assert "answer check: corrected" in proc.stderr
    assert "completed · 3 rounds" in proc.stderr


def test_a_start_builds_only_the_command_it_runs_and_help_stays_whole() -> None:
    import typer

    from tooluse.cli._app import _only, app

    def names(argv: list[str]) -> dict[str, object]:
        group = typer.main.get_group(_only(app, argv))
        return {name: sorted(getattr(sub, "commands", {})) for name, sub in group.commands.items()}

    assert names(["bench", "tasks", "--model", "oracle"]) == {"bench": ["tasks"]}
    assert names(["run", "x"]) == {"run": []}
    whole = names([])
    assert {"run", "chat", "bench", "tools", "mcp", "runs"} <= set(whole)
    assert names(["--help"]) == whole and names(["runn"]) == whole
    # A group named without a command of its own lists all of its commands.
    assert names(["bench"])["bench"] == whole["bench"]
    assert names(["bench", "taskz"])["bench"] == whole["bench"]


def test_a_mistyped_command_is_still_suggested_at_either_level() -> None:
    top = tooluse("runn", "x")
    assert top.returncode == 2
    assert "No such command 'runn'. Did you mean 'run', 'runs'?" in top.stderr
    sub = tooluse("bench", "taskz")
    assert sub.returncode == 2 and "No such command 'taskz'. Did you mean 'tasks'?" in sub.stderr
    listed = tooluse("bench", "--help")
    assert listed.returncode == 0
    assert all(name in listed.stdout for name in ("bfcl", "fanout", "chain", "tasks"))
