"""Offline token counts: the o200k encoding's own counts, got without building its
tables in Python."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tooluse._tokens import count_tokens

TEXTS = [
    "",
    "2",
    'trivial{"i": 5}',
    "hello world " * 50,
    "<|endoftext|> and <|fim_prefix|> count as ordinary text",
    "héllo wörld 日本語 🎉 " * 20,
    " " * 300,
    "\n\n\t x\r\n",
    "x\ud800y",  # a lone surrogate, as a tool may return
    "\udfff" * 3,
    "long " * 30_000,  # past the length counted in one piece
    "é" * 250_001,
]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_counts_are_the_encodings_own(text: str) -> None:
    # Imported here: the package decodes every vocabulary it ships on import (about a
    # second), which each test worker would otherwise pay while collecting.
    from bpe_openai import get_encoding

    encoding = get_encoding("o200k_base")
    # The encoder's own length for text over its one-call limit is counted a piece at a time.
    pieces = [text[i : i + 100_000] for i in range(0, len(text), 100_000)]
    assert count_tokens(text) == sum(len(encoding.encode_ordinary(p)) for p in pieces)


def test_counting_builds_no_second_vocabulary_in_python() -> None:
    # Importing the tokenizer package reads its vocabularies once. Its tiktoken-shaped
    # encoding object then builds tables of its own from them (tens of MB, seconds)
    # before it counts anything; the counter needs none of that.
    code = textwrap.dedent(
        """
        import tracemalloc
        import bpe_openai
        from tooluse._tokens import count_tokens
        tracemalloc.start()
        assert count_tokens("hello world") == 2
        print(tracemalloc.get_traced_memory()[1])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    peak = int(done.stdout.strip())
    assert peak < 5_000_000, f"{peak:,} bytes of Python objects to count two tokens"


def test_counting_decodes_none_of_the_tokenizer_packages_vocabularies() -> None:
    # The package's own __init__ decodes every vocabulary it ships into Python dicts
    # (about a second in each process that counts); the Rust counter needs none of them.
    # Imported afterwards, the package works as ever, on the same extension.
    code = textwrap.dedent(
        """
        import sys
        from tooluse._tokens import count_tokens
        assert count_tokens("hello world") == 2
        print(sorted(m for m in sys.modules if m.startswith("bpe_openai")))
        from bpe_openai import get_encoding
        assert len(get_encoding("o200k_base").encode_ordinary("hello world")) == 2
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert done.stdout.strip() == "['bpe_openai._bindings']"
