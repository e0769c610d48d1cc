"""Harness overhead per tool call: sequential one-call turns with a scripted model.

Every framework runs the same task: the model calls a trivial tool once per turn
for N turns, then answers. The model replies instantly, so what is measured is
the framework's own cost per turn (building requests, validating, executing,
recording). Per-turn times come from the gaps between consecutive model calls.

    python bench/loop_overhead.py [--turns 100 1000] [--repeat 3]

Peers (smolagents, pydantic-ai, openai-agents) are measured when installed
(`pip install -e .[bench]`); a missing peer is reported, not faked. tooluse is
also measured with a JSON Lines trace (``tooluse+jsonl``) and with OpenTelemetry
export on (``tooluse+otel``: a batch processor sending OTLP/HTTP to a receiver on
127.0.0.1; needs the ``otel`` extra); plain ``tooluse`` has both off.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from _options import add_repeat

Runner = Callable[[int], list[float]]
"""Runs N turns and returns the monotonic timestamps of the N+1 model calls."""


def trivial(i: int) -> int:
    """Return the number plus one.

    Args:
        i: any integer
    """
    return i + 1


# --- tooluse --------------------------------------------------------------------------


def run_tooluse(turns: int, **options: Any) -> list[float]:
    from tooluse import Agent, Message, tool
    from tooluse.models import ScriptedModel

    stamps: list[float] = []

    def reply(messages: list[Message] | Any) -> dict[str, Any]:
        stamps.append(time.perf_counter())
        n = len(stamps)
        if n > turns:
            return {"content": "done"}
        arguments = json.dumps({"i": n})
        return {
            "tool_calls": [
                {
                    "id": f"c{n}",
                    "type": "function",
                    "function": {"name": "trivial", "arguments": arguments},
                }
            ]
        }

    agent = Agent(ScriptedModel(reply), [tool(trivial)], max_rounds=turns + 1, **options)
    result = agent.run("count")
    if result.status != "completed" or len(result.calls) != turns:
        raise RuntimeError(f"tooluse run failed: {result.status} {result.error}")
    return stamps


def run_tooluse_jsonl(turns: int) -> list[float]:
    """With a JSON Lines trace written (and flushed) per event."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        return run_tooluse(turns, trace=f"{folder}/trace.jsonl")


class _Receiver:
    """An OTLP/HTTP endpoint on loopback that accepts every export and keeps nothing."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"


_receiver: list[_Receiver] = []


def run_tooluse_otel(turns: int) -> list[float]:
    """With OpenTelemetry on: a batch processor exporting OTLP/HTTP to loopback."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    if not _receiver:
        _receiver.append(_Receiver())
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=_receiver[0].url)))
    try:
        return run_tooluse(turns, otel=provider)
    finally:
        provider.shutdown()  # exports what is left, outside the measured gaps


# --- smolagents -----------------------------------------------------------------------


def run_smolagents(turns: int) -> list[float]:
    from smolagents import Model, ToolCallingAgent
    from smolagents import tool as smol_tool
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
    )
    from smolagents.monitoring import LogLevel

    stamps: list[float] = []

    class Scripted(Model):  # type: ignore[misc]
        def generate(self, messages: Any, **kwargs: Any) -> Any:
            stamps.append(time.perf_counter())
            n = len(stamps)
            name, arguments = (
                ("trivial", {"i": n}) if n <= turns else ("final_answer", {"answer": "done"})
            )
            call = ChatMessageToolCall(
                id=f"c{n}",
                type="function",
                function=ChatMessageToolCallFunction(name=name, arguments=arguments),
            )
            return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])

    agent = ToolCallingAgent(
        tools=[smol_tool(trivial)],
        model=Scripted(model_id="scripted"),
        max_steps=turns + 2,
        verbosity_level=LogLevel.OFF,
    )
    agent.run("count")
    return stamps


# --- pydantic-ai ----------------------------------------------------------------------


def run_pydantic_ai(turns: int) -> list[float]:
    from pydantic_ai import Agent as PAgent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    stamps: list[float] = []

    def reply(messages: Any, info: AgentInfo) -> ModelResponse:
        stamps.append(time.perf_counter())
        n = len(stamps)
        if n > turns:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("trivial", {"i": n}, tool_call_id=f"c{n}")])

    agent = PAgent(FunctionModel(reply), tools=[trivial])
    try:
        from pydantic_ai.usage import UsageLimits

        agent.run_sync("count", usage_limits=UsageLimits(request_limit=turns + 5))
    except ImportError:
        agent.run_sync("count")
    return stamps


# --- openai-agents --------------------------------------------------------------------


def run_openai_agents(turns: int) -> list[float]:
    from agents import Agent as OAgent
    from agents import Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)
    stamps: list[float] = []

    class Scripted(Model):  # type: ignore[misc]
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            stamps.append(time.perf_counter())
            n = len(stamps)
            if n > turns:
                text = ResponseOutputText(type="output_text", text="done", annotations=[])
                item: Any = ResponseOutputMessage(
                    id=f"m{n}", type="message", role="assistant", status="completed", content=[text]
                )
            else:
                item = ResponseFunctionToolCall(
                    id=f"f{n}",
                    call_id=f"c{n}",
                    type="function_call",
                    name="trivial",
                    arguments=json.dumps({"i": n}),
                )
            return ModelResponse(output=[item], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    agent = OAgent(name="bench", model=Scripted(), tools=[function_tool(trivial)])
    asyncio.run(Runner.run(agent, "count", max_turns=turns + 5))
    return stamps


FRAMEWORKS: dict[str, Runner] = {
    "tooluse": run_tooluse,
    "tooluse+jsonl": run_tooluse_jsonl,
    "tooluse+otel": run_tooluse_otel,
    "smolagents": run_smolagents,
    "pydantic-ai": run_pydantic_ai,
    "openai-agents": run_openai_agents,
}


@dataclass
class Measure:
    framework: str
    turns: int
    per_call_us: float
    first10_us: float
    last10_us: float


def measure(name: str, runner: Runner, turns: int, repeat: int) -> Measure:
    best: Measure | None = None
    for _ in range(repeat):
        gc.collect()
        stamps = runner(turns)
        if len(stamps) != turns + 1:
            raise RuntimeError(f"{name}: expected {turns + 1} model calls, saw {len(stamps)}")
        gaps = [(b - a) * 1e6 for a, b in itertools.pairwise(stamps)]
        m = Measure(
            name,
            turns,
            per_call_us=statistics.mean(gaps),
            first10_us=statistics.median(gaps[:10]),
            last10_us=statistics.median(gaps[-10:]),
        )
        if best is None or m.per_call_us < best.per_call_us:
            best = m
    assert best is not None
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 1000])
    add_repeat(parser)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    rows: list[Measure] = []
    skipped: dict[str, str] = {}
    for name, runner in FRAMEWORKS.items():
        if args.only and name not in args.only:
            continue
        for turns in args.turns:
            try:
                rows.append(measure(name, runner, turns, args.repeat))
            except ImportError as exc:
                skipped[name] = f"not installed ({exc.name})"
                break
    header = (
        f"{'framework':<15}{'turns':>7}{'µs/call':>11}"
        f"{'first-10 med':>14}{'last-10 med':>13}{'last/first':>12}"
    )
    print(header)
    print("-" * len(header))
    for m in rows:
        print(
            f"{m.framework:<15}{m.turns:>7}{m.per_call_us:>11.0f}{m.first10_us:>14.0f}"
            f"{m.last10_us:>13.0f}{m.last10_us / m.first10_us:>12.2f}"
        )
    for name, why in skipped.items():
        print(f"{name:<15} skipped: {why}")
    ours = {m.turns: m.per_call_us for m in rows if m.framework == "tooluse"}
    peers = [m for m in rows if not m.framework.startswith("tooluse")]
    summary: dict[str, Any] = {
        "bench": "loop_overhead",
        "python": sys.version.split()[0],
        "rows": [m.__dict__ for m in rows],
        "skipped": skipped,
    }
    for variant in ("tooluse+jsonl", "tooluse+otel"):
        for m in rows:
            if m.framework == variant and m.turns in ours:
                key = f"{variant.split('+')[1]}_extra_us_per_call_{m.turns}"
                summary[key] = round(m.per_call_us - ours[m.turns], 1)
    for turns, value in ours.items():
        same = [m.per_call_us for m in peers if m.turns == turns]
        if same:
            summary[f"ratio_to_fastest_peer_{turns}"] = round(value / min(same), 3)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
