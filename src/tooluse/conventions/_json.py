"""The JSON convention: native function calling (``tool_calls``)."""

from __future__ import annotations

from ..models import ModelResponse
from ..tools import Toolbox
from ..tools._output import output_of
from ._base import Answer, Calls, Convention, Interpretation, Prepared, Retry

__all__ = ["JsonConvention"]

EMPTY_REPLY = "Your last reply was empty. Call a tool, or give your final answer as text."
#: After a reply whose only calls were unusable: cut off, malformed, or followed
#: by a result the model wrote itself.
UNUSABLE_CALL = (
    "Write the call again, complete, and stop after it: its result comes back in the "
    "next message. Or give your final answer as text."
)

#: With an output type: the end of the system prompt, and the note for a reply in text.
OUTPUT_PROMPT = (
    "When you know the answer, call {name} with it: a reply in plain text does not end the task."
)
OUTPUT_NOTE = (
    "Your reply was plain text, but this task ends only with a call to {name}: call it "
    "with your answer as its arguments."
)


class JsonConvention(Convention):
    """Tools go in the API's ``tools`` field; calls come back as ``tool_calls``."""

    name = "json"
    native_tools = True

    def prepare(self, tools: Toolbox, system_prompt: str | None) -> Prepared:
        output = output_of(tools)
        if output is None:
            return Prepared(system_prompt=system_prompt, tools=list(tools))
        # A call is required: a model decoding under a grammar cannot end in text.
        finish = OUTPUT_PROMPT.format(name=output.name)
        return Prepared(
            system_prompt=f"{system_prompt}\n\n{finish}" if system_prompt else finish,
            tools=list(tools),
            tool_choice="required",
            output_note=OUTPUT_NOTE.format(name=output.name),
        )

    def interpret(self, response: ModelResponse) -> Interpretation:
        problems = [f"Part of your last reply was unusable: {p}." for p in response.problems]
        if response.tool_calls:
            return Calls(response.tool_calls, notes=problems)
        if problems:
            return Retry(" ".join([*problems, UNUSABLE_CALL]))
        if response.content is None or not response.content.strip():
            return Retry(EMPTY_REPLY)
        return Answer(response.content)
