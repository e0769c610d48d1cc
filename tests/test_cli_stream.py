"""`tooluse run` streams by default: calls as they start and end; Ctrl-C exits 130."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLUSE = Path(sys.executable).parent / "tooluse"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200"}

TOOLS = '''
import sys, time
from tooluse import Toolbox, tool

@tool
def note(text: str) -> str:
    """Keep a note."""
    return "noted"

@tool
def wait_for_operator() -> str:
    """Wait until an operator answers."""
    print("waiting for the operator", file=sys.stderr, flush=True)
    time.sleep(120)
    return "answered"

toolbox = Toolbox([note, wait_for_operator])
'''


def reply(call_id: str, name: str, arguments: dict[str, object]) -> str:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return json.dumps({"tool_calls": [{"id": call_id, "type": "function", "function": function}]})


def command(*extra: str) -> list[str]:
    return [
        str(TOOLUSE),
        "run",
        "Ask the operator.",
        "--tools",
        "optools:toolbox",
        "--model",
        "scripted:model.jsonl",
        *extra,
    ]


def _workdir(tmp_path: Path, *replies: str) -> Path:
    (tmp_path / "optools.py").write_text(TOOLS)
    (tmp_path / "model.jsonl").write_text("\n".join(replies) + "\n")
    return tmp_path


def test_a_streamed_run_shows_each_call_as_it_starts_and_the_answer(tmp_path: Path) -> None:
    workdir = _workdir(
        tmp_path, reply("c1", "note", {"text": "start"}), json.dumps({"content": "All noted."})
    )
    streamed = subprocess.run(
        command(), cwd=workdir, env=ENV, capture_output=True, text=True, timeout=60, check=False
    )
    assert streamed.returncode == 0, streamed.stderr
    assert "All noted." in streamed.stdout
    lines = streamed.stderr.splitlines()
    assert lines[:2] == ["… note", '✓ note({"text": "start"}) → "noted"']
    assert "All noted." in lines[2]  # the answer's text, as it came
    assert "completed · 2 rounds · 1 calls" in streamed.stderr

    plain = subprocess.run(
        command("--no-stream"),
        cwd=workdir,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == streamed.stdout
    assert plain.stderr.splitlines()[0] == '✓ note({"text": "start"}) → "noted"'
    assert "… note" not in plain.stderr


def test_ctrl_c_prints_what_was_done_and_exits_130(tmp_path: Path) -> None:
    workdir = _workdir(
        tmp_path,
        reply("c1", "note", {"text": "start"}),
        reply("c2", "wait_for_operator", {}),
        json.dumps({"content": "never reached"}),
    )
    proc = subprocess.Popen(
        command(),
        cwd=workdir,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell that started the tests in the background may have left SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if line.startswith("waiting for the operator"):
                break
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = "".join(seen) + rest
    assert proc.returncode == 130, err
    assert '✓ note({"text": "start"}) → "noted"' in err
    assert "… wait_for_operator" in err
    assert "the run was cancelled" in err
    assert "cancelled · 2 rounds · 1 calls · 0 rejected" in err
    assert out == ""


# On a terminal: the run drawn in a tmux pane of a given width, read back as the screen shows it.

ANSWER = "All noted in one script."
SCRIPT_LINE = 'print(tools.note("from the script"))'
SCRIPT_REPLY = json.dumps({"content": f"One script.\n```python\nimport tools\n{SCRIPT_LINE}\n```"})
DONE = "__tooluse_done__"


def on_screen(args: list[str], *, cwd: Path, width: int) -> str:
    """Run `args` in a detached tmux pane `width` columns wide; the whole screen, history too."""
    socket = f"tooluse-test-{uuid.uuid4().hex}"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    env = {k: v for k, v in ENV.items() if k not in ("COLUMNS", "LINES")}
    shell = " ".join(shlex.quote(a) for a in ["env", *(f"{k}={v}" for k, v in env.items()), *args])
    # The pane stays open after the command, so its screen can be read.
    script = f"{shell}; echo {DONE}; exec sleep 600"
    start = [*tmux, "new-session", "-d", "-x", str(width), "-y", "50", "-c", str(cwd), script]
    subprocess.run(start, check=True, timeout=30)
    try:
        screen = ""
        for _ in range(600):  # polled until the command has finished, at most about a minute
            capture = [*tmux, "capture-pane", "-p", "-S", "-", "-E", "-"]
            screen = subprocess.run(
                capture, check=True, capture_output=True, text=True, timeout=30
            ).stdout
            if DONE in screen:
                return screen.replace(DONE, "").rstrip()
            time.sleep(0.1)  # between polls of the pane, not before an assertion
        raise AssertionError(f"the command did not finish in the pane:\n{screen}")
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, timeout=30)


def code_run(tmp_path: Path, *extra: str) -> list[str]:
    _workdir(tmp_path, SCRIPT_REPLY, json.dumps({"content": ANSWER}))
    return [*command(*extra), "--convention", "code"]


@pytest.mark.parametrize("width", [80, 120])
def test_a_streamed_answer_and_script_are_on_screen_once(tmp_path: Path, width: int) -> None:
    screen = on_screen(code_run(tmp_path), cwd=tmp_path, width=width)
    assert "completed · 2 rounds · 1 calls" in screen, screen
    assert screen.count(ANSWER) == 1, screen
    assert screen.count(SCRIPT_LINE) == 1, screen
    assert '✓ note({"text": "from the script"}) → "noted"' in screen, screen


def test_an_answer_not_streamed_is_shown_once_in_its_box(tmp_path: Path) -> None:
    screen = on_screen(code_run(tmp_path, "--no-stream"), cwd=tmp_path, width=80)
    assert "completed · 2 rounds · 1 calls" in screen, screen
    assert screen.count(ANSWER) == 1 and "answer" in screen, screen
    assert screen.count(SCRIPT_LINE) == 1, screen


def test_answer_is_still_written_to_stdout_when_piped(tmp_path: Path) -> None:
    proc = subprocess.run(
        code_run(tmp_path),
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert ANSWER in proc.stdout  # for a file or a pipe, the answer is the output
    assert proc.stderr.count(SCRIPT_LINE) == 1, proc.stderr


BORDERS = str.maketrans("", "", "│╭╮╰╯─")


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("args", [["run"], ["bench", "bfcl"], ["tools", "show"], []])
def test_help_descriptions_have_room_to_read(tmp_path: Path, width: int, args: list[str]) -> None:
    screen = on_screen([str(TOOLUSE), *args, "--help"], cwd=tmp_path, width=width)
    lines = [line.translate(BORDERS).rstrip() for line in screen.splitlines()]
    assert any("--help" in line for line in lines), screen
    for line in lines:
        if not line.strip():
            continue
        # A word broken at its hyphen (local-unconstrained) cannot be copied as written.
        assert not re.search(r"\w-$", line), f"a word broken at a hyphen:\n{screen}"
        # A command's description is given whole, not cut short.
        assert not re.search(r"\w\.\.\.$", line), f"a description cut short:\n{screen}"
        # A line starting far right is a description wrapped into a narrow column.
        start = len(line) - len(line.lstrip())
        assert width - start >= 40, f"a column of {width - start} characters:\n{screen}"
