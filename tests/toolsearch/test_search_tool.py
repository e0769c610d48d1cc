"""The search tool's answers for the bad inputs a model sends: always text it can read."""

from __future__ import annotations

from tooluse.search import MAX_TOP_K, SearchRun, ToolSearch

from ._tools import big_box


def run_of() -> SearchRun:
    box = big_box()
    return ToolSearch().open(box, render=lambda tools: "\n".join(t.name for t in tools))


def test_an_empty_query_is_explained() -> None:
    for query in ("", "   \n"):
        text = run_of().search(query)
        assert "The query is empty" in text
        assert "43 tools" in text
        assert 'tool_search(query="convert currency")' in text


def test_top_k_is_clamped_and_the_result_says_so() -> None:
    run = run_of()
    text = run.search("filler widget records", 0)
    assert f"top_k=0 is outside 1..{MAX_TOP_K}; used 1." in text
    assert text.count("filler_") == 1
    text = run.search("filler widget records", 10_000)
    assert f"top_k=10000 is outside 1..{MAX_TOP_K}; used {MAX_TOP_K}." in text
    assert text.count("filler_") == MAX_TOP_K
    assert "is not a whole number" in run.search("rate", "many")


def test_a_search_that_finds_nothing_says_so() -> None:
    text = run_of().search("zeppelin")
    assert text.startswith("No tool matches 'zeppelin' among the 43 tools.")


def test_found_tools_are_loaded_in_the_order_found() -> None:
    run = run_of()
    assert run.found() == []
    text = run.search("exchange rate currency", 1)
    assert text.splitlines()[1] == "get_exchange_rate"
    run.search("thermostat", 1)
    assert [t.name for t in run.found()] == ["get_exchange_rate", "set_thermostat"]
    assert run.is_loaded("get_exchange_rate")
    assert not run.is_loaded("lookup_capital")


def test_an_unloaded_tool_is_refused_with_its_definition_once() -> None:
    run = run_of()
    refusal = run.refusal("lookup_capital")
    assert refusal is not None
    assert refusal.startswith("lookup_capital exists but was not loaded, so it was not run.")
    assert "\nlookup_capital\n" in refusal
    assert run.refusal("lookup_capital") is None  # loaded by the refusal
    assert run.refusal("no_such_tool") is None  # the validator's "unknown tool" covers it
