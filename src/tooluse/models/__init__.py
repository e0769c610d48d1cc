"""Model backends behind one interface: `Model.respond(request) -> response`."""

from ._base import Model, ModelRequest, ModelResponse, ToolChoice
from ._scripted import ScriptedModel

__all__ = ["Model", "ModelRequest", "ModelResponse", "ScriptedModel", "ToolChoice"]
