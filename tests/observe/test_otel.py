"""OpenTelemetry export: GenAI spans sent over OTLP/HTTP to a real receiver on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes

from examples.seed_tools import toolbox as seed_tools
from tooluse import Agent, Limits, RunResult
from tooluse.context import ContextPolicy
from tooluse.models import ScriptedModel

from ._otlp_receiver import OtlpReceiver, ReceivedSpan

ROOT = Path(__file__).resolve().parents[2]


def call(call_id: str, name: str, **arguments: object) -> dict[str, object]:
    return {
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


def export_run(
    receiver: OtlpReceiver,
    replies: list[dict[str, object]],
    task: str = "What is the weather in Paris?",
    **options: object,
) -> tuple[RunResult, list[ReceivedSpan]]:
    provider = TracerProvider()
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces"))
    )
    model = ScriptedModel(replies, name="scripted:demo")
    with Agent(model, seed_tools, otel=provider, **options) as agent:  # type: ignore[arg-type]
        result = agent.run(task)
    provider.shutdown()
    return result, receiver.spans


def by_name(spans: list[ReceivedSpan]) -> dict[str, list[ReceivedSpan]]:
    named: dict[str, list[ReceivedSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


def test_a_json_run_gives_agent_chat_and_tool_spans(receiver: OtlpReceiver) -> None:
    replies = [
        call("c1", "get_current_weather", locaton="Paris"),  # a typo: refused
        call("c2", "get_current_weather", location="Paris"),
        {"content": "It is mild in Paris."},
    ]
    result, spans = export_run(receiver, replies)
    assert result.status == "completed" and len(result.rejected) == 1
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    named = by_name(spans)
    assert sorted(named) == ["chat demo", "execute_tool get_current_weather", "invoke_agent"]
    (run,) = named["invoke_agent"]
    chats = named["chat demo"]
    tools = named["execute_tool get_current_weather"]
    assert len(chats) == 3 and len(tools) == 2
    assert run.parent_span_id == b""
    for span in [*chats, *tools]:
        assert span.parent_span_id == run.span_id and span.trace_id == run.trace_id
        assert run.start_ns <= span.start_ns <= span.end_ns <= run.end_ns
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["tooluse.status"] == "completed"
    for chat in chats:
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"] == "demo"
        assert chat.attributes["gen_ai.provider.name"] == "scripted"
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
        assert chat.attributes["gen_ai.usage.output_tokens"] > 0
    assert run.attributes["gen_ai.usage.input_tokens"] == sum(
        c.attributes["gen_ai.usage.input_tokens"] for c in chats
    )
    refused, ran = sorted(tools, key=lambda s: str(s.attributes["gen_ai.tool.call.id"]))
    assert ran.attributes["gen_ai.tool.call.id"] == "c2"
    for span in (refused, ran):
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.name"] == "get_current_weather"
        assert span.attributes["gen_ai.tool.type"] == "function"
    assert ran.status_code != 2  # not ERROR
    assert refused.status_code == 2 and refused.attributes["error.type"] == "rejected_invalid"
    assert "locaton" in refused.status_message
    # Content is off by default: no arguments, results or messages leave the process.
    for span in spans:
        assert not {
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
            "gen_ai.input.messages",
            "gen_ai.output.messages",
        } & set(span.attributes)


def test_calls_inside_a_script_are_children_of_the_script_span(receiver: OtlpReceiver) -> None:
    script = (
        "import tools\n"
        "for city in ['Paris', 'London']:\n"
        "    print(tools.get_current_weather(location=city))\n"
    )
    replies = [{"content": f"```python\n{script}```"}, {"content": "Done."}]
    result, spans = export_run(
        receiver, replies, convention="code", limits=Limits(script_timeout=20)
    )
    assert result.status == "completed" and len(result.calls) == 2
    named = by_name(spans)
    (run,) = named["invoke_agent"]
    (script_span,) = named["execute_tool python"]
    calls = named["execute_tool get_current_weather"]
    assert script_span.parent_span_id == run.span_id
    assert script_span.attributes["gen_ai.tool.call.id"] == "script_1"
    assert script_span.attributes["tooluse.script.calls"] == 2
    assert script_span.attributes["gen_ai.tool.name"] == "python"
    assert script_span.attributes["gen_ai.tool.type"] == "function"
    assert len(calls) == 2
    for span in calls:
        assert span.parent_span_id == script_span.span_id
        assert span.attributes["tooluse.source"] == "script"
        assert str(span.attributes["gen_ai.tool.call.id"]).startswith("script_1.")


def test_env_vars_turn_it_on_and_content_is_opt_in(receiver: OtlpReceiver) -> None:
    program = (
        "import json\n"
        "from examples.seed_tools import toolbox\n"
        "from tooluse import Agent\n"
        "from tooluse.models import ScriptedModel\n"
        "args = json.dumps({'location': 'Paris'})\n"
        "model = ScriptedModel([{'tool_calls': [{'id': 'c1', 'type': 'function', "
        "'function': {'name': 'get_current_weather', 'arguments': args}}]}, "
        "{'content': 'mild'}])\n"
        "print(Agent(model, toolbox).run('weather?').status)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}",
        "TOOLUSE_OTEL": "1",
        "TOOLUSE_OTEL_CONTENT": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_SERVICE_NAME": "weather-agent",
    }
    done = subprocess.run(
        [sys.executable, "-c", program],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "completed"
    # The batch processor exported at exit.
    named = by_name(receiver.spans)
    (run,) = named["invoke_agent"]
    assert run.resource["service.name"] == "weather-agent"
    (tool_span,) = named["execute_tool get_current_weather"]
    assert json.loads(str(tool_span.attributes["gen_ai.tool.call.arguments"])) == {
        "location": "Paris"
    }
    assert "Paris" in str(tool_span.attributes["gen_ai.tool.call.result"])
    assert "weather?" in str(run.attributes["gen_ai.input.messages"])
    assert "mild" in str(run.attributes["gen_ai.output.messages"])


def test_the_gen_ai_attributes_are_the_semantic_conventions_own(
    receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every gen_ai.* attribute sent is defined by the OpenTelemetry conventions package."""
    known = {
        getattr(gen_ai_attributes, name)
        for name in dir(gen_ai_attributes)
        if name.startswith("GEN_AI_")
    }
    operations = {v.value for v in gen_ai_attributes.GenAiOperationNameValues}
    replies = [call("c1", "get_current_weather", location="Paris"), {"content": "ok"}]
    provider = TracerProvider()
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces"))
    )
    monkeypatch.setenv("TOOLUSE_OTEL_CONTENT", "1")
    with Agent(ScriptedModel(replies), seed_tools, otel=provider) as agent:
        agent.run("weather?")
    provider.shutdown()
    used = {k for span in receiver.spans for k in span.attributes if k.startswith("gen_ai.")}
    assert "gen_ai.tool.call.arguments" in used  # content was on, so every name shows
    assert used <= known, used - known
    assert {str(s.attributes["gen_ai.operation.name"]) for s in receiver.spans} <= operations


def test_context_offloads_are_events_on_the_run_span(receiver: OtlpReceiver) -> None:
    replies: list[dict[str, object]] = [
        call(f"p{page}", "list_items", category="fruit", page=page) for page in (1, 2, 3, 4)
    ]
    replies.append(call("k1", "context_compress", span_ids=["m3", "m4"], summary="pages 1-2"))
    replies.append({"content": "40 fruits."})
    result, spans = export_run(receiver, replies, context=ContextPolicy(budget=900))
    assert result.status == "completed"
    (run,) = by_name(spans)["invoke_agent"]
    names = [name for name, _ in run.events]
    assert "tooluse.context.offload" in names and "tooluse.context.compress" in names
    offload = dict(run.events)["tooluse.context.offload"]
    assert offload["tooluse.context.by"] == "harness" and offload["tooluse.context.ids"]
    compress = dict(run.events)["tooluse.context.compress"]
    assert compress["tooluse.context.call_id"] == "k1"
    assert by_name(spans)["execute_tool context_compress"]


def test_the_answer_check_is_an_event_on_the_run_span(receiver: OtlpReceiver) -> None:
    replies: list[dict[str, object]] = [
        call("c1", "calculator", expression="90 + 2"),
        {"content": "92 is less than 85."},
        {"content": "92 is more than 85."},
    ]
    result, spans = export_run(
        receiver, replies, task="Is 90 + 2 more than 85?", check_answers=True
    )
    assert result.answer == "92 is more than 85."
    (run,) = by_name(spans)["invoke_agent"]
    checks = [attributes for name, attributes in run.events if name == "tooluse.answer_check"]
    assert [c["tooluse.answer_check.outcome"] for c in checks] == ["noted", "corrected"]
    assert [c["tooluse.round"] for c in checks] == [2, 3]
