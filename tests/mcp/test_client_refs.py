"""Schemas whose ``$ref``s do not resolve: such an MCP tool is refused when the server's
tools are listed, a reference on the network is never fetched, and a tool whose schema
still fails when a call is checked gives that call a recorded error, not a failed run."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from client_helpers import PYTHON

from tooluse import Agent, Limits, RunResult, Tool, Toolbox
from tooluse.mcp import MCPClient, combine
from tooluse.models import ScriptedModel
from tooluse.tools._validate import unresolved_reference

pytestmark = pytest.mark.usefixtures("no_children_left")

ODD = str(Path(__file__).with_name("odd_servers.py"))


class SchemaHost:
    """A real HTTP server on 127.0.0.1 that serves a schema and counts who asked for it."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        requests = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                requests.append(self.path)
                body = json.dumps({"type": "string"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/schema+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/schemas/x.json"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@pytest.fixture
def schema_host() -> Iterator[SchemaHost]:
    host = SchemaHost()
    yield host
    host.close()


def call(name: str, call_id: str = "c1", **arguments: Any) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"tool_calls": [{"id": call_id, "type": "function", "function": function}]}


def run(tools: Toolbox, replies: list[dict[str, Any]], convention: str = "json") -> RunResult:
    model = ScriptedModel(replies)
    with Agent(model, tools, convention=convention, limits=Limits(script_timeout=60)) as agent:
        return agent.run("task")


def test_tools_with_unresolvable_refs_are_refused_by_name_and_ref_and_the_rest_work(
    schema_host: SchemaHost,
) -> None:
    with MCPClient.stdio([PYTHON, ODD, "refs", schema_host.url]) as client:
        refused = client.refused
        assert client.tool_names == ["defs", "echo"]
        result = run(
            client.toolbox(),
            [
                call("nowhere", x=1),
                call("defs", "c2", text="resolved"),
                call("echo", "c3", text="still here"),
                {"content": "done"},
            ],
        )
    assert set(refused) == {"nowhere", "remote", "gone_output", "not_a_schema"}
    assert refused["nowhere"].startswith("tool 'nowhere': its inputSchema")
    assert "'#/$defs/Nowhere'" in refused["nowhere"]
    assert f"'{schema_host.url}'" in refused["remote"] and "never fetched" in refused["remote"]
    assert refused["gone_output"].startswith("tool 'gone_output': its outputSchema")
    assert "'#/$defs/Gone'" in refused["gone_output"]
    assert "'#/properties/n/default'" in refused["not_a_schema"]
    assert "not a schema" in refused["not_a_schema"]
    # The refused tool is not offered: calling it is an unknown tool, and the run goes on.
    assert result.status == "completed"
    (rejected,) = result.rejected
    assert "there is no tool named 'nowhere'" in rejected.error
    assert [(c.name, c.result) for c in result.calls] == [
        ("defs", "resolved"),
        ("echo", "still here"),
    ]
    assert schema_host.requests == []


def test_a_combined_toolbox_leaves_a_refused_tool_out(schema_host: SchemaHost) -> None:
    with MCPClient.stdio([PYTHON, ODD, "refs", schema_host.url]) as client:
        box = combine(client)
    assert box.names == ["defs", "echo"]
    assert schema_host.requests == []


# --- a schema that fails only when a call is checked: the general path --------------------


def broken_tools(url: str) -> Toolbox:
    """Local tools whose schemas `Tool.from_schema` takes as given, and that fail when checked."""

    def nowhere(**arguments: Any) -> str:
        raise AssertionError("a call whose arguments could not be checked must not run")

    def fine(text: str) -> str:
        return text

    text = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}

    def pointing_at(reference: str) -> dict[str, Any]:
        return {"type": "object", "properties": {"x": {"$ref": reference}}}

    return Toolbox(
        [
            Tool.from_schema("nowhere", "", pointing_at("#/$defs/No"), nowhere),
            Tool.from_schema("remote", "", pointing_at(url), nowhere),
            Tool.from_schema("fine", "Say it back.", text, fine),
        ]
    )


def test_a_call_whose_schema_cannot_be_checked_is_a_recorded_error_in_the_json_convention(
    schema_host: SchemaHost,
) -> None:
    box = broken_tools(schema_host.url)
    replies = [
        {
            "tool_calls": [
                call("nowhere", "c1", x=1)["tool_calls"][0],
                call("remote", "c2", x=1)["tool_calls"][0],
                call("fine", "c3", text="ran")["tool_calls"][0],
            ]
        },
        {"content": "done"},
    ]
    result = run(box, replies)
    assert result.status == "completed", result.error
    assert [c.result for c in result.calls] == ["ran"]
    nowhere, remote = result.rejected
    assert nowhere.id == "c1" and "nowhere cannot be called" in nowhere.error
    assert "/$defs/No" in nowhere.error
    assert remote.id == "c2" and schema_host.url in remote.error
    # Every call has its answer: the model saw both errors.
    answers = {m.tool_call_id: m.content for m in result.messages if m.role == "tool"}
    assert set(answers) == {"c1", "c2", "c3"}
    assert answers["c1"].startswith("Error: nowhere cannot be called")
    assert schema_host.requests == []


def test_a_call_whose_schema_cannot_be_checked_is_a_recorded_error_in_a_plan(
    schema_host: SchemaHost,
) -> None:
    plan = 'a = nowhere(x=1)\nb = fine(text="after")'
    result = run(
        broken_tools(schema_host.url),
        [{"content": f"```plan\n{plan}\n```"}, {"content": "done"}],
        "plan",
    )
    assert result.status == "completed", result.error
    (rejected,) = result.rejected
    assert rejected.name == "nowhere" and "nowhere cannot be called" in rejected.error
    assert [(c.name, c.result) for c in result.calls] == [("fine", "after")]
    (report,) = [m.content for m in result.messages if m.role == "tool"]
    assert "a (line 1) failed: nowhere(x=1): nowhere cannot be called" in report
    assert schema_host.requests == []


def test_a_call_whose_schema_cannot_be_checked_is_a_recorded_error_in_a_script(
    schema_host: SchemaHost,
) -> None:
    script = (
        "import tools\n"
        "for name in ('nowhere', 'remote'):\n"
        "    try:\n"
        "        getattr(tools, name)(x=1)\n"
        "    except tools.ToolError as exc:\n"
        "        print('refused:', name)\n"
        "print(tools.fine(text='after'))\n"
    )
    result = run(
        broken_tools(schema_host.url),
        [{"content": f"```python\n{script}\n```"}, {"content": "done"}],
        "code",
    )
    assert result.status == "completed", result.error
    (record,) = result.scripts
    assert record.stdout.splitlines() == ["refused: nowhere", "refused: remote", "after"]
    assert [r.name for r in result.rejected] == ["nowhere", "remote"]
    assert all("cannot be called" in r.error for r in result.rejected)
    assert all(r.source == "script" for r in result.rejected)
    assert schema_host.requests == []


# --- which references resolve ---------------------------------------------------------------

RESOLVING = {
    "a pointer into $defs": {
        "$defs": {"A": {"type": "string"}},
        "properties": {"a": {"$ref": "#/$defs/A"}},
    },
    "draft-07 definitions": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"A": {"type": "string"}},
        "properties": {"a": {"$ref": "#/definitions/A"}},
    },
    "an $id inside the schema": {
        "$id": "https://example.com/root.json",
        "$defs": {"A": {"$id": "a.json", "type": "string"}},
        "properties": {"x": {"$ref": "a.json"}},
    },
    "an anchor": {
        "$defs": {"A": {"$anchor": "text", "type": "string"}},
        "properties": {"a": {"$ref": "#text"}},
    },
    "the schema itself": {"type": "object", "properties": {"child": {"$ref": "#"}}},
    "a meta-schema": {
        "properties": {"s": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}
    },
    "a dynamic anchor": {"$dynamicAnchor": "node", "properties": {"c": {"$dynamicRef": "#node"}}},
    "escaped pointers": {
        "$defs": {"a/b": {"type": "string"}, "c d": {"type": "string"}},
        "properties": {"a": {"$ref": "#/$defs/a~1b"}, "b": {"$ref": "#/$defs/c%20d"}},
    },
    "data that looks like a reference": {
        "properties": {"s": {"const": {"$ref": "#/nowhere"}, "examples": [{"$ref": "x"}]}}
    },
}

NOT_RESOLVING = {
    "a draft-07 pointer to nothing": (
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "properties": {"a": {"$ref": "#/definitions/A"}},
        },
        "#/definitions/A",
    ),
    "a relative reference off an $id": (
        {"$id": "https://example.com/root.json", "properties": {"x": {"$ref": "b.json"}}},
        "b.json",
    ),
    "an anchor nothing has": ({"properties": {"a": {"$ref": "#nothing"}}}, "#nothing"),
    "a URN": ({"properties": {"a": {"$ref": "urn:example:other"}}}, "urn:example:other"),
    "one off an $id that is not a URI": (
        {"$id": "http://[::1", "properties": {"a": {"$ref": "y"}}},
        "y",
    ),
    "deep inside": (
        {"properties": {"a": {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/B"}]}}}},
        "#/$defs/B",
    ),
}


@pytest.mark.parametrize("schema", RESOLVING.values(), ids=RESOLVING.keys())
def test_references_that_resolve_within_the_schema_are_kept(schema: dict[str, Any]) -> None:
    assert unresolved_reference(schema) is None


@pytest.mark.parametrize(("schema", "reference"), NOT_RESOLVING.values(), ids=NOT_RESOLVING.keys())
def test_references_that_do_not_resolve_are_named(schema: dict[str, Any], reference: str) -> None:
    found = unresolved_reference(schema)
    assert found is not None and found[0] == reference
