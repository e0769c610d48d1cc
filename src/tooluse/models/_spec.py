"""Model specs as written on the command line: ``scripted:FILE``, ``openai:MODEL`` …"""

from __future__ import annotations

from pathlib import Path

from .._exceptions import UsageError
from ._base import Model
from ._registry import DEFAULT_LOCAL, DEFAULT_LOCAL_TEXT, default_local
from ._scripted import ScriptedModel

__all__ = ["DEFAULT_LOCAL", "DEFAULT_LOCAL_TEXT", "default_local", "resolve_model"]

SPECS = (
    f"local ({DEFAULT_LOCAL_TEXT}), "
    "local:NAME (see tooluse models list), local:FILE.gguf, "
    "local-unconstrained[:NAME|:FILE.gguf], "
    "scripted:FILE.jsonl, openai:MODEL (with --base-url for any OpenAI-compatible server), "
    "anthropic:MODEL"
)


def resolve_model(spec: str, *, base_url: str | None = None, api_key: str | None = None) -> Model:
    """The model a spec names, as ``--model`` takes it on the command line.

    ``resolve_model("local")`` is ``LocalModel()``: the best model installed
    (qwen2.5-coder-1.5b once pulled, else the embedded SmolLM2-135M, with a
    warning). The specs:

    - ``local``, ``local:NAME`` (a name from ``tooluse models list``) or
      ``local:FILE.gguf``: llama.cpp in this process, tool calls constrained by
      their schemas; ``local-unconstrained[...]`` the same without the grammar;
    - ``scripted:FILE.jsonl``: replies read from a file, one per model request;
    - ``openai:MODEL``: the OpenAI chat API, or any server speaking it at
      `base_url`;
    - ``anthropic:MODEL``: the Anthropic messages API.

    Args:
        spec: one of the forms above.
        base_url: for ``openai:`` and ``anthropic:``, the server to talk to.
        api_key: for ``openai:`` and ``anthropic:``; None reads the vendor's
            usual environment variable.

    Raises:
        UsageError: the spec is not one of these forms, or names no model or file
            that is here.
    """
    kind, _, rest = spec.partition(":")
    if kind in ("local", "local-unconstrained"):
        try:
            from ._local import LocalModel
        except ImportError as exc:  # numpy, which the local extra brings with llama.cpp
            raise UsageError(
                f"--model {kind} needs the local extra ({exc.name} is missing): "
                "pip install 'tooluse[local]'"
            ) from exc
        return LocalModel(rest or None, constrained=kind == "local")
    if kind == "scripted":
        if not rest:
            raise UsageError("scripted needs a file: --model scripted:FILE.jsonl")
        if not Path(rest).is_file():
            raise UsageError(f"no such script file: {rest}")
        return ScriptedModel.from_file(rest)
    if kind == "openai":
        if not rest:
            raise UsageError("openai needs a model name: --model openai:gpt-4o-mini")
        from ._openai import OpenAIChat

        return OpenAIChat(rest, base_url=base_url, api_key=api_key)
    if kind == "anthropic":
        if not rest:
            raise UsageError("anthropic needs a model name: --model anthropic:claude-sonnet-4-5")
        from ._anthropic import AnthropicChat

        return AnthropicChat(rest, base_url=base_url, api_key=api_key)
    raise UsageError(f"unknown model spec {spec!r}; use one of: {SPECS}")
