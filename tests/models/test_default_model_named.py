"""Every help text and page that says what plain ``local`` runs says the same thing.

``--model local``, ``resolve_model("local")`` and ``LocalModel()`` are one model: the
best installed, with SmolLM2 as the fallback. A help text that still calls SmolLM2
"the" local model sends users to the wrong model.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tooluse.models import LocalModel, resolve_model
from tooluse.models._registry import DEFAULT_LOCAL, DEFAULT_LOCAL_TEXT, Registry, default_local
from tooluse.models._spec import SPECS

ROOT = Path(__file__).resolve().parents[2]

# A claim that plain local (or LocalModel with no path) is SmolLM2, in prose or help.
STALE = re.compile(
    r"(local\W{0,4}\(the embedded SmolLM2|LocalModel\(\)`? runs SmolLM2"
    r"|LocalModel\(\)`? with no path runs SmolLM2)",
    re.IGNORECASE,
)


def test_local_and_localmodel_are_the_same_model() -> None:
    best = default_local(Registry())
    assert resolve_model("local").name == LocalModel().name == f"local:{best}"
    assert LocalModel("smollm2-135m").name == "local:SmolLM2-135M-Instruct.Q4_1"


def test_the_help_of_run_names_the_default_model_in_the_shared_words() -> None:
    command = [str(Path(sys.executable).parent / "tooluse"), "run", "--help"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "400"}
    proc = subprocess.run(
        command, check=False, capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert DEFAULT_LOCAL_TEXT in " ".join(proc.stdout.split())
    assert DEFAULT_LOCAL_TEXT in SPECS
    assert DEFAULT_LOCAL[0] in DEFAULT_LOCAL_TEXT


def test_no_page_or_help_says_plain_local_is_smollm2() -> None:
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    texts += sorted((ROOT / "src" / "tooluse").rglob("*.py"))
    stale = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in texts
        for match in STALE.finditer(" ".join(path.read_text().split()))
    ]
    assert stale == []
