"""A local model's reply in a run with an output type is held to a valid final_result call."""

from __future__ import annotations

import json

from pydantic import BaseModel

from tooluse import Agent, tool
from tooluse.decoding import GrammarCompiler
from tooluse.models import LocalModel, ScriptedModel

from .test_grammars import accepts, call


class Weather(BaseModel):
    city: str
    temp: float
    sky: str


@tool
def get_temp(city: str) -> float:
    """The temperature of a city.

    Args:
        city: the city's name
    """
    return 21.5


def test_the_grammar_of_a_run_with_an_output_type_holds_the_final_result_to_its_schema(
    compiler: GrammarCompiler,
) -> None:
    # The request the run really makes, taken from a scripted model, decoded under the
    # grammar the local backend builds for it.
    scripted = ScriptedModel(
        [
            {
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {
                            "name": "final_result",
                            "arguments": json.dumps({"city": "Oslo", "temp": 4, "sky": "grey"}),
                        },
                    }
                ]
            }
        ]
    )
    assert Agent(scripted, [get_temp], output_type=Weather).run("Weather in Oslo?").ok
    grammar = LocalModel("smollm2-135m").grammar_for(scripted.requests[0])
    assert grammar is not None
    valid = call("final_result", '{"city": "Oslo", "temp": 4.5, "sky": "grey"}')
    assert accepts(compiler, grammar, valid)
    assert accepts(compiler, grammar, call("get_temp", '{"city": "Oslo"}'))
    # A field missing, a field of the wrong type, a field the type does not have.
    assert not accepts(compiler, grammar, call("final_result", '{"city": "Oslo", "temp": 4.5}'))
    wrong = '{"city": "Oslo", "temp": "cold", "sky": "grey"}'
    assert not accepts(compiler, grammar, call("final_result", wrong))
    extra = '{"city": "Oslo", "temp": 4.5, "sky": "grey", "wind": 3}'
    assert not accepts(compiler, grammar, call("final_result", extra))
    # And no way to end the run in plain text.
    assert not accepts(compiler, grammar, "It is 4.5 degrees and grey in Oslo.")
