"""Grammar compilers for the decoding tests: the embedded model's, and a tiny synthetic one."""

from __future__ import annotations

from typing import ClassVar

import pytest

from tooluse.decoding import GrammarCompiler
from tooluse.models import LocalModel


@pytest.fixture(scope="session")
def compiler() -> GrammarCompiler:
    return LocalModel("smollm2-135m").compiler()


class TaggedVocabulary:
    """One token per byte, plus the call tags as special tokens (as Qwen2.5's vocabulary has them).

    A tokenizer in the shape llguidance's `TokenizerWrapper` reads: special
    tokens are spelled with a leading 0xff byte, and tokenizing text turns
    each tag into its one token, the way llama.cpp does for Qwen.
    """

    TAGS: ClassVar[dict[str, int]] = {"<tool_call>": 256, "</tool_call>": 257}
    eos_token_id = 258
    bos_token_id = None
    tokens: ClassVar[list[bytes]] = [bytes([b]) for b in range(256)] + [
        b"\xff<tool_call>",
        b"\xff</tool_call>",
        b"\xff<|end|>",
    ]
    special_token_ids: ClassVar[list[int]] = [256, 257, 258]

    def __call__(self, text: bytes) -> list[int]:
        decoded = text.decode("utf-8")
        out: list[int] = []
        i = 0
        while i < len(decoded):
            tag = next((t for t in self.TAGS if decoded.startswith(t, i)), None)
            if tag is not None:
                out.append(self.TAGS[tag])
                i += len(tag)
            else:
                out.extend(decoded[i].encode("utf-8"))
                i += 1
        return out


@pytest.fixture(scope="session")
def tagged_compiler() -> GrammarCompiler:
    from llguidance import LLTokenizer, TokenizerWrapper

    return GrammarCompiler(LLTokenizer(TokenizerWrapper(TaggedVocabulary())))
