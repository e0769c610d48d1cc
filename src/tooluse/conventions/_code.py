"""The code convention: tools published as a Python stub module; the model writes one script.

The model answers either with one fenced ``python`` block, which the runtime
runs in the sandbox (tool calls travel back to the host's dispatcher), or with
plain text, which is its final answer.
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..models import ModelResponse
from ..tools import Toolbox
from ._base import (
    Answer,
    Convention,
    Interpretation,
    Prepared,
    Retry,
    Script,
    example_and_finish,
    system_text,
    written_reply,
)
from ._per_run import PerRun

__all__ = ["CodeConvention", "ExtractedScript", "extract_script"]

MODULE = "tools"

PROMPT = """\
Write Python to answer. The functions in module `{module}` (source below) call real tools \
and return their results; you cannot know a result without calling one. Reply with one \
```python block that calls the functions you need and prints their results, such as \
`print({example}(...))`. Do not define functions and do not type in results. You then see \
what the script printed. A failed call raises `{module}.ToolError`; for many independent \
calls use `{module}.parallel(fn, [kwargs, ...])`. {finish}

```python
# {module}.py
{stubs}```"""

FINISH = "When you know the answer, reply in plain text with no code."
#: With an output type: how the run ends, and the note for a reply in text.
OUTPUT_FINISH = (
    "When you know the answer, pass it to `{name}(result)` in a script: a reply in plain "
    "text does not end the task."
)
OUTPUT_NOTE = (
    "Your reply was plain text, but this task ends only when a script passes the answer "
    "to `{name}(result)`: send a ```python block that calls it."
)

_FENCE = re.compile(r"```[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)(?:```|\Z)", re.DOTALL)
_CODE_LANGS = {"", "python", "py", "python3"}


@dataclass(frozen=True, slots=True)
class ExtractedScript:
    code: str
    repairs: tuple[str, ...] = ()


def _parses(code: str) -> SyntaxError | None:
    try:
        ast.parse(code)
    except SyntaxError as exc:
        return exc
    return None


def _unescape(code: str) -> str | None:
    r"""Turn literal ``\n`` / ``\t`` escapes into real characters, or None.

    Only applied when the code does not parse as written: a script whose
    newlines arrived as two characters each cannot mean anything else.
    """
    if "\\n" not in code:
        return None
    return code.replace("\\r\\n", "\n").replace("\\n", "\n").replace("\\t", "\t")


def _syntax_feedback(code: str, error: SyntaxError) -> str:
    line = error.lineno or 0
    column = error.offset or 0
    lines = code.splitlines()
    shown = lines[line - 1] if 0 < line <= len(lines) else ""
    pointer = " " * max(column - 1, 0) + "^"
    return (
        f"Your script has a syntax error at line {line}, column {column}: {error.msg}\n"
        f"    {shown}\n    {pointer}\n"
        "Nothing was run. Send the corrected script in one ```python block."
    )


#: A statement that runs a tool the way a shell runs a command: its name, a space, then
#: an argument (`ls -a /tmp`, `cd docs`, `cat "notes.txt"`) where Python needs parentheses.
_SHELL_STYLE = re.compile(r"(?P<name>[A-Za-z_]\w*)[ \t]+(?P<rest>[-/~.'\"\w].*)")


def shell_style_line(code: str, functions: Mapping[str, Sequence[str]]) -> tuple[int, str] | None:
    """The first statement of `code` that runs one of `functions` as a shell command.

    Returns its line number and the function's name. Python reads ``ls -a /tmp`` as
    arithmetic on the function (it fails on a name error, or on the types) and
    ``cd docs`` as a syntax error; a small model writes the same line again if it is
    only shown the error.
    """
    try:
        starts = sorted(
            {(n.lineno, n.col_offset) for n in ast.walk(ast.parse(code)) if isinstance(n, ast.stmt)}
        )
    except SyntaxError as error:
        starts = [(error.lineno, -1)] if error.lineno else []
    lines = code.splitlines()
    for number, column in starts:
        if not 0 < number <= len(lines):
            continue
        line = lines[number - 1]
        match = _SHELL_STYLE.fullmatch((line.strip() if column < 0 else line[column:]).rstrip())
        if match is None or match["name"] not in functions:
            continue
        if keyword.iskeyword(re.split(r"\W", match["rest"], maxsplit=1)[0]):
            continue  # `ls if x else y`, `ls in found`: Python, if odd Python
        return number, match["name"]
    return None


def _shell_feedback(
    code: str, number: int, function: str, params: Sequence[str], module: str
) -> str:
    line = code.splitlines()[number - 1].strip()
    call = f"{function}({', '.join(f'{p}=...' for p in params)})"
    return (
        f"Line {number} of your script, `{line}`, is written as a shell command, but "
        f"`{function}` is a Python function of module `{module}`: call it as one, "
        f"`{call}`, with the arguments its stub above takes, and print what it returns. "
        "Nothing was run. Send the corrected script in one ```python block."
    )


def _looks_like_a_script(text: str, names: set[str]) -> bool:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and (node.func.id in names or node.func.id == "print")
        ):
            return True
    return False


def extract_script(text: str, tool_functions: set[str]) -> ExtractedScript | SyntaxError | None:
    """Find the script in a reply: an `ExtractedScript`, a `SyntaxError`, or None (prose).

    Forgiving where the intent is unambiguous: prose around the block, several
    python blocks (joined in order), a missing fence around text that parses and
    calls a tool, an unclosed fence, and literal ``\\n`` escapes in place of
    newlines (tried only when the reply does not read as a valid script as
    written). Each repair is named.
    """
    found = _extract(text, tool_functions)
    if isinstance(found, ExtractedScript):
        return found
    unescaped = _unescape(text)
    if unescaped is not None:
        again = _extract(unescaped, tool_functions)
        if isinstance(again, ExtractedScript):
            repair = r"replaced literal \n escapes with newlines"
            return ExtractedScript(again.code, (*again.repairs, repair))
    return found


def _extract(text: str, tool_functions: set[str]) -> ExtractedScript | SyntaxError | None:
    repairs: list[str] = []
    blocks = [m.group("body") for m in _FENCE.finditer(text) if m.group("lang") in _CODE_LANGS]
    if blocks:
        if text.count("```") % 2 == 1:
            repairs.append("read an unclosed code fence to the end of the reply")
        code = "\n".join(b.strip("\n") for b in blocks) + "\n"
        if len(blocks) > 1:
            repairs.append(f"joined {len(blocks)} python blocks into one script")
    else:
        stripped = text.strip()
        if not _looks_like_a_script(stripped, tool_functions):
            return None
        code = stripped + "\n"
        repairs.append("read an unfenced reply that calls tools as a script")
    error = _parses(code)
    if error is None:
        return ExtractedScript(code, tuple(repairs))
    return error


class CodeConvention(Convention):
    """Programmatic tool calling: a stub module in the prompt, one script per reply."""

    name = "code"
    caller = "script"

    def __init__(self, module: str = MODULE) -> None:
        self.module = module
        # The run's tool functions, each with its parameters; runs may share this convention.
        self._functions: PerRun[dict[str, tuple[str, ...]]] = PerRun("the code convention")

    def prompt(self, tools: Toolbox) -> str:
        # A small model copies the shape of an example more readily than it
        # follows a rule, so the example calls one of the real functions.
        example, finish = example_and_finish(tools, FINISH, OUTPUT_FINISH)
        return PROMPT.format(
            module=self.module,
            stubs=tools.stub_module(module=self.module),
            example=example,
            finish=finish,
        )

    def prepare(self, tools: Toolbox, system_prompt: str | None) -> Prepared:
        self._functions.set(
            {s.function: tuple(p for p, _ in s.params) for s in tools.stub_signatures()}
        )
        return written_reply(system_text(system_prompt, self.prompt(tools)), tools, OUTPUT_NOTE)

    def interpret(self, response: ModelResponse) -> Interpretation:
        text = response.content or ""
        if response.tool_calls and not text.strip():
            return Retry(
                "Tools are not called natively here: write a ```python block that calls "
                f"the functions of module `{self.module}`."
            )
        functions = self._functions.get()
        found = extract_script(text, set(functions))
        if found is None:
            if not text.strip():
                return Retry("Your last reply was empty. Send a ```python block, or your answer.")
            return Answer(text)
        if isinstance(found, SyntaxError):
            fence = _FENCE.search(text)
            code = fence.group("body") if fence else text
        else:
            code = found.code
        shell = shell_style_line(code, functions)
        if shell is not None:
            number, function = shell
            return Retry(_shell_feedback(code, number, function, functions[function], self.module))
        if isinstance(found, SyntaxError):
            return Retry(_syntax_feedback(code, found))
        return Script(found.code, found.repairs)
