"""The README and docs/ say what the code does: their snippets run, their names are public.

- docs/cli.md is generated from the CLI's own --help and must match it.
- Every name the README, CONTRIBUTING.md or docs/ show in code is importable from a public module:
  ``tooluse`` or a subpackage without an underscore, listed in its ``__all__``.
- Every ``python`` block runs in a fresh process from an empty directory, as a
  user who saved it to a file would run it. A line ``expr  # literal`` is checked:
  ``expr`` must equal the literal. Every ``tooluse …`` or ``python …`` command in
  a ``bash`` block runs from a directory holding a copy of ``examples/``. What
  cannot run offline is skipped by name, with its reason, in `SKIPS`.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import io
import os
import pkgutil
import re
import shlex
import shutil
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

import tooluse

ROOT = Path(__file__).resolve().parent.parent
# docs/architecture.md describes the private modules on purpose, for contributors;
# tests/test_architecture.py keeps it true.
DOCS = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "architecture.md"),
]
BIN = Path(sys.executable).parent
ENV = {
    **os.environ,
    "PYTHONPATH": str(ROOT / "src"),
    "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    "NO_COLOR": "1",
}
#: How long a documented command may run before it counts as hung: a bound on a hang,
#: not a speed figure. The bench commands decode whole suites with the local model; on a
#: slow two-core machine `tooluse bench multimodal --model local --conventions code` took
#: more than nine minutes, close to the ten this bound was.
HUNG_AFTER_S = 1800

# Commands that cannot run offline in a test, by a piece of their text.
SKIPS = {
    "make demo": "installs the project and its system packages first (make setup)",
    "make test": "installs the project, then runs this whole test suite",
    "--model openai:gpt-4o-mini": "needs a hosted key (OPENAI_API_KEY)",
    "--base-url http://127.0.0.1:8080/v1": "needs an OpenAI-compatible server on 127.0.0.1:8080",
    "--model anthropic:": "needs a hosted key (ANTHROPIC_API_KEY)",
    "tooluse view traces/": "reads traces earlier commands wrote; serves until stopped",
    "tooluse models pull": "downloads a model of about 1 GB (make setup pulls it)",
}

# Names in code spans that are not ours, and why they may appear.
OUTSIDE = {
    "TypedDict": "typing's, the form nested objects take in generated stubs",
    "Args": "the docstring section tool parameters are read from",
}


@dataclass(frozen=True)
class Snippet:
    path: Path
    line: int  # 1-based line of the snippet's first line of code
    lang: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def code_blocks(path: Path) -> list[Snippet]:
    """Fenced blocks, by CommonMark's rule: a closing fence is backticks alone on a line."""
    blocks: list[Snippet] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^(`{3,})\s*(\w*)", lines[i])
        if opening is None:
            i += 1
            continue
        fence, lang = opening.groups()
        end = i + 1
        while end < len(lines) and not re.fullmatch(rf"{fence}`*\s*", lines[end]):
            end += 1
        blocks.append(Snippet(path, i + 2, lang, "\n".join(lines[i + 1 : end]) + "\n"))
        i = end + 1
    return blocks


def inline_code(path: Path) -> list[str]:
    """The text of every inline code span outside fenced blocks."""
    text = path.read_text()
    for block in code_blocks(path):
        text = text.replace(block.code, "")
    return [m.group(2).strip() for m in re.finditer(r"(`+)(.+?)\1", text)]


def commands(snippet: Snippet) -> list[Snippet]:
    """The commands of a shell block, each with its first line; continuations joined."""
    found: list[Snippet] = []
    pending: list[str] = []
    for offset, line in enumerate(snippet.code.splitlines()):
        if not pending:
            start = snippet.line + offset
        pending.append(line.rstrip().removesuffix("\\"))
        if not line.rstrip().endswith("\\"):
            text = " ".join(pending).strip()
            if text and not text.startswith("#"):
                found.append(Snippet(snippet.path, start, "bash", text))
            pending = []
    return found


PYTHON = [b for p in DOCS for b in code_blocks(p) if b.lang == "python"]
SHELL = [c for p in DOCS for b in code_blocks(p) if b.lang in {"bash", "sh"} for c in commands(b)]


# --- generated CLI reference -----------------------------------------------------------


def test_cli_docs_are_current() -> None:
    spec = importlib.util.spec_from_file_location(
        "gen_cli_docs", ROOT / "scripts" / "gen_cli_docs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = (ROOT / "docs" / "cli.md").read_text()
    assert committed == module.render(), "docs/cli.md is stale: run `make docs`"


# --- names -----------------------------------------------------------------------------


def public_modules() -> dict[str, object]:
    found = [info.name for info in pkgutil.walk_packages(tooluse.__path__, "tooluse.")]
    names = ["tooluse", *(n for n in found if not any(p.startswith("_") for p in n.split(".")))]
    return {name: importlib.import_module(name) for name in names}


def exported(module: object) -> set[str]:
    return set(getattr(module, "__all__", ()))


def problems_with_dotted(dotted: str, modules: dict[str, object]) -> str | None:
    """Why ``tooluse.a.B`` is not public, or None when it is."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        if module_name in modules:
            rest = parts[cut:]
            if rest and rest[0] not in exported(modules[module_name]):
                return f"{rest[0]} is not in {module_name}.__all__"
            return None
    return f"{dotted} is not a public module (or is under an underscore module)"


def test_every_name_in_the_docs_is_public() -> None:
    modules = public_modules()
    everywhere = set().union(*(exported(m) for m in modules.values()))
    problems: list[str] = []
    for snippet in PYTHON:
        for node in ast.walk(ast.parse(snippet.code)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tooluse"):
                for alias in node.names:
                    why = problems_with_dotted(f"{node.module}.{alias.name}", modules)
                    if why:
                        problems.append(f"{snippet.where}+{node.lineno - 1}: {why}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("tooluse"):
                        why = problems_with_dotted(alias.name, modules)
                        if why:
                            problems.append(f"{snippet.where}+{node.lineno - 1}: {why}")
    for path in DOCS:
        for span in inline_code(path):
            # Quoted text in a span is data (a tool's name, a task), not API.
            unquoted = re.sub(r"\"[^\"]*\"|'[^']*'", "", span)
            for name in re.findall(r"(?<![\w.\-/:])[A-Za-z_]\w*(?:\.\w+)*", unquoted):
                if name.startswith("tooluse."):
                    why = problems_with_dotted(name, modules)
                elif (
                    re.fullmatch(r"[A-Z][a-z]\w*", name)
                    and name not in OUTSIDE | vars(builtins).keys()
                ):
                    why = None if name in everywhere else f"{name} is not exported publicly"
                else:
                    continue
                if why:
                    problems.append(f"{path.relative_to(ROOT)}: `{span}`: {why}")
    assert not problems, "\n".join(problems)


def test_the_docs_hold_snippets_to_run() -> None:
    # Guards the extractor itself: an empty list would pass every test below.
    assert len(PYTHON) >= 4 and len(SHELL) >= 8


# --- python blocks ---------------------------------------------------------------------


def with_checked_comments(snippet: Snippet) -> str:
    """The snippet with each ``expr  # literal`` line turned into an assertion."""
    lines = snippet.code.splitlines()
    comments = {
        tok.start[0]: tok.string[1:].strip()
        for tok in tokenize.generate_tokens(io.StringIO(snippet.code).readline)
        if tok.type == tokenize.COMMENT
    }
    for node in ast.parse(snippet.code).body:
        if not isinstance(node, ast.Expr) or node.lineno != node.end_lineno:
            continue
        comment = comments.get(node.lineno)
        try:
            ast.literal_eval(comment or "")
        except (ValueError, SyntaxError):
            continue
        expr = ast.get_source_segment(snippet.code, node)
        where = f"{snippet.path.name}:{snippet.line + node.lineno - 1}"
        lines[node.lineno - 1] = (
            f"__v = ({expr}); assert __v == ({comment}), "
            f"{where!r} + ': ' + {expr!r} + ' is ' + repr(__v)"
        )
    return "\n".join(lines) + "\n"


def in_docs_terms(output: str, snippet: Snippet, script: Path) -> str:
    """Traceback lines of the saved script, renamed to the line of the document."""
    return re.sub(
        rf'File "{re.escape(str(script))}", line (\d+)',
        lambda m: f'File "{snippet.path.name}", line {snippet.line + int(m.group(1)) - 1}',
        output,
    )


def run_in(folder: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a documented snippet or command in `folder`, as a reader would, output captured."""
    return subprocess.run(
        argv,
        cwd=folder,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=HUNG_AFTER_S,
        check=False,
    )


@pytest.mark.parametrize("snippet", PYTHON, ids=[s.where for s in PYTHON])
def test_python_snippet_runs(snippet: Snippet, tmp_path: Path) -> None:
    script = tmp_path / "snippet.py"
    script.write_text(with_checked_comments(snippet))
    proc = run_in(tmp_path, [sys.executable, str(script)])
    assert proc.returncode == 0, (
        f"the snippet at {snippet.where} fails:\n{in_docs_terms(proc.stderr, snippet, script)}"
    )


# --- shell commands --------------------------------------------------------------------


def shown(command: Snippet) -> str:
    return shlex.join(shlex.split(command.code, comments=True))


def skip_reason(command: Snippet) -> str | None:
    reasons = [why for piece, why in SKIPS.items() if piece in command.code]
    if reasons:
        return "; ".join(reasons)
    if shlex.split(command.code)[0] not in {"tooluse", "python"}:
        return "not a tooluse or python command"
    return None


def test_every_skip_still_names_a_command() -> None:
    unused = [piece for piece in SKIPS if not any(piece in c.code for c in SHELL)]
    assert not unused, f"SKIPS entries that match no command any more: {unused}"


@pytest.mark.parametrize("command", SHELL, ids=[c.where for c in SHELL])
def test_shell_command_runs(command: Snippet, tmp_path: Path) -> None:
    reason = skip_reason(command)
    if reason is not None:
        pytest.skip(f"{command.where} `{shown(command)}`: {reason}")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    argv = shlex.split(command.code, comments=True)
    if argv[0] == "python":
        argv[0] = sys.executable
    proc = run_in(tmp_path, argv)
    assert proc.returncode == 0, f"{command.where} `{shown(command)}` fails:\n{proc.stderr}"
