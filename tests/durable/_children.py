"""A durable agent in a process of its own (`driver.py`): DBOS is one per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("driver.py")
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}


class Child:
    """One driver process: its lines are read as it prints them, and it can be killed."""

    driver = DRIVER

    def __init__(self, work: Path, name: str, **config: Any) -> None:
        work.mkdir(exist_ok=True)
        if not (work / "fifo").exists():
            os.mkfifo(work / "fifo")
        path = work / f"{name}.json"
        path.write_text(json.dumps({"work": str(work), **config}))
        self.stderr = work / f"{name}.stderr"
        self.lines: list[str] = []
        with self.stderr.open("w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(self.driver), str(path)],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=ENV,
            )

    def until(self, prefix: str) -> str:
        """The first line the child prints that starts with ``prefix`` (read as it comes)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if line.startswith(prefix):
                return line.rstrip("\n")
        self.proc.wait()
        raise AssertionError(
            f"the driver ended ({self.proc.returncode}) without {prefix!r}; it printed "
            f"{self.lines}; stderr:\n{self.stderr.read_text()}"
        )

    def kill(self) -> None:
        self.proc.kill()  # SIGKILL: no handler, no cleanup
        self.proc.wait()

    def result(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        rest, _ = self.proc.communicate(timeout=240)
        self.lines += rest.splitlines()
        assert self.proc.returncode == 0, self.stderr.read_text()
        result: dict[str, Any] = json.loads(self.lines[-1])
        return result


def executions(work: Path) -> list[str]:
    path = work / "executions"
    return path.read_text().splitlines() if path.exists() else []
