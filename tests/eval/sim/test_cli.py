"""``tooluse sim buffer`` as a real process: figures for sweeps, clear errors for bad paths."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TOOLUSE = Path(sys.executable).parent / "tooluse"
PNG = b"\x89PNG\r\n\x1a\n"
SMALL = ("--trials", "2", "--turns", "60")


def sim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLUSE), "sim", "buffer", *SMALL, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )


def test_a_sweep_draws_its_figure_where_asked(tmp_path: Path) -> None:
    figure = tmp_path / "figures" / "sweep.png"
    proc = sim("--sweep", "6000,12000,24000", "--plot", str(figure))
    assert proc.returncode == 0, proc.stderr
    assert figure.read_bytes().startswith(PNG)
    assert f"figure written to {figure}" in proc.stdout
    assert "24,000" in proc.stdout


def test_an_unwritable_plot_is_one_error_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    for extra in ((), ("--sweep", "6000,12000")):
        proc = sim(*extra, "--plot", str(blocker / "f.png"))
        assert proc.returncode == 2, extra
        assert proc.stderr.startswith(f"error: cannot write the figure to {blocker / 'f.png'}")
        assert "Traceback" not in proc.stderr
