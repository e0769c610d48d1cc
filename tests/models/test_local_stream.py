"""`LocalModel.respond_stream`: the decode loop's text as it comes, constrained or not."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Sequence

import pytest

from examples.seed_tools import toolbox
from tooluse._messages import Message, ToolCall
from tooluse.decoding import CALL_OPEN
from tooluse.models import CallDelta, Delta, LocalModel, ModelRequest, TextDelta
from tooluse.models._local_stream import Prose, TokenText
from tooluse.tools import tool


@tool
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city name.
    """
    return f"sunny in {city}"


@pytest.fixture(scope="module")
def model() -> LocalModel:
    return LocalModel("smollm2-135m", max_output_tokens=8)


@pytest.mark.parametrize(
    "request_",
    [
        ModelRequest([Message("user", "Say hello in French.")]),
        ModelRequest([Message("user", "Write Python that prints 1.")], reply_format="code"),
        ModelRequest(
            [Message("user", "Weather in Paris?")], tools=[get_weather], tool_choice="required"
        ),
    ],
    ids=["free", "code-grammar", "calls-grammar"],
)
async def test_the_streamed_reply_is_the_reply_and_its_text_pieces_join_to_it(
    model: LocalModel, request_: ModelRequest
) -> None:
    whole = await model.respond(request_)
    pieces: list[Delta] = []
    streamed = await model.respond_stream(request_, pieces.append)

    for field in ("content", "tool_calls", "usage", "finish_reason", "problems"):
        assert getattr(streamed, field) == getattr(whole, field), field
    text = [p.text for p in pieces if isinstance(p, TextDelta)]
    assert "".join(text) == (streamed.content or "")
    calls = [p for p in pieces if isinstance(p, CallDelta)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        (c.id, c.name, c.arguments) for c in streamed.tool_calls
    ]
    if not request_.tools:
        # free text and code arrive token by token, not in one piece at the end
        assert len(text) > 1


def _prose(*pieces: str, content: str | None = None) -> list[str]:
    sent: list[str] = []
    prose = Prose(sent.append)
    for piece in pieces:
        prose.feed(piece)
    if content is not None:
        prose.finish(content)
    return sent


def test_prose_stops_where_a_call_frame_begins_even_split_across_pieces() -> None:
    assert _prose("Sure", ", I will", " look.\n<to", "ol_call>{", '"name": 1}') == [
        "Sure",
        ", I will",
        " look.",
    ]
    assert _prose("  \n", "Hello", " there", "\n") == ["Hello", " there"]
    assert _prose("Checking:\n``", "`json\n{}") == ["Checking:"]


def test_prose_passes_nothing_of_calls_written_bare() -> None:
    assert _prose(' {"name": "get_weather"', ', "arguments": {}}') == []
    assert _prose("[get_weather(city='Paris')]") == []


def test_prose_finishes_with_what_the_content_has_beyond_what_was_sent() -> None:
    assert _prose("It is", " sunny", content="It is sunny today.") == [
        "It is",
        " sunny",
        " today.",
    ]
    # a frame in the middle: what was read around it is the content
    assert _prose(f"Fine. {CALL_OPEN}", content="Fine.") == ["Fine."]


def test_token_text_joins_a_character_split_over_tokens_and_stops_when_asked() -> None:
    pieces = {1: "é".encode()[:1], 2: "é".encode()[1:] + b"t", 3: b"\xc3\xa9"}
    out: list[str] = []
    stop = threading.Event()
    feed = TokenText(pieces.__getitem__, out.append, stop)
    feed([1])
    feed([2])
    feed([3])
    assert out == ["ét", "é"]
    stop.set()
    with pytest.raises(asyncio.CancelledError):
        feed([3])


async def test_a_reply_gone_on_from_an_announced_step_streams_the_step_then_its_calls() -> None:
    # Here any first sentence is a step (the built-in pattern needs a bigger model's prose).
    stepping = LocalModel("smollm2-135m", max_output_tokens=96, steps_as_calls=re.compile(""))
    request = ModelRequest([Message("user", "What is the weather in Paris?")], tools=[get_weather])
    whole = await stepping.respond(request)
    assert whole.content and whole.tool_calls and stepping.last_stats.step == whole.content

    pieces: list[Delta] = []
    streamed = await stepping.respond_stream(request, pieces.append)
    for field in ("content", "tool_calls", "usage", "finish_reason", "problems"):
        assert getattr(streamed, field) == getattr(whole, field), field
    text = [p.text for p in pieces if isinstance(p, TextDelta)]
    assert "".join(text) == whole.content
    assert_calls_streamed(pieces, whole.tool_calls)


async def test_a_reply_stopped_before_a_number_nothing_gives_streams_whole_sentences() -> None:
    watching = LocalModel("smollm2-135m", max_output_tokens=96, numbers_as_calls=True)
    call = ToolCall("call_1", "get_weather", '{"city": "Paris"}')
    run = after_one_call("How tall is the Eiffel Tower?", call, '{"name": "Eiffel Tower"}')
    request = ModelRequest(run, tools=list(toolbox))
    pieces: list[Delta] = []
    streamed = await watching.respond_stream(request, pieces.append)
    number = watching.last_stats.number
    assert number is not None and streamed.tool_calls, streamed
    # Only the whole sentences before the number were passed on: the reply's text.
    text = "".join(p.text for p in pieces if isinstance(p, TextDelta))
    assert text == (streamed.content or "") and number not in text
    assert_calls_streamed(pieces, streamed.tool_calls)


async def test_an_answer_made_the_call_an_owed_item_needs_streams_no_text() -> None:
    owing = LocalModel("smollm2-135m", max_output_tokens=96, items_as_calls=True)
    call = ToolCall("call_1", "get_current_weather", '{"location": "Paris"}')
    run = after_one_call(
        "Is it warmer in Paris or in London right now?", call, '{"temperature_c": 18}'
    )
    pieces: list[Delta] = []
    streamed = await owing.respond_stream(ModelRequest(run, tools=list(toolbox)), pieces.append)
    assert owing.last_stats.item == "London" and streamed.content is None, streamed
    # The answer it replaced was held back whole: nothing of it was passed on.
    assert [p for p in pieces if isinstance(p, TextDelta)] == []
    assert_calls_streamed(pieces, streamed.tool_calls)


def after_one_call(task: str, call: ToolCall, result: str) -> list[Message]:
    """A run's messages once `call` has returned `result`."""
    return [
        Message("system", "You are a helpful assistant."),
        Message("user", task),
        Message("assistant", None, tool_calls=(call,)),
        Message("tool", result, tool_call_id=call.id),
    ]


def assert_calls_streamed(pieces: list[Delta], calls: Sequence[ToolCall]) -> None:
    """The stream's call pieces are `calls`, in order."""
    streamed = [p for p in pieces if isinstance(p, CallDelta)]
    assert [(c.name, c.arguments) for c in streamed] == [(c.name, c.arguments) for c in calls]
