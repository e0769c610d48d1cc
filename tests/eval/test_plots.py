"""The figures a reader gets: what each one names, where it draws, what it says it guessed."""

from __future__ import annotations

import pytest

from tooluse.eval import Bench, BenchConfig, Row, SuiteOptions, read_rows
from tooluse.eval._plots import figures


@pytest.fixture(scope="module")
def fanout_rows(tmp_path_factory: pytest.TempPathFactory) -> list[Row]:
    # N* of the discovered variant is about 4, below the smallest width run here.
    out = tmp_path_factory.mktemp("fanout")
    config = BenchConfig(
        "fanout",
        out=out,
        conventions=("json", "code", "text"),
        options=SuiteOptions(widths=(10, 20, 40)),
    )
    Bench(config).run()
    return read_rows(out / "results.jsonl")


def test_every_figure_names_the_model(fanout_rows: list[Row]) -> None:
    drawn = figures(fanout_rows)
    assert set(drawn) == {"tokens_vs_n.png", "accuracy_vs_width.png", "accuracy_by_category.png"}
    for name, fig in drawn.items():
        assert fig.get_suptitle().endswith("model: oracle"), name


def test_the_token_plot_is_scaled_to_the_measurements(fanout_rows: list[Row]) -> None:
    fig = figures(fanout_rows)["tokens_vs_n.png"]
    highest = max(r.input_tokens for r in fanout_rows)
    for ax in fig.axes:
        assert ax.get_ylim()[1] < 1.2 * highest
        # Fitted lines cover the widths measured, not N = 0 to the smallest width.
        fitted = [line.get_xdata() for line in ax.get_lines() if len(set(line.get_xdata())) > 1]
        assert len(fitted) == 3 and all(min(xs) == 10 for xs in fitted)
    # Patel et al.'s figures are quoted beneath instead of drawn.
    notes = [t.get_text() for t in fig.texts if t.get_text() != fig.get_suptitle()]
    assert [n.split(":")[0] for n in notes] == ["Patel et al. 2026, measured at N = 30 and 48"]


def test_a_crossing_below_the_widths_measured_says_it_is_extrapolated(
    fanout_rows: list[Row],
) -> None:
    discovered, listed = figures(fanout_rows)["tokens_vs_n.png"].axes
    assert "discovered" in discovered.get_title()
    (label,) = [t.get_text() for t in discovered.texts if "N*" in t.get_text()]
    assert "extrapolated: below the widths measured" in label
    (label,) = [t.get_text() for t in listed.texts if "N*" in t.get_text()]
    assert "extrapolated" not in label


def test_equal_accuracies_do_not_hide_one_another(fanout_rows: list[Row]) -> None:
    fig = figures(fanout_rows)["accuracy_vs_width.png"]
    for ax in fig.axes:
        series = [tuple(line.get_xdata()) for line in ax.get_lines() if len(line.get_xdata())]
        assert len(series) == 3  # json, code, text, all at 100%
        assert len(set(series)) == 3, "two conventions drawn at the same points"
        assert "1 entry per point" in ax.get_title()


def test_categories_are_readable_and_counted(fanout_rows: list[Row]) -> None:
    fig = figures(fanout_rows)["accuracy_by_category.png"]
    assert [ax.get_title() for ax in fig.axes] == ["json", "code", "text"]
    labels = fig.axes[0].get_yticklabels()  # the panels share them
    assert [t.get_text() for t in labels] == ["fanout/listed", "fanout/discovered"]
    assert all(t.get_rotation() == 0 and t.get_fontsize() >= 9 for t in labels)
    for ax in fig.axes:
        assert ax.get_xlabel() == "entries passed (%)"
        assert [t.get_text() for t in ax.texts] == ["3/3", "3/3"]
