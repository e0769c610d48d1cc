"""Compiling grammars with llguidance and masking logits with them.

`GrammarCompiler` owns one tokenizer and a cache of compiled matchers keyed by
grammar text (which is built from normalized schemas, so the same toolbox
compiles once per process). `TokenMask` is the per-request state: it computes
the allowed-token mask before each step and consumes each sampled token.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._exceptions import UsageError
from ._grammars import Grammar

if TYPE_CHECKING:
    import llguidance
    import numpy as np
    import numpy.typing as npt

__all__ = ["GrammarCompiler", "GrammarError", "TokenMask"]

logger = logging.getLogger("tooluse.decoding")


class GrammarError(UsageError, ValueError):
    """llguidance refused a grammar; the message is its own."""


class GrammarCompiler:
    """Compiles grammars for one tokenizer and keeps the last `cache_size` of them."""

    def __init__(self, tokenizer: llguidance.LLTokenizer, *, cache_size: int = 64) -> None:
        self.tokenizer = tokenizer
        self.vocab_size = tokenizer.vocab_size
        self._cache: OrderedDict[str, llguidance.LLMatcher] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        #: Seconds each fresh compile took, newest last (for benchmarks).
        self.compile_times: list[float] = []

    def special_token(self, text: str) -> int | None:
        """The id of the one special token that spells `text`, if the vocabulary has one.

        Such a token is all a model ever emits for that text, so a grammar
        must name it by id: spelled out, the text would be refused.
        """
        tokens = self.tokenizer.tokenize_str(text)
        if len(tokens) == 1 and self.tokenizer.is_special_token(tokens[0]):
            return int(tokens[0])
        return None

    def mask(self, grammar: Grammar) -> TokenMask:
        """A fresh mask state for one request decoding under `grammar`."""
        return TokenMask(self.matcher(grammar), self.vocab_size)

    def matcher(self, grammar: Grammar) -> llguidance.LLMatcher:
        """A fresh matcher for `grammar`, compiled once and copied after that."""
        import llguidance

        with self._lock:
            cached = self._cache.get(grammar.lark)
            if cached is not None:
                self._cache.move_to_end(grammar.lark)
                return cached.deep_copy()
        started = time.perf_counter()
        text = llguidance.LLMatcher.grammar_from_lark(grammar.lark)
        matcher = llguidance.LLMatcher(self.tokenizer, text, log_level=0)
        if matcher.is_error():
            raise GrammarError(matcher.get_error())
        self.compile_times.append(time.perf_counter() - started)
        for warning in matcher.get_grammar_warnings():
            logger.warning("grammar warning: %s", warning)
        for note in grammar.unenforced:
            logger.warning("not enforced by the grammar (checked after decoding): %s", note)
        with self._lock:
            self._cache[grammar.lark] = matcher
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return matcher.deep_copy()


class TokenMask:
    """One request's grammar state: which tokens may come next, and what came."""

    def __init__(self, matcher: llguidance.LLMatcher, vocab_size: int) -> None:
        # numpy comes with the local extra, like llguidance: the package itself,
        # and the grammar builders, import without it.
        import numpy as np

        self.matcher = matcher
        self.vocab_size = vocab_size
        self._bits = np.zeros((vocab_size + 31) // 32, dtype=np.int32)
        #: Seconds spent computing each mask, for benchmarks.
        self.mask_times: list[float] = []

    def forced(self) -> list[int]:
        """Tokens the grammar forces next (they need no sampling)."""
        return list(self.matcher.compute_ff_tokens())

    def allowed(self, n_logits: int) -> npt.NDArray[np.bool_]:
        """A boolean array over the `n_logits` logits: True where a token may follow."""
        import numpy as np

        started = time.perf_counter()
        self.matcher.unsafe_compute_mask_ptr(self._bits.ctypes.data, self._bits.nbytes)
        self.mask_times.append(time.perf_counter() - started)
        bits = np.unpackbits(self._bits.view(np.uint8), bitorder="little")
        allowed = np.zeros(n_logits, dtype=np.bool_)
        n = min(n_logits, bits.size)
        allowed[:n] = bits[:n].astype(np.bool_)
        return allowed

    def accepts(self, token: int, *, ends: bool = False) -> bool:
        """Whether `token` may come next; if so (and it does not end the text) it is consumed.

        `ends` says the token is an end-of-sequence token, allowed exactly when
        the grammar is satisfied. A refused token leaves the state unchanged.
        """
        if ends:
            return bool(self.matcher.is_accepting())
        return self.matcher.try_consume_tokens([token]) == 1

    def consume(self, tokens: Sequence[int]) -> bool:
        """Advance over `tokens`; False means the grammar rejected one."""
        return bool(self.matcher.consume_tokens(list(tokens)))

    @property
    def done(self) -> bool:
        """The grammar accepts no more tokens (beyond end of sequence)."""
        return bool(self.matcher.is_stopped())

    @property
    def accepting(self) -> bool:
        return bool(self.matcher.is_accepting())

    @property
    def error(self) -> str:
        return str(self.matcher.get_error())
