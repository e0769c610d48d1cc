"""What streaming costs: first text, per streamed token, and per call, against the raw SDK.

A loopback server speaks the chat-completions wire format with ``stream=True``
(server-sent events). Three measurements:

- time to first text: from the request to the first text piece, through the
  ``openai`` SDK alone and through ``Agent.stream`` with ``OpenAIChat``, same
  server, same reply;
- event overhead per streamed token: a reply of many one-token chunks, read
  whole through the SDK alone and through ``Agent.stream``; the difference
  divided by the chunks;
- loop overhead per call: sequential one-call turns with a scripted model that
  answers at once (as bench/loop_overhead.py), through ``run()`` and through
  ``stream_sync()``, events consumed.

    python bench/streaming.py [--repeat 30] [--tokens 2000] [--turns 200]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "bench-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n".encode()


def _frame(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class Server:
    """Streams a text reply of `tokens` one-word chunks to every request."""

    def __init__(self) -> None:
        self.tokens = 10
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                first = _chunk({"role": "assistant", "content": "w0"})
                head = (
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n"
                )
                # The first piece leaves with the headers: what is timed is the client.
                self.wfile.write(head + _frame(first))
                self.wfile.flush()
                rest = [_chunk({"content": f" w{i}"}) for i in range(1, server.tokens)]
                rest.append(_chunk({}, "stop"))
                usage = {"prompt_tokens": 10, "completion_tokens": server.tokens}
                tail = {"id": "c", "object": "chat.completion.chunk", "created": 1,
                        "model": "bench-model", "choices": [], "usage": usage}  # fmt: skip
                rest.append(f"data: {json.dumps(tail)}\n\n".encode())
                rest.append(b"data: [DONE]\n\n")
                self.wfile.write(b"".join(_frame(c) for c in rest) + b"0\r\n\r\n")
                self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# --- the two clients ------------------------------------------------------------------


async def raw_sdk(client: Any) -> tuple[float, float, int]:
    """Seconds to the first text chunk and to the end, and the text chunks, SDK alone."""
    started = time.perf_counter()
    first = 0.0
    pieces = 0
    stream = await client.chat.completions.create(
        model="bench-model",
        messages=[{"role": "user", "content": "Say many words."}],
        stream=True,
        stream_options={"include_usage": True},
    )
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            if not pieces:
                first = time.perf_counter() - started
            pieces += 1
    return first, time.perf_counter() - started, pieces


async def through_agent(agent: Any) -> tuple[float, float, int]:
    """The same through `Agent.stream`: to the first text event, to ``done``, text events."""
    from tooluse import DoneEvent, TextEvent

    started = time.perf_counter()
    first = 0.0
    pieces = 0
    async for event in agent.stream("Say many words."):
        if isinstance(event, TextEvent):
            if not pieces:
                first = time.perf_counter() - started
            pieces += 1
        elif isinstance(event, DoneEvent) and event.result.status != "completed":
            raise RuntimeError(f"the run failed: {event.result.error}")
    return first, time.perf_counter() - started, pieces


async def measure_wire(server: Server, tokens: int, repeat: int) -> dict[str, dict[str, float]]:
    import openai

    from tooluse import Agent
    from tooluse.models import OpenAIChat

    server.tokens = tokens
    client = openai.AsyncOpenAI(api_key="sk-bench", base_url=server.base_url, max_retries=0)
    model = OpenAIChat("bench-model", base_url=server.base_url, api_key="sk-bench")
    agent = Agent(model, [], count_tokens=False)
    out: dict[str, dict[str, float]] = {}
    clients = (("sdk", lambda: raw_sdk(client)), ("agent", lambda: through_agent(agent)))
    for _name, warm in clients:
        await warm()  # imports, connection pool
    firsts: dict[str, list[float]] = {"sdk": [], "agent": []}
    totals: dict[str, list[float]] = {"sdk": [], "agent": []}
    for _ in range(repeat):
        # Interleaved, so that load on the machine falls on both alike.
        for name, run in (
            ("sdk", lambda: raw_sdk(client)),
            ("agent", lambda: through_agent(agent)),
        ):
            gc.collect()
            first, total, pieces = await run()
            if pieces != tokens:
                raise RuntimeError(f"{name} saw {pieces} text pieces, expected {tokens}")
            firsts[name].append(first)
            totals[name].append(total)
    await client.close()
    await model.aclose()
    for name in ("sdk", "agent"):
        out[name] = {
            "first_ms": statistics.median(firsts[name]) * 1e3,
            "first_min_ms": min(firsts[name]) * 1e3,
            "total_ms": statistics.median(totals[name]) * 1e3,
        }
    return out


# --- event overhead without a wire ------------------------------------------------------


def burst_model(tokens: int) -> Any:
    """A backend that hands over `tokens` pieces at once, then the reply: no wire, no waits."""
    from tooluse.models import Model, ModelRequest, ModelResponse, TextDelta

    pieces = [f" w{i}" for i in range(tokens)]
    text = "".join(pieces)

    class Burst(Model):
        name = "burst"

        async def respond(self, request: ModelRequest) -> ModelResponse:
            return ModelResponse(content=text, finish_reason="stop")

        async def respond_stream(self, request: ModelRequest, on_delta: Any) -> ModelResponse:
            for piece in pieces:
                on_delta(TextDelta(piece))
            return await self.respond(request)

    return Burst()


def per_event(tokens: int, repeat: int) -> dict[str, float]:
    """µs per text event through `Agent.stream`, above `Agent.arun` of the same reply."""
    from tooluse import Agent

    agent = Agent(burst_model(tokens), [], count_tokens=False)

    async def streamed() -> float:
        started = time.perf_counter()
        seen = 0
        async for event in agent.stream("Say many words."):
            seen += event.kind == "text"
        if seen != tokens:
            raise RuntimeError(f"saw {seen} text events, expected {tokens}")
        return time.perf_counter() - started

    async def plain() -> float:
        started = time.perf_counter()
        await agent.arun("Say many words.")
        return time.perf_counter() - started

    async def both() -> tuple[float, float]:
        await streamed()
        await plain()
        runs = [(await streamed(), await plain()) for _ in range(repeat)]
        return min(r[0] for r in runs), min(r[1] for r in runs)

    stream_s, run_s = asyncio.run(both())
    return {
        "stream_ms": stream_s * 1e3,
        "run_ms": run_s * 1e3,
        "per_event_us": (stream_s - run_s) * 1e6 / tokens,
    }


# --- loop overhead per call -------------------------------------------------------------


def per_call(turns: int, how: str) -> float:
    """Median µs between consecutive model calls over `turns` one-call turns."""
    from tooluse import Agent, tool
    from tooluse.models import ScriptedModel

    stamps: list[float] = []

    def reply(messages: Any) -> dict[str, Any]:
        stamps.append(time.perf_counter())
        n = len(stamps)
        if n > turns:
            return {"content": "done"}
        function = {"name": "trivial", "arguments": json.dumps({"i": n})}
        return {"tool_calls": [{"id": f"c{n}", "type": "function", "function": function}]}

    def trivial(i: int) -> int:
        """Return the number plus one.

        Args:
            i: any integer
        """
        return i + 1

    agent = Agent(ScriptedModel(reply), [tool(trivial)], max_rounds=turns + 1)
    if how == "stream_sync":
        events = list(agent.stream_sync("count"))
        result = events[-1].result  # type: ignore[union-attr]
    elif how == "stream":

        async def consume() -> Any:
            return [e async for e in agent.stream("count")][-1].result  # type: ignore[union-attr]

        result = asyncio.run(consume())
    else:
        result = agent.run("count")
    if result.status != "completed" or len(result.calls) != turns:
        raise RuntimeError(f"the run failed: {result.status} {result.error}")
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    return statistics.median(gaps) * 1e6


LOOPS = ("run", "stream", "stream_sync")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed runs per client")
    parser.add_argument("--tokens", type=int, default=2000, help="chunks in the long reply")
    parser.add_argument("--turns", type=int, default=200, help="one-call turns per run")
    args = parser.parse_args()

    server = Server()
    try:
        short = asyncio.run(measure_wire(server, 10, args.repeat))
        long = asyncio.run(measure_wire(server, args.tokens, max(3, args.repeat // 5)))
    finally:
        server.close()
    events = per_event(args.tokens, max(3, args.repeat // 5))
    per = {how: min(per_call(args.turns, how) for _ in range(3)) for how in LOOPS}
    run_us, stream_us, sync_us = per["run"], per["stream"], per["stream_sync"]

    ttft_gap_ms = short["agent"]["first_ms"] - short["sdk"]["first_ms"]
    ttft_min_gap_ms = short["agent"]["first_min_ms"] - short["sdk"]["first_min_ms"]
    per_token_us = (long["agent"]["total_ms"] - long["sdk"]["total_ms"]) * 1e3 / args.tokens
    rows = [
        ("first text, SDK alone, median", f"{short['sdk']['first_ms']:.2f} ms"),
        ("first text, Agent.stream, median", f"{short['agent']['first_ms']:.2f} ms"),
        ("  difference (target ≤ 1 ms)", f"{ttft_gap_ms:+.2f} ms"),
        ("  difference of the fastest runs", f"{ttft_min_gap_ms:+.2f} ms"),
        (f"{args.tokens} chunks, SDK alone", f"{long['sdk']['total_ms']:.1f} ms"),
        (f"{args.tokens} chunks, Agent.stream", f"{long['agent']['total_ms']:.1f} ms"),
        ("  difference per token", f"{per_token_us:+.1f} µs"),
        (f"{args.tokens} events, no wire", f"{events['stream_ms']:.1f} ms"),
        ("  same reply, arun()", f"{events['run_ms']:.1f} ms"),
        ("  event overhead per token (target ≤ 20 µs)", f"{events['per_event_us']:.1f} µs"),
        ("loop per call, run()", f"{run_us:.0f} µs"),
        ("loop per call, stream()", f"{stream_us:.0f} µs"),
        ("  ratio to run() (target ≤ 1.2)", f"{stream_us / run_us:.2f}"),
        ("loop per call, stream_sync()", f"{sync_us:.0f} µs"),
        ("  ratio to run()", f"{sync_us / run_us:.2f}"),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'measure':<{width}}  value")
    print("-" * (width + 14))
    for name, value in rows:
        print(f"{name:<{width}}  {value:>10}")
    print(
        json.dumps(
            {
                "bench": "streaming",
                "python": sys.version.split()[0],
                "repeat": args.repeat,
                "tokens": args.tokens,
                "turns": args.turns,
                "first_text_ms": {k: round(v["first_ms"], 3) for k, v in short.items()},
                "first_text_min_ms": {k: round(v["first_min_ms"], 3) for k, v in short.items()},
                "first_text_gap_ms": round(ttft_gap_ms, 3),
                "first_text_min_gap_ms": round(ttft_min_gap_ms, 3),
                "long_reply_ms": {k: round(v["total_ms"], 2) for k, v in long.items()},
                "wire_difference_per_token_us": round(per_token_us, 2),
                "event_overhead_per_token_us": round(events["per_event_us"], 2),
                "per_call_us": {k: round(v, 1) for k, v in per.items()},
                "stream_to_run_ratio": round(stream_us / run_us, 3),
                "stream_sync_to_run_ratio": round(sync_us / run_us, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
