"""Reports: the text convention beside JSON and code in summary.md and the plots."""

from __future__ import annotations

from pathlib import Path

from tooluse.eval import Bench, BenchConfig, SuiteOptions, read_rows, write_plots, write_summary
from tooluse.eval._report import cost_fits, line_fits

PNG = b"\x89PNG\r\n\x1a\n"


def test_fanout_summary_and_plots_show_text_beside_json_and_code(tmp_path: Path) -> None:
    config = BenchConfig(
        "fanout",
        out=tmp_path,
        conventions=("text", "code", "json"),
        options=SuiteOptions(categories=("listed",), widths=(2, 6, 12)),
    )
    Bench(config).run()
    rows = read_rows(tmp_path / "results.jsonl")
    plots = write_plots(tmp_path, rows)
    summary = write_summary(tmp_path, rows, plots).read_text()

    # Tables list json, code, text in that order, whatever order they ran in.
    table = [line for line in summary.splitlines() if line.startswith("| listed |")][:3]
    assert [line.split(" | ")[1] for line in table] == ["json", "code", "text"]
    assert all(" | 3 | 100.0% | 100.0% (" in line for line in table)
    assert "| category | N | json | code | text |" in summary
    assert "| listed | 12 | 1/1 | 1/1 | 1/1 |" in summary

    # The equations stay JSON against code; text gets its own line and crossing.
    assert [(f.variant, f.measure) for f in cost_fits(rows)] == [
        ("listed", "input_tokens"),
        ("listed", "peak_input_tokens"),
    ]
    text = line_fits(rows, "listed", "input_tokens")["text"]
    assert text.slope > 0 and text.points == 3
    assert "| intercept (text) | slope (text) | N* against code |" in summary
    assert f"| ours: fanout/listed | input tokens | 2–12 (3) | {text.intercept:,.0f} ± " in summary

    for name in ("tokens_vs_n.png", "accuracy_vs_width.png", "accuracy_by_category.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG), name
