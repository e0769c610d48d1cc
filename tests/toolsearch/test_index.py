"""The FTS5 index of a toolbox: what it covers, hostile queries, rebuilds."""

from __future__ import annotations

import pytest

from tooluse import Tool, Toolbox
from tooluse.search import ToolIndex

from ._tools import big_box, filler, get_exchange_rate


def names(index: ToolIndex, query: str, k: int = 5) -> list[str]:
    return [h.name for h in index.search(query, k)]


def test_finds_by_description_name_parameter_and_enum_value() -> None:
    index = ToolIndex(big_box())
    assert names(index, "what is the currency exchange rate")[0] == "get_exchange_rate"
    assert names(index, "thermostat")[0] == "set_thermostat"  # a word of the name
    assert names(index, "ISO 4217 code")[0] == "get_exchange_rate"  # a parameter's description
    assert names(index, "country")[0] == "lookup_capital"  # a parameter's name
    assert names(index, "eco")[0] == "set_thermostat"  # an enum value
    assert names(index, "rates")[0] == "get_exchange_rate"  # stemmed


def test_a_query_that_is_a_tools_name_finds_it_first() -> None:
    index = ToolIndex(big_box())
    assert names(index, "filler_7")[0] == "filler_7"
    assert names(index, "  Filler_7 ")[0] == "filler_7"


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "AND",
        "OR NOT AND",
        "NEAR(rate currency, 2)",
        "c++",
        "a.b",
        "name:get_exchange_rate",
        "rate*",
        "^rate",
        "-rate",
        "(((",
        "'; DROP TABLE tools; --",
        "💱 rate",
        "x" * 10_000,
        " ".join(f"w{i}" for i in range(5_000)),
        "\x00\n\t",
    ],
)
def test_hostile_queries_are_searched_never_parsed(query: str) -> None:
    index = ToolIndex(big_box())
    hits = index.search(query, 5)
    assert len(hits) <= 5
    if "rate" in query:
        assert "get_exchange_rate" in [h.name for h in hits]


def test_a_query_of_only_common_words_still_searches_them() -> None:
    index = ToolIndex(Toolbox([get_exchange_rate]))
    assert names(index, "the") == ["get_exchange_rate"]  # "the" is in its description
    assert names(index, "") == []
    assert names(index, "?!") == []


def test_top_k_below_one_finds_nothing() -> None:
    assert ToolIndex(big_box()).search("rate", 0) == []


def test_sync_rebuilds_only_when_a_name_or_description_changes() -> None:
    tools = [get_exchange_rate, filler(1)]
    index = ToolIndex(tools)
    assert index.sync(tools) is False
    assert names(index, "zeppelin") == []
    renamed = Tool.from_schema(
        "filler_1", "Book a zeppelin ride.", dict(filler(1).parameters), filler(1).function
    )
    assert index.sync([get_exchange_rate, renamed]) is True
    assert names(index, "zeppelin") == ["filler_1"]
    moved = Tool.from_schema(
        "zeppelin_tours", "Book a zeppelin ride.", dict(filler(1).parameters), filler(1).function
    )
    assert index.sync([get_exchange_rate, moved]) is True
    assert names(index, "zeppelin") == ["zeppelin_tours"]
    assert len(index) == 2


def test_a_word_in_most_tools_is_left_out_when_rarer_words_match_enough() -> None:
    index = ToolIndex(big_box(2_000))
    index.max_rows = 100
    # "filler" is in 2,000 tools; "currency" in one: the query searches the rare word.
    assert names(index, "filler currency") == ["get_exchange_rate"]
    # Alone, a common word is still searched.
    assert len(names(index, "filler")) == 5
