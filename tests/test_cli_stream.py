"""`tooluse run` streams by default: calls as they start and end; Ctrl-C exits 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

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
