"""Model backends behind one interface: `Model.respond(request) -> response`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._base import (
    CallDelta,
    Delta,
    DeltaSink,
    Model,
    ModelRequest,
    ModelResponse,
    ReplyFormat,
    TextDelta,
    ToolChoice,
)
from ._download import ModelDownloadError, ModelFileError
from ._scripted import ScriptedModel
from ._spec import resolve_model

if TYPE_CHECKING:
    from ._anthropic import AnthropicChat
    from ._local import LocalModel
    from ._openai import OpenAIChat

__all__ = [
    "AnthropicChat",
    "CallDelta",
    "Delta",
    "DeltaSink",
    "LocalModel",
    "Model",
    "ModelDownloadError",
    "ModelFileError",
    "ModelRequest",
    "ModelResponse",
    "OpenAIChat",
    "ReplyFormat",
    "ScriptedModel",
    "TextDelta",
    "ToolChoice",
    "resolve_model",
]


def __getattr__(name: str) -> object:
    # The openai SDK takes about a second to import; only pay it when used.
    if name == "OpenAIChat":
        from ._openai import OpenAIChat

        return OpenAIChat
    if name == "AnthropicChat":
        from ._anthropic import AnthropicChat

        return AnthropicChat
    if name == "LocalModel":
        from ._local import LocalModel

        return LocalModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
