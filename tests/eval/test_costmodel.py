"""The cost-model fit recovers known lines; N* and its error; Patel et al.'s (2026) figures."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tooluse.eval import crossover, fit_line, paper_crossover


def test_fit_recovers_exact_lines() -> None:
    widths = [1, 2, 5, 10, 20, 50, 100]
    fit = fit_line(widths, [996 + 85.4 * n for n in widths])
    assert fit.slope == pytest.approx(85.4)
    assert fit.intercept == pytest.approx(996)
    assert fit.slope_se == pytest.approx(0, abs=1e-9)
    assert fit.r2 == pytest.approx(1.0)


def test_fit_recovers_slopes_from_noisy_data_within_its_error() -> None:
    rng = random.Random(3)
    widths = list(range(1, 121, 3))
    noisy = [400 + 30.0 * n + rng.gauss(0, 25) for n in widths]
    fit = fit_line(widths, noisy)
    assert abs(fit.slope - 30.0) < 3 * fit.slope_se
    assert abs(fit.intercept - 400) < 3 * fit.intercept_se
    assert 0 < fit.slope_se < 0.5
    assert fit.rmse == pytest.approx(25, rel=0.3)


def test_standard_errors_match_the_spread_of_repeated_fits() -> None:
    rng = np.random.default_rng(11)
    widths = np.arange(1, 41, dtype=float)
    slopes = [
        fit_line(widths, 10 + 2 * widths + rng.normal(0, 5, widths.size)).slope for _ in range(400)
    ]
    one = fit_line(widths, 10 + 2 * widths + rng.normal(0, 5, widths.size))
    assert float(np.std(slopes)) == pytest.approx(one.slope_se, rel=0.25)


def test_crossover_and_its_error_agree_with_simulation() -> None:
    rng = np.random.default_rng(5)
    widths = np.array([1, 5, 10, 20, 30, 40, 60, 80], dtype=float)

    def sample() -> tuple[float, float | None]:
        j = fit_line(widths, 300 + 40 * widths + rng.normal(0, 30, widths.size))
        c = fit_line(widths, 900 + 5 * widths + rng.normal(0, 30, widths.size))
        result = crossover(j, c)
        assert result.n_star is not None
        return result.n_star, result.n_star_se

    draws = [sample() for _ in range(300)]
    n_stars = [n for n, _ in draws]
    assert float(np.mean(n_stars)) == pytest.approx(600 / 35, rel=0.05)
    assert float(np.std(n_stars)) == pytest.approx(
        float(np.mean([se for _, se in draws])), rel=0.25
    )


def test_crossover_of_parallel_lines_does_not_exist() -> None:
    line = fit_line([1, 2], [1, 2])
    assert crossover(line, line).n_star is None


def test_code_cheaper_everywhere_is_recognised() -> None:
    result = crossover(fit_line([1, 2], [500, 530]), fit_line([1, 2], [300, 301]))
    assert result.code_always_cheaper and result.n_star is not None and result.n_star < 0


def test_patel_et_al_s_two_widths_give_n_star_27_7() -> None:
    paper = paper_crossover()
    assert paper.json.slope == pytest.approx(85.44, abs=0.01)
    assert paper.json.intercept == pytest.approx(996, abs=1)
    assert paper.code.slope == pytest.approx(8.61, abs=0.01)
    assert paper.code.intercept == pytest.approx(3122, abs=1)
    assert paper.n_star == pytest.approx(27.7, abs=0.05)
    assert paper.n_star_se == 0


def test_a_line_needs_two_distinct_widths() -> None:
    with pytest.raises(ValueError, match="two points"):
        fit_line([5, 5], [1, 2])
