"""Model specs as written on the command line: ``scripted:FILE``, ``openai:MODEL`` …"""

from __future__ import annotations

from pathlib import Path

from .._exceptions import UsageError
from ._base import Model
from ._scripted import ScriptedModel

__all__ = ["resolve_model"]

SPECS = (
    "local (the embedded SmolLM2), local:NAME (see tooluse models list), local:FILE.gguf, "
    "local-unconstrained[:NAME|:FILE.gguf], "
    "scripted:FILE.jsonl, openai:MODEL (with --base-url for any OpenAI-compatible server), "
    "anthropic:MODEL"
)


def resolve_model(spec: str, *, base_url: str | None = None, api_key: str | None = None) -> Model:
    """Build the model a spec names, or raise `UsageError` saying what is accepted."""
    kind, _, rest = spec.partition(":")
    if kind in ("local", "local-unconstrained"):
        from ._local import LocalModel
        from ._registry import Registry

        registry = Registry()
        if rest and rest not in registry and not Path(rest).is_file():
            names = ", ".join(registry.models)
            raise UsageError(f"no such model file: {rest} (nor a model name: {names})")
        path = str(registry.locate(rest)) if rest in registry else rest or None
        return LocalModel(path, constrained=kind == "local")
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
