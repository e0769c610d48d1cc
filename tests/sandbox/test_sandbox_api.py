"""The public surface of tooluse.sandbox: a change here is a deliberate, visible diff."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tooluse.sandbox
from tooluse.sandbox import ExecResult, SandboxLimits, ToolReply
from tooluse.sandbox._output import OutputCapture
from tooluse.sandbox._seccomp import build_filter


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


def test_server_is_standalone() -> None:
    """The server runs inside the sandbox, where only the standard library exists."""
    source = (Path(tooluse.sandbox.__file__).parent / "_server.py").read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative import in _server.py"
            assert not (node.module or "").startswith("tooluse")
        elif isinstance(node, ast.Import):
            assert not any(alias.name.startswith("tooluse") for alias in node.names)


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
    with pytest.raises(ValueError, match="memory_mb"):
        SandboxLimits(memory_mb=0)
    with pytest.raises(ValueError, match="max_calls"):
        SandboxLimits(max_calls=-1)
    assert SandboxLimits(max_calls=None).max_calls is None


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
