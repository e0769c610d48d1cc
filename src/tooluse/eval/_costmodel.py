"""The token cost model of Patel et al. (2026), fitted to measurements.

JSON calling costs ``C_json(N) = S + N (c_a + c_r + c_o)`` and programmatic
calling ``C_ptc(N) ≈ (P + ℓ₀) + γ N``; the lines cross at

    N* = ((P + ℓ₀) − S) / ((c_a + c_r + c_o) − γ).

Each convention's line is fitted by least squares to (N, input tokens) points,
with standard errors from the residuals; N*'s error follows from both fits by
first-order propagation. `PAPER` holds Patel et al.'s two fan-out measurements
(N = 30 and 48), from which the same arithmetic gives N* ≈ 27.7.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["PAPER", "Crossover", "LineFit", "crossover", "fit_line", "paper_crossover"]


@dataclass(frozen=True, slots=True)
class LineFit:
    """``y ≈ intercept + slope · x`` with standard errors (zero when two points fix the line)."""

    slope: float
    intercept: float
    slope_se: float
    intercept_se: float
    covariance: float
    rmse: float
    r2: float
    points: int

    def at(self, x: float) -> float:
        return self.intercept + self.slope * x


def fit_line(x: Sequence[float], y: Sequence[float]) -> LineFit:
    """Ordinary least squares of `y` on `x`; needs at least two distinct x values."""
    # Imported here (the eval extra): the viewer reads bench rows from this package
    # without numpy.
    import numpy as np

    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    if xs.shape != ys.shape or xs.size < 2 or np.ptp(xs) == 0:
        raise ValueError("a line needs at least two points with different x")
    design = np.column_stack([np.ones_like(xs), xs])
    coefficients, *_ = np.linalg.lstsq(design, ys, rcond=None)
    intercept, slope = float(coefficients[0]), float(coefficients[1])
    residuals = ys - design @ coefficients
    dof = xs.size - 2
    sigma2 = float(residuals @ residuals) / dof if dof > 0 else 0.0
    covariance = sigma2 * np.linalg.inv(design.T @ design)
    total = float(((ys - ys.mean()) ** 2).sum())
    r2 = 1.0 - float(residuals @ residuals) / total if total > 0 else 1.0
    return LineFit(
        slope=slope,
        intercept=intercept,
        slope_se=math.sqrt(max(float(covariance[1, 1]), 0.0)),
        intercept_se=math.sqrt(max(float(covariance[0, 0]), 0.0)),
        covariance=float(covariance[0, 1]),
        rmse=math.sqrt(float(residuals @ residuals) / xs.size),
        r2=r2,
        points=int(xs.size),
    )


@dataclass(frozen=True, slots=True)
class Crossover:
    """Where the two lines cross. `n_star` is None when they never do (equal slopes)."""

    json: LineFit
    code: LineFit
    n_star: float | None
    n_star_se: float | None

    @property
    def code_always_cheaper(self) -> bool:
        """The code line lies below the JSON line at every N ≥ 0."""
        return self.code.intercept <= self.json.intercept and self.code.slope <= self.json.slope


def crossover(json_fit: LineFit, code_fit: LineFit) -> Crossover:
    """N*, where the lines cross, and its standard error."""
    gap = json_fit.slope - code_fit.slope
    if gap == 0:
        return Crossover(json_fit, code_fit, None, None)
    lift = code_fit.intercept - json_fit.intercept
    n_star = lift / gap
    # First-order propagation; the two fits are independent of each other.
    variance = (
        (json_fit.intercept_se**2 + code_fit.intercept_se**2) / gap**2
        + lift**2 * (json_fit.slope_se**2 + code_fit.slope_se**2) / gap**4
        + 2 * lift * (json_fit.covariance + code_fit.covariance) / gap**3
    )
    return Crossover(json_fit, code_fit, n_star, math.sqrt(max(variance, 0.0)))


@dataclass(frozen=True, slots=True)
class _Paper:
    widths: tuple[float, float] = (30.0, 48.0)
    json_tokens: tuple[float, float] = (3559.0, 5097.0)
    code_tokens: tuple[float, float] = (3380.0, 3535.0)


PAPER = _Paper()


def paper_crossover() -> Crossover:
    """Patel et al.'s (2026) two widths per convention, one line through each pair: N* ≈ 27.7."""
    return crossover(
        fit_line(PAPER.widths, PAPER.json_tokens), fit_line(PAPER.widths, PAPER.code_tokens)
    )
