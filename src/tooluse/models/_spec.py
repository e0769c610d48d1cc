"""Model specs as written on the command line: ``scripted:FILE``, ``openai:MODEL`` …"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from .._exceptions import UsageError
from ._base import Model
from ._download import ModelFileError
from ._scripted import ScriptedModel

if TYPE_CHECKING:
    from ._registry import Registry

__all__ = ["DEFAULT_LOCAL", "default_local", "resolve_model"]

#: What plain ``local`` runs: the first of these whose file is here (setup pulls the
#: first; the embedded SmolLM2 ships with the ``local`` extra, so there is always one).
DEFAULT_LOCAL = ("qwen2.5-coder-1.5b", "smollm2-135m")

SPECS = (
    "local (the best installed: qwen2.5-coder-1.5b, else the embedded SmolLM2), "
    "local:NAME (see tooluse models list), local:FILE.gguf, "
    "local-unconstrained[:NAME|:FILE.gguf], "
    "scripted:FILE.jsonl, openai:MODEL (with --base-url for any OpenAI-compatible server), "
    "anthropic:MODEL"
)


def default_local(registry: Registry) -> str:
    """The name plain ``local`` runs, warning once when it is not the best one."""
    for name in DEFAULT_LOCAL:
        if registry.find(name) is not None:
            if name != DEFAULT_LOCAL[0]:
                warnings.warn(
                    f"{DEFAULT_LOCAL[0]} is not installed, so `local` runs {name}; "
                    f"`tooluse models pull {DEFAULT_LOCAL[0]}` installs it",
                    stacklevel=3,
                )
            return name
    raise ModelFileError(
        f"no local model is installed; run `tooluse models pull {DEFAULT_LOCAL[0]}`"
    )


def resolve_model(spec: str, *, base_url: str | None = None, api_key: str | None = None) -> Model:
    """Build the model a spec names, or raise `UsageError` saying what is accepted."""
    kind, _, rest = spec.partition(":")
    if kind in ("local", "local-unconstrained"):
        try:
            from ._local import LocalModel
        except ImportError as exc:  # numpy, which the local extra brings with llama.cpp
            raise UsageError(
                f"--model {kind} needs the local extra ({exc.name} is missing): "
                "pip install 'tooluse[local]'"
            ) from exc
        from ._registry import Registry

        registry = Registry()
        if rest and rest not in registry and not Path(rest).is_file():
            names = ", ".join(registry.models)
            raise UsageError(f"no such model file: {rest} (nor a model name: {names})")
        if not rest:
            rest = default_local(registry)
        if rest in registry:
            entry = registry[rest]
            return LocalModel(
                registry.locate(rest),
                constrained=kind == "local",
                default_system=entry.default_system,
                parallel_system=entry.parallel_system,
            )
        return LocalModel(rest, constrained=kind == "local")
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
