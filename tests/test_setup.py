"""scripts/setup.sh reports each step on one line with its time, keeps what pip and npm
print in a log it names when a step fails, and installs BFCL's package with no record
that would make pip check bfcl-eval's pins.

The steps run for real (bash, pip, a fresh virtualenv); the whole setup is not run
here, since `make test` has just run it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = ROOT / "scripts" / "setup_steps.sh"
BFCL_EVAL = "2026.3.23"
# A step's line: its name, then its time in seconds to a tenth.
LINE = re.compile(r"^setup: \S.*? +\d+\.\d s(  \(already there\))?$")
NOISE = ("ERROR", "resolver", "incompatible")


def steps(script: str, tmp_path: Path, timeout: int = 60) -> subprocess.CompletedProcess[str]:
    """Run `script` in bash with scripts/setup_steps.sh sourced, its logs in tmp_path/logs."""
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail\nsource {STEPS}\n{script}"],
        cwd=tmp_path,
        env={**os.environ, "SETUP_LOGS": str(tmp_path / "logs")},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_each_step_is_one_timed_line_and_its_output_goes_to_its_log(tmp_path: Path) -> None:
    proc = steps(
        "step 'noisy step' bash -c 'echo chatter; echo ERROR: more chatter >&2'\n"
        "step quiet true\n"
        "done_before 'nothing to do'\n",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split()[1] for line in lines] == ["noisy", "quiet", "nothing"]
    assert all(LINE.match(line) for line in lines), lines
    assert lines[2].endswith("0.0 s  (already there)")
    assert proc.stderr == ""
    log = tmp_path / "logs" / "noisy-step.log"
    assert log.read_text() == "chatter\nERROR: more chatter\n"


def test_a_failing_step_names_its_log_shows_its_end_and_stops_setup(tmp_path: Path) -> None:
    proc = steps(
        "step broken bash -c 'for i in $(seq 1 40); do echo line $i; done; exit 3'\necho after\n",
        tmp_path,
    )
    assert proc.returncode == 3
    assert proc.stdout == ""
    log = tmp_path / "logs" / "broken.log"
    first, *tail = proc.stderr.splitlines()
    assert first.startswith("setup: broken ")
    assert first.endswith(f"s  (failed, exit 3; the end of {log} follows)")
    assert tail == [f"    line {i}" for i in range(11, 41)]
    assert log.read_text().splitlines()[0] == "line 1"


def test_a_command_failing_inside_a_step_function_fails_the_step(tmp_path: Path) -> None:
    proc = steps("body() { false; echo went on; }\nstep body body\necho after\n", tmp_path)
    assert proc.returncode == 1
    assert "after" not in proc.stdout
    assert "went on" not in (tmp_path / "logs" / "body.log").read_text()


def pip_check(venv: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_bfcl_eval_replaces_a_pip_install_and_leaves_pip_nothing_to_check(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    wheels = ROOT / "build" / "wheels"  # where setup downloads it; downloaded once
    install = f"install_bfcl_data {venv} {BFCL_EVAL} {wheels}"
    first = steps(f"step 'bfcl-eval data' {install}", tmp_path, timeout=600)
    assert first.returncode == 0, first.stderr
    # Installed by pip as an earlier setup did: pip then checks its pins and finds
    # them unmet, the warnings a later install prints.
    wheel = wheels / f"bfcl_eval-{BFCL_EVAL}-py3-none-any.whl"
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
        check=True,
        timeout=300,
    )
    assert "bfcl-eval 2026.3.23 requires" in pip_check(venv).stdout

    again = steps(f"rm {venv}/.bfcl-eval-{BFCL_EVAL}\nstep 'bfcl-eval data' {install}", tmp_path)
    assert again.returncode == 0, again.stderr
    output = again.stdout + again.stderr
    assert LINE.match(again.stdout.strip()), output
    assert not [word for word in NOISE if word in output], output
    checked = pip_check(venv)
    assert checked.returncode == 0, checked.stdout
    found = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.metadata as m, importlib.util as u, pathlib\n"
            "spec = u.find_spec('bfcl_eval')\n"
            "data = pathlib.Path(spec.origin).parent / 'data'\n"
            "print((data / 'BFCL_v4_simple_python.json').is_file())\n"
            "try:\n    m.distribution('bfcl-eval')\nexcept m.PackageNotFoundError:\n"
            "    print('no record')\n",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert found.stdout.splitlines() == ["True", "no record"], found.stderr
