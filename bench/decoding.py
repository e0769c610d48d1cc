"""Benchmark constrained decoding on the embedded model: speed, mask cost, compile time.

    .venv/bin/python bench/decoding.py [--repeat 3] [--tokens 96]

Rows, all on SmolLM2-135M-Instruct (Q4_1) in this process, greedy:

- ``free``: our decoding loop with no grammar (the baseline);
- ``code grammar``: the same prose reply under the code convention's grammar,
  which allows prose, so the text is the same and only the mask is added;
- ``tool calls``: a reply under the toolbox's call-or-answer grammar with
  ``tool_choice="required"`` (forced tokens are evaluated without sampling);
- ``…, every step``: the same two with the mask computed at every step
  (greedy decoding otherwise computes it only when the model's first choice
  is refused);
- ``llama.cpp free`` / ``llama.cpp GBNF``: llama-cpp-python's own
  ``create_completion``, unconstrained and with its JSON-Schema grammar for the
  same call, for reference.

Decode rates exclude evaluating the prompt. Then the mask time per token
(p50, p99) and the compile time of the call grammar for a 20-tool toolbox taken
from BFCL's simple_python functions, fresh each time. Goal: constrained decoding
at 85% or more of the free rate. Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

# `examples` ships with the checkout, not with the package: find it beside bench/.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _options import add_repeat

from examples.seed_tools import toolbox
from tooluse import Message
from tooluse.decoding import GrammarCompiler, GrammarTool, calls_grammar
from tooluse.eval.bfcl._single_turn import data_dir, load_tasks
from tooluse.models import LocalModel, ModelRequest
from tooluse.models._local import _engine
from tooluse.tools import Tool

PROSE_TASKS = [
    "Describe the sea in a few sentences.",
    "Explain what a tool-calling agent does.",
    "Tell me about the history of Paris.",
]
CALL_TASKS = [
    "What is the weather in Paris?",
    "Convert 100 USD to EUR.",
    "What is the capital of Japan?",
    "Compute 17 * 23.",
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ours(model: LocalModel, request: ModelRequest, *, free: bool) -> tuple[int, float, list[float]]:
    """Tokens decoded, seconds spent decoding them, mask times."""
    model.constrained = not free
    model.respond_sync(request)
    stats = model.last_stats
    tokens = stats.sampled_tokens + stats.forced_tokens
    return tokens, stats.seconds - stats.prefill_seconds, stats.mask_seconds


def llama_cpp_rate(
    model: LocalModel, request: ModelRequest, max_tokens: int, schema: dict[str, Any] | None
) -> tuple[int, float]:
    """llama-cpp-python's create_completion on the same prompt, with its GBNF grammar if given."""
    from llama_cpp import LlamaGrammar

    engine = _engine(str(model.path), model.n_ctx, model.threads)
    prompt = engine.template.render(request)
    grammar = None
    if schema is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    llm = engine.llm
    tokens = llm.tokenize(prompt.encode(), add_bos=True, special=True)
    # Evaluate the prompt first so the timed part is decoding alone.
    llm.reset()
    llm.eval(tokens)
    started = time.perf_counter()
    out = llm.create_completion(tokens, max_tokens=max_tokens, temperature=0.0, grammar=grammar)
    seconds = time.perf_counter() - started
    llm.reset()
    return int(out["usage"]["completion_tokens"]), seconds


def twenty_tools() -> list[Tool]:
    tools: dict[str, Tool] = {}
    for task in load_tasks("simple_python", data_dir()):
        for tool in task.setup().turns[0].tools:
            tools.setdefault(tool.name, tool)
        if len(tools) >= 20:
            break
    return list(tools.values())[:20]


def compile_seconds(compiler: GrammarCompiler, tools: list[Tool], repeat: int) -> list[float]:
    grammar_tools = [GrammarTool(t.name, t.parameters) for t in tools]
    times = []
    for _ in range(repeat):
        fresh = GrammarCompiler(compiler.tokenizer, cache_size=1)
        fresh.matcher(calls_grammar(grammar_tools))
        times.append(fresh.compile_times[-1])
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_repeat(parser)
    parser.add_argument("--tokens", type=int, default=96, help="output cap per reply")
    parser.add_argument("--gbnf-tokens", type=int, default=24, help="output cap under GBNF")
    args = parser.parse_args()

    model = LocalModel("smollm2-135m", max_output_tokens=args.tokens)
    # A vanishing temperature samples from the fully masked distribution: the
    # same choices as greedy, but the mask is computed at every step.
    masked = LocalModel("smollm2-135m", max_output_tokens=args.tokens, temperature=1e-6)
    compiler = model.compiler()  # the tokenizer is built once, outside the timings
    tools = list(toolbox)
    prose = [
        ModelRequest([Message("user", t)], (), "none", reply_format="code") for t in PROSE_TASKS
    ]
    calls = [ModelRequest([Message("user", t)], tools, "required") for t in CALL_TASKS]
    rows: dict[str, tuple[int, float]] = {}
    masks: list[float] = []
    every_step: list[float] = []

    def add(name: str, tokens: int, seconds: float) -> None:
        total_tokens, total_seconds = rows.get(name, (0, 0.0))
        rows[name] = (total_tokens + tokens, total_seconds + seconds)

    for request in prose + calls:  # warm up: the grammars compile, the caches fill
        ours(model, request, free=False)
    # (row, model, requests, free, where its mask times go)
    plan = [
        ("free", model, prose, True, []),
        ("code grammar", model, prose, False, masks),
        ("tool calls", model, calls, False, masks),
        ("code, every step", masked, prose, False, every_step),
        ("calls, every step", masked, calls, False, every_step),
    ]
    for _ in range(args.repeat):
        for name, runner, requests, free, sink in plan:
            for request in requests:
                tokens, seconds, mask = ours(runner, request, free=free)
                add(name, tokens, seconds)
                sink.extend(mask)
    for request in prose:
        add("llama.cpp free", *llama_cpp_rate(model, request, args.tokens, None))
    # llama.cpp's grammar sampler checks every vocabulary entry at every step;
    # one short call is enough to measure it.
    schema = calls_schema_for_gbnf(tools)
    add("llama.cpp GBNF", *llama_cpp_rate(model, calls[0], args.gbnf_tokens, schema))

    free_rate = rows["free"][0] / rows["free"][1]
    print(f"{'decoding':<18} {'tokens':>7} {'tok/s':>8} {'vs free':>8}")
    summary: dict[str, Any] = {"bench": "decoding", "model": model.name, "rates": {}}
    for name, (tokens, seconds) in rows.items():
        rate = tokens / seconds
        summary["rates"][name] = round(rate, 1)
        print(f"{name:<18} {tokens:>7} {rate:>8.1f} {rate / free_rate:>7.0%}")
    p50, p99 = percentile(every_step, 0.5) * 1e6, percentile(every_step, 0.99) * 1e6
    print(
        f"\nmask per token (computed at every step): p50 {p50:.0f} µs, p99 {p99:.0f} µs "
        f"over {len(every_step)} tokens; greedy decoding computed {len(masks)} masks "
        f"for {rows['code grammar'][0] + rows['tool calls'][0]} tokens"
    )
    twenty = twenty_tools()
    compiles = compile_seconds(compiler, twenty, 5)
    one = compile_seconds(compiler, twenty[:1], 5)
    print(
        f"compile, {len(twenty)}-tool toolbox: p50 {statistics.median(compiles) * 1e3:.1f} ms "
        f"(max {max(compiles) * 1e3:.1f}); one tool: {statistics.median(one) * 1e3:.1f} ms"
    )
    code_share = summary["rates"]["code grammar"] / summary["rates"]["free"]
    calls_share = summary["rates"]["tool calls"] / summary["rates"]["free"]
    print(
        f"goal: constrained ≥ 85% of free: code grammar {code_share:.0%}, "
        f"tool calls {calls_share:.0%}"
    )
    summary |= {
        "mask_us_p50": round(p50, 1),
        "mask_us_p99": round(p99, 1),
        "compile_ms_20_tools_p50": round(statistics.median(compiles) * 1e3, 2),
        "compile_ms_1_tool_p50": round(statistics.median(one) * 1e3, 2),
        "constrained_share_code": round(code_share, 3),
        "constrained_share_calls": round(calls_share, 3),
    }
    print(json.dumps(summary))


def calls_schema_for_gbnf(tools: list[Tool]) -> dict[str, Any]:
    """The call JSON for llama.cpp's converter: the same shapes as our grammar's body."""
    branches = [
        {
            "type": "object",
            "properties": {"name": {"const": t.name}, "arguments": t.parameters},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for t in tools
    ]
    return {"anyOf": branches}


if __name__ == "__main__":
    main()
