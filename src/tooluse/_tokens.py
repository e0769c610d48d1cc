"""Offline token counting with the o200k_base encoding (no download needed)."""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

__all__ = ["count_tokens"]

_CHUNK = 100_000  # the encoder refuses very long inputs in one call
_BINDINGS = "bpe_openai._bindings"


@functools.cache
def _counter() -> Callable[[str], int]:
    """The Rust tokenizer's own count: no token list is made, and no vocabulary is
    decoded into Python objects first (the tiktoken-shaped wrapper takes seconds and
    tens of MB for that)."""
    bindings = _bindings()
    if bindings is None:  # a build without the bindings: the wrapper counts
        from bpe_openai import get_encoding

        encode = get_encoding("o200k_base").encode_ordinary
        return lambda text: len(encode(text))
    count: Callable[[str], int] = bindings.tokenizer_for_encoding("o200k_base").count
    return count


def _bindings() -> ModuleType | None:
    """bpe_openai's Rust extension, loaded without the package around it.

    Importing ``bpe_openai._bindings`` the usual way runs the package's
    ``__init__`` first, which decodes every vocabulary it knows (cl100k, o200k,
    voyage3) into Python dicts: about a second of CPU in each process that counts
    a token, none of it used here. The extension is registered under its own name,
    so that an import of the package afterwards finds it there and uses it.
    """
    loaded = sys.modules.get(_BINDINGS)
    if loaded is not None:
        return loaded
    package = importlib.util.find_spec("bpe_openai")  # found, not run
    for location in (package and package.submodule_search_locations) or ():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(location) / f"_bindings{suffix}"
            if not path.is_file():
                continue
            spec = importlib.util.spec_from_file_location(_BINDINGS, path)
            if spec is None or spec.loader is None:
                return None
            module = importlib.util.module_from_spec(spec)
            sys.modules[_BINDINGS] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[_BINDINGS]
                raise
            return module
    return None


def _sanitized(text: str) -> str:
    # What the encoder itself does with text UTF-8 cannot hold (lone surrogates).
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def count_tokens(text: str) -> int:
    """Tokens of `text` under o200k_base.

    Special-token markers such as ``<|endoftext|>`` count as ordinary text: a
    tool result may contain anything.
    """
    if not text:
        return 0
    count = _counter()
    if len(text) > _CHUNK:
        return sum(count_tokens(text[i : i + _CHUNK]) for i in range(0, len(text), _CHUNK))
    try:
        return count(text)
    except UnicodeEncodeError:
        return count(_sanitized(text))
