"""Typed output: a run with an output type ends only with a value that validates.

Every convention is run end to end with a scripted model and real tools (the code
convention in the real sandbox): the value travels as a call of the output tool
(``final_result``, or ``final(result)`` in a script), is checked by the dispatcher,
and is refused with the validator's own words when it does not fit.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, field_validator
from typing_extensions import TypedDict

from tooluse import (
    Agent,
    Approval,
    CallRecord,
    DoneEvent,
    Message,
    RejectedCall,
    RunResult,
    UsageError,
    tool,
)
from tooluse.conventions import AutoConvention, Convention, TextConvention, get_convention
from tooluse.models import ScriptedModel

DATA = Path(__file__).resolve().parents[1] / "data"


class Weather(BaseModel):
    city: str
    temp: float

    @field_validator("temp")
    @classmethod
    def plausible(cls, value: float) -> float:
        if value > 60:
            raise ValueError("no city is that hot")
        return value


@tool
def get_temp(city: str) -> float:
    """The temperature of a city, in degrees Celsius.

    Args:
        city: the city's name
    """
    return {"Paris": 21.5, "Oslo": 4.0}[city]


def json_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


#: Per convention: a reply that looks the temperature up, and one that hands over a
#: Weather with the temperature given (a number, or an expression of the script or plan).
def lookup(convention: str) -> dict[str, Any] | str:
    return {
        "json": json_call("get_temp", {"city": "Paris"}, "c1"),
        "text": '[get_temp(city="Paris")]',
        "react": 'Action: get_temp[{"city": "Paris"}]',
        "code": "```python\nprint(get_temp(city='Paris'))\n```",
        "plan": '```plan\nt = get_temp(city="Paris")\n```',
    }[convention]


def hand_over(convention: str, temp: float, n: int = 2) -> dict[str, Any] | str:
    return {
        "json": json_call("final_result", {"city": "Paris", "temp": temp}, f"c{n}"),
        "text": f'[final_result(city="Paris", temp={temp})]',
        "react": f'Action: final_result[{{"city": "Paris", "temp": {temp}}}]',
        "code": f"```python\nfinal({{'city': 'Paris', 'temp': {temp}}})\n```",
        "plan": f'```plan\ndone = final_result(city="Paris", temp={temp})\n```',
    }[convention]


def convention_of(name: str) -> Convention:
    return TextConvention("react") if name == "react" else get_convention(name)


CONVENTIONS = ["json", "text", "react", "code", "plan"]


@pytest.fixture
def agents() -> Iterator[list[Agent]]:
    made: list[Agent] = []
    yield made
    for agent in made:
        agent.close()


def agent_for(
    agents: list[Agent],
    convention: str,
    replies: Sequence[dict[str, Any] | str],
    **options: Any,
) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(list(replies))
    agent = Agent(model, [get_temp], convention=convention_of(convention), **options)
    agents.append(agent)
    return agent, model


def assert_recorded(result: RunResult) -> None:
    """Every tool message answers one call the runtime recorded, with that call's content."""
    records: dict[str, CallRecord | RejectedCall] = {o.id: o for o in result.calls}
    records.update((o.id, o) for o in result.rejected)
    for message in result.messages:
        if message.role == "tool" and message.name not in ("python", "plan"):
            assert message.tool_call_id in records
            assert message.content == records[message.tool_call_id].content


def seen(result: RunResult) -> str:
    """Everything the model was shown after the task."""
    return "\n".join(m.content or "" for m in result.messages[2:] if m.role != "assistant")


# --- each convention ends with the typed value --------------------------------------------


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_a_valid_result_ends_the_run_with_the_typed_value(
    agents: list[Agent], convention: str
) -> None:
    agent, model = agent_for(
        agents, convention, [lookup(convention), hand_over(convention, 21.5)], output_type=Weather
    )
    result = agent.run("What is the weather in Paris?")
    assert result.status == "completed", result.error
    assert result.output == Weather(city="Paris", temp=21.5)
    assert isinstance(result.output, Weather)
    assert json.loads(result.answer or "") == {"city": "Paris", "temp": 21.5}
    assert result.rounds == 2
    # The lookup ran, and so did the output tool: both are calls the runtime made.
    assert [c.name for c in result.calls] == [
        "get_temp",
        "final" if convention == "code" else "final_result",
    ]
    assert_recorded(result)
    # The model was told how this run ends, in its convention's own terms.
    prompt = model.requests[0].messages[0].content or ""
    assert ("final(result)" if convention == "code" else "final_result") in prompt
    if convention == "code":  # the stub module shows the typed signature
        assert "def final(result: Weather) -> str:" in prompt
    assert "does not end the task" in prompt


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_an_invalid_result_is_refused_with_the_validators_words_then_corrected(
    agents: list[Agent], convention: str
) -> None:
    replies = [hand_over(convention, 99.0, 1), hand_over(convention, 21.5, 2)]
    agent, _ = agent_for(agents, convention, replies, output_type=Weather)
    result = agent.run("What is the weather in Paris?")
    assert result.status == "completed", result.error
    assert result.output == Weather(city="Paris", temp=21.5)
    assert result.rounds == 2
    # The first value did not validate: the model saw why, and nothing ended the run.
    assert "no city is that hot" in seen(result)
    refused = [o for o in [*result.rejected, *result.calls] if not isinstance(o, CallRecord)]
    if convention != "code":  # a script's refused call is a ToolError inside the script
        assert [r.name for r in refused] == ["final_result"]
        assert "no city is that hot" in refused[0].error
    assert_recorded(result)


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_a_reply_in_text_is_told_to_hand_the_result_over(
    agents: list[Agent], convention: str
) -> None:
    replies = [
        "Final Answer: 21.5 degrees" if convention == "react" else "It is 21.5 degrees.",
        hand_over(convention, 21.5),
    ]
    agent, _ = agent_for(agents, convention, replies, output_type=Weather)
    result = agent.run("What is the weather in Paris?")
    assert result.status == "completed", result.error
    assert result.output == Weather(city="Paris", temp=21.5)
    # The text reply did not end the run; it cost a round, and the model was told how to end.
    assert result.rounds == 2
    note = result.messages[3]
    assert note.role == "user"
    assert "ends only" in (note.content or "")
    assert ("final" if convention == "code" else "final_result") in (note.content or "")


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_without_a_valid_result_the_run_stops_at_max_rounds(
    agents: list[Agent], convention: str
) -> None:
    replies = ["It is warm.", hand_over(convention, 99.0, 2), "Still warm."]
    agent, _ = agent_for(agents, convention, replies, output_type=Weather, max_rounds=3)
    result = agent.run("What is the weather in Paris?")
    assert result.status == "max_rounds"
    assert result.output is None
    assert result.answer is None
    assert result.rounds == 3
    assert result.error is not None
    assert "no final result after 3 rounds" in result.error
    assert "Weather" in result.error


def test_auto_ends_with_the_output_of_the_convention_it_chose(agents: list[Agent]) -> None:
    def respond(messages: Sequence[Message]) -> dict[str, Any] | str:
        prompt = messages[0].content or ""
        if "final(result)" in prompt:
            return hand_over("code", 4.0)
        if "```plan" in prompt:
            return hand_over("plan", 4.0)
        return hand_over("json", 4.0)

    model = ScriptedModel(respond)
    agent = Agent(model, [get_temp], convention=AutoConvention(), output_type=Weather)
    agents.append(agent)
    result = agent.run("What is the weather in Paris?")
    assert result.status == "completed", result.error
    assert result.convention in ("json", "code", "plan")
    assert result.output == Weather(city="Paris", temp=4.0)


# --- the types an output may have ------------------------------------------------------


@dataclasses.dataclass
class Reading:
    city: str
    temp: float


class ReadingDict(TypedDict):
    city: str
    temp: float


@pytest.mark.parametrize(
    ("output_type", "arguments", "expected"),
    [
        (Reading, {"city": "Oslo", "temp": 4}, Reading("Oslo", 4.0)),
        (ReadingDict, {"city": "Oslo", "temp": 4.0}, {"city": "Oslo", "temp": 4.0}),
        (int, {"result": 4}, 4),
        (Literal["warm", "cold"], {"result": "cold"}, "cold"),
        (list[float], {"result": [4, 21.5]}, [4.0, 21.5]),
    ],
)
def test_dataclasses_typed_dicts_and_plain_types_are_outputs(
    agents: list[Agent], output_type: Any, arguments: dict[str, Any], expected: Any
) -> None:
    agent, model = agent_for(
        agents, "json", [json_call("final_result", arguments, "c1")], output_type=output_type
    )
    result = agent.run("How warm is Oslo?")
    assert result.status == "completed", result.error
    assert result.output == expected
    assert type(result.output) is type(expected)
    # An object type's fields are the tool's parameters; any other type is "result".
    final = next(t for t in model.requests[0].tools if t.name == "final_result")
    assert set(final.parameters["properties"]) == set(arguments)


def test_a_value_outside_a_literal_is_refused_and_named(agents: list[Agent]) -> None:
    replies = [
        json_call("final_result", {"result": "tepid"}, "c1"),
        json_call("final_result", {"result": "warm"}, "c2"),
    ]
    agent, _ = agent_for(agents, "json", replies, output_type=Literal["warm", "cold"])
    result = agent.run("Is Paris warm?")
    assert result.output == "warm"
    assert [r.name for r in result.rejected] == ["final_result"]
    assert "tepid" in result.rejected[0].error


def test_a_runs_output_type_overrides_the_agents(agents: list[Agent]) -> None:
    replies = [
        json_call("final_result", {"result": 4}, "c1"),
        json_call("final_result", {"result": "four"}, "c2"),
        "Four degrees.",
    ]
    agent, model = agent_for(agents, "json", replies, output_type=int)
    assert agent.run("How warm is Oslo?").output == 4
    assert agent.run("How warm is Oslo, in words?", output_type=str).output == "four"
    # Without an output type anywhere, a text reply is the answer, as ever.
    plain, plain_model = agent_for(agents, "json", ["Four degrees."])
    answered = plain.run("How warm is Oslo?")
    assert (answered.status, answered.answer, answered.output) == (
        "completed",
        "Four degrees.",
        None,
    )
    assert all(t.name != "final_result" for t in plain_model.requests[0].tools)
    assert model.requests[1].tools[-1].parameters["properties"]["result"]["type"] == "string"


def test_streamed_runs_end_with_the_typed_value(agents: list[Agent]) -> None:
    agent, _ = agent_for(agents, "json", [json_call("final_result", {"result": 4}, "c1")])
    events = list(agent.stream_sync("How warm is Oslo?", output_type=int))
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.result.output == 4


def test_an_output_type_pydantic_cannot_read_is_refused_at_once() -> None:
    with pytest.raises(UsageError, match="output type"):
        Agent(ScriptedModel([]), [get_temp], output_type=object())


def test_a_tool_named_like_the_output_tool_is_refused(agents: list[Agent]) -> None:
    @tool
    def final_result(text: str) -> str:
        """Echo."""
        return text

    agent = Agent(ScriptedModel(["x"]), [final_result], output_type=int)
    agents.append(agent)
    with pytest.raises(UsageError, match="final_result"):
        agent.run("anything")


# --- the written form -------------------------------------------------------------------


def test_the_written_form_keeps_the_output_as_json_and_reads_it_back_typed(
    agents: list[Agent],
) -> None:
    agent, _ = agent_for(agents, "json", [hand_over("json", 21.5, 1)], output_type=Weather)
    result = agent.run("What is the weather in Paris?")
    written = json.loads(json.dumps(result.to_dict()))
    assert written["output"] == {"city": "Paris", "temp": 21.5}
    assert RunResult.from_dict(written, output_type=Weather).output == result.output
    # Without the type, the JSON itself.
    assert RunResult.from_dict(written).output == {"city": "Paris", "temp": 21.5}
    with pytest.raises(UsageError, match="cannot be read as"):
        RunResult.from_dict(written, output_type=int)


def test_the_written_form_with_an_output_is_read_as_written() -> None:
    data = json.loads((DATA / "run_result_output_v1.json").read_text())
    result = RunResult.from_dict(data, output_type=Weather)
    assert result.output == Weather(city="Paris", temp=21.5)
    assert result.status == "completed"


def test_results_written_before_outputs_existed_still_load() -> None:
    data = json.loads((DATA / "run_result_v1.json").read_text())
    assert "output" not in data
    assert RunResult.from_dict(data, output_type=Weather).output is None


def test_a_resumed_run_ends_with_the_output_type_it_is_given(agents: list[Agent]) -> None:
    sent: list[str] = []

    @tool(side_effects=True)
    def send_report(text: str) -> str:
        """Send a weather report.

        Args:
            text: the report
        """
        sent.append(text)
        return "sent"

    replies = [
        json_call("send_report", {"text": "warm"}, "c1"),
        json_call("final_result", {"city": "Paris", "temp": 21.5}, "c2"),
    ]
    model = ScriptedModel(replies)
    agent = Agent(model, [get_temp, send_report], approval=lambda request: Approval.defer())
    agents.append(agent)
    paused = agent.run("Report the weather in Paris.", output_type=Weather)
    assert paused.status == "needs_approval" and paused.output is None
    # The output type is not part of the paused state: the resume gives it again.
    result = agent.resume(paused, {"c1": True}, output_type=Weather)
    assert result.status == "completed", result.error
    assert sent == ["warm"]
    assert result.output == Weather(city="Paris", temp=21.5)


def test_under_tool_search_the_output_tool_is_shown_from_the_start(agents: list[Agent]) -> None:
    agent, model = agent_for(
        agents,
        "json",
        [json_call("final_result", {"result": 3}, "c1")],
        tool_search="always",
        output_type=int,
    )
    result = agent.run("How many cities are warm?")
    assert (result.status, result.output) == ("completed", 3)
    shown = [t.name for t in model.requests[0].tools]
    assert "final_result" in shown and "get_temp" not in shown
