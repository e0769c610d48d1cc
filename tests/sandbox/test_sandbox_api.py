"""The public surface of tooluse.sandbox: a change here is a deliberate, visible diff."""

from __future__ import annotations

import ast
import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tooluse.sandbox
from tooluse import ToolUseError, UsageError
from tooluse.sandbox import ExecResult, Sandbox, SandboxError, SandboxLimits, ToolReply
from tooluse.sandbox._output import OutputCapture
from tooluse.sandbox._seccomp import build_filter
from tooluse.sandbox._wire import json_encoder


def test_exported_names() -> None:
    assert sorted(tooluse.sandbox.__all__) == [
        "DirectCall",
        "DirectHandler",
        "ExecResult",
        "ExecStatus",
        "Handler",
        "IsolationMode",
        "LimitName",
        "ProxySpec",
        "Sandbox",
        "SandboxError",
        "SandboxLimits",
        "SandboxUnavailable",
        "SandboxWarning",
        "ToolReply",
    ]
    for name in tooluse.sandbox.__all__:
        assert getattr(tooluse.sandbox, name) is not None


def _runtime_imports(tree: ast.AST) -> list[tuple[str, int]]:
    """Modules imported at run time: (name, level), leaving out ``if TYPE_CHECKING:``."""
    found: list[tuple[str, int]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            found += _runtime_imports(ast.Module(body=node.orelse, type_ignores=[]))
            continue
        if isinstance(node, ast.ImportFrom):
            found.append((node.module or "", node.level))
        elif isinstance(node, ast.Import):
            found += [(alias.name, 0) for alias in node.names]
        found += _runtime_imports(node)
    return found


def _runtime_files() -> set[str]:
    """The files the host mounts into the sandbox (``_RUNTIME_FILES`` in ``_sandbox.py``)."""
    here = Path(tooluse.sandbox.__file__).parent
    for node in ast.walk(ast.parse((here / "_sandbox.py").read_text())):
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "_RUNTIME_FILES":
            return set(ast.literal_eval(node.value))
    raise AssertionError("_sandbox.py names no _RUNTIME_FILES")


def test_the_in_sandbox_runtime_needs_only_the_standard_library() -> None:
    """The supervisor and the worker run inside the sandbox, where only the standard library
    exists, beside the files the host mounts there; the wire module loads no C library."""
    here = Path(tooluse.sandbox.__file__).parent
    mounted = _runtime_files()
    assert {"_supervisor.py", "_worker.py", "_tree.py", "_wire.py"} <= mounted
    for name in sorted(mounted):
        imports = _runtime_imports(ast.parse((here / name).read_text()))
        assert imports, name
        for module, level in imports:
            top = module.split(".")[0]
            assert level == 0, (name, module)
            assert top in sys.stdlib_module_names or f"{top}.py" in mounted, (name, module)
    assert "ctypes" not in {
        m for m, _ in _runtime_imports(ast.parse((here / "_wire.py").read_text()))
    }


def test_the_worker_never_imports_the_supervisor() -> None:
    # The supervisor forks the worker; the code that runs beside the script holds nothing
    # of the server's.
    here = Path(tooluse.sandbox.__file__).parent
    imports = {m for m, _ in _runtime_imports(ast.parse((here / "_worker.py").read_text()))}
    assert "_wire" in imports and "_supervisor" not in imports


def test_the_host_never_imports_the_server() -> None:
    code = (
        "import sys, tooluse, tooluse.sandbox\n"
        "print(sorted(m for m in sys.modules if m.startswith('tooluse.sandbox.')))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "tooluse.sandbox._wire" in loaded and "tooluse.sandbox._supervisor" not in loaded
    assert "tooluse.sandbox._worker" not in loaded


def test_tool_reply() -> None:
    assert ToolReply.ok({"a": 1}) == ToolReply(value={"a": 1})
    assert not ToolReply.ok().failed
    failure = ToolReply.fail("bad unit", kind="validation")
    assert (failure.failed, failure.kind, failure.message) == (True, "validation", "bad unit")
    assert ToolReply.fail("boom").kind == "tool"


def test_exec_result_ok() -> None:
    result = ExecResult("ok", "", "", None, None, False, 0, 0.0)
    assert result.ok
    assert not ExecResult("timeout", "", "", "t", "wall_clock", False, 0, 1.0).ok


def test_limits_validation() -> None:
    with pytest.raises(UsageError, match="memory_mb"):
        SandboxLimits(memory_mb=0)
    with pytest.raises(UsageError, match="max_calls"):
        SandboxLimits(max_calls=-1)
    assert SandboxLimits(max_calls=None).max_calls is None


async def test_usage_mistakes_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="isolation"):
        Sandbox(isolation="off")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="prefork"):
        Sandbox(prefork=-1)
    sb = Sandbox(isolation="none")
    with pytest.raises(UsageError, match="timeout"):
        await sb.execute("print(1)", timeout=0)
    with pytest.raises(UsageError, match="module_name"):
        await sb.execute("print(1)", module_name="my-tools")
    with pytest.raises(UsageError, match="await execute"):
        sb.execute_sync("print(1)")
    sb.close()
    assert issubclass(SandboxError, ToolUseError) and not issubclass(SandboxError, UsageError)


def test_output_capture_keeps_head_and_tail() -> None:
    capture = OutputCapture(20)
    for chunk in (b"0123456789", b"abcdefghij", b"KLMNOPQRST", b"uvwxyz"):
        capture.feed(chunk)
    assert capture.truncated
    assert capture.total == 36
    assert capture.text() == "0123456789\n[... 16 characters cut ...]\nQRSTuvwxyz"


def test_output_capture_counts_characters_not_bytes() -> None:
    capture = OutputCapture(4)
    capture.feed(("ab" + "é" * 10 + "yz").encode())
    assert capture.text() == "ab\n[... 10 characters cut ...]\nyz"


def test_output_capture_untouched_when_small() -> None:
    capture = OutputCapture(100)
    capture.feed("héllo\n".encode())
    assert (capture.text(), capture.truncated) == ("héllo\n", False)


def test_seccomp_filter_shape() -> None:
    program = build_filter("x86_64")
    assert program is not None
    assert len(program) % 8 == 0
    assert build_filter("aarch64") is not None
    assert build_filter("mips") is None


@pytest.mark.parametrize(
    "value",
    [
        {"location": "Paris", "unit": None, "days": [1, 2.5, True]},
        'héllo ✓ "quoted"\n',
        [float("inf"), -0.0, 10**30],
        {"when": datetime.date(2026, 1, 2), 3: "int key"},
    ],
)
@pytest.mark.parametrize(
    "options",
    [{}, {"separators": (", ", ": "), "default": str}, {"allow_nan": False}],
)
def test_the_wire_encoder_writes_what_json_dumps_writes(
    value: object, options: dict[str, Any]
) -> None:
    options = {"separators": (",", ":"), **options}
    try:
        expected: str | type[Exception] = json.dumps(value, **options)
    except (TypeError, ValueError) as exc:
        expected = type(exc)
    try:
        written: str | type[Exception] = json_encoder(**options)(value)
    except (TypeError, ValueError) as exc:
        written = type(exc)
    assert written == expected
