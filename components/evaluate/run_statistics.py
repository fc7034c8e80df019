"""Statistics over repeated identical training runs: is a log-loss difference real or noise?

- `describe`: mean, sample standard deviation (ddof=1), 95% confidence interval of the mean from
  Student's t with n−1 degrees of freedom (mean ± t₀.₉₇₅,ₙ₋₁ · s/√n), min, max, coefficient of variation s/|mean|.
- `welch_test`: Welch's unequal-variance t-test of two samples' means, two-sided.
- `paired_difference`: two models scored on the same examples: the mean per-example difference and its 95% t-interval.
- `paired_change`: one figure measured twice in each of several runs (e.g. eval log-loss after two epochs): is the
  mean per-run change different from 0 (one-sample t-test of the per-run differences, two-sided)?
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as scipy_stats

from components.contracts.sample_statistics import Comparison, SampleStats

SIGNIFICANCE = 0.05



def describe(values: Sequence[float]) -> SampleStats:
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("describe() needs at least one value")
    mean = float(x.mean())
    if x.size < 2:
        return SampleStats(n=1, mean=mean, std=None, ci95_low=None, ci95_high=None, min=mean, max=mean, cv=None)
    std = float(x.std(ddof=1))
    half_width = float(scipy_stats.t.ppf(0.975, x.size - 1) * std / math.sqrt(x.size))
    return SampleStats(
        n=int(x.size), mean=mean, std=std, ci95_low=mean - half_width, ci95_high=mean + half_width,
        min=float(x.min()), max=float(x.max()), cv=std / abs(mean) if mean != 0 else None,
    )


def welch_test(a: Sequence[float], b: Sequence[float], metric: str = "log-loss", other: str = "baseline") -> Comparison:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    difference = float(x.mean() - y.mean())
    relative = difference / abs(float(y.mean())) if y.mean() != 0 else float("nan")
    if x.size < 2 or y.size < 2:
        return Comparison(
            difference=difference, relative_difference=relative, t_statistic=None, p_value=None,
            significant=None, verdict=f"too few runs to test (need ≥2 per side, have {x.size} and {y.size})",
        )
    if x.std(ddof=1) == 0 and y.std(ddof=1) == 0:
        same = difference == 0
        return Comparison(
            difference=difference, relative_difference=relative, t_statistic=None, p_value=1.0 if same else 0.0,
            significant=not same,
            verdict="identical in every run" if same else f"{metric} differs in every run with no spread",
        )
    result = scipy_stats.ttest_ind(x, y, equal_var=False)
    p_value = float(result.pvalue)
    significant = p_value < SIGNIFICANCE
    direction = "lower" if difference < 0 else "higher"
    if significant:
        verdict = (f"{metric} {abs(difference):.5f} ({abs(relative):.2%}) {direction} than {other}: "
                   f"significant at 5% (p = {p_value:.3g})")
    else:
        verdict = f"no significant {metric} difference from {other} at 5% (p = {p_value:.3g})"
    return Comparison(
        difference=difference, relative_difference=relative, t_statistic=float(result.statistic),
        p_value=p_value, significant=significant, verdict=verdict,
    )


@dataclass(frozen=True)
class PairedChange:
    """after − before, run by run: the mean change, its p-value (None when it cannot be tested) and whether it is
    significant at `SIGNIFICANCE`."""

    mean: float
    p_value: float | None
    runs: int

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < SIGNIFICANCE


def paired_change(before: Sequence[float], after: Sequence[float]) -> PairedChange:
    """The per-run differences after − before tested against 0. Fewer than 2 runs, or differences with no spread,
    cannot be tested (p None): with no spread a t-test has no variance to judge the mean against."""
    if len(before) != len(after):
        raise ValueError(f"paired figures differ in length: {len(before)} vs {len(after)}")
    d = np.asarray(after, dtype=np.float64) - np.asarray(before, dtype=np.float64)
    if d.size == 0:
        raise ValueError("paired_change() needs at least one run")
    mean = float(d.mean())
    if d.size < 2 or np.allclose(d, d[0], rtol=1e-9, atol=1e-15):  # equal up to float rounding
        return PairedChange(mean=mean, p_value=None, runs=int(d.size))
    return PairedChange(mean=mean, p_value=float(scipy_stats.ttest_1samp(d, 0.0).pvalue), runs=int(d.size))


@dataclass(frozen=True)
class PairedComparison:
    """Challenger minus champion, example by example, on the same eval examples."""

    challenger_logloss: float
    champion_logloss: float
    difference: float
    difference_ci95: tuple[float, float]
    examples: int


def paired_difference(challenger: np.ndarray, champion: np.ndarray) -> PairedComparison:
    """Mean of d_i = challenger_i − champion_i with a t-interval; both arrays are per-example log-losses."""
    if challenger.shape != champion.shape:
        raise ValueError(f"paired scores differ in length: {challenger.shape} vs {champion.shape}")
    n = int(challenger.size)
    if n < 2:
        raise ValueError("a paired comparison needs at least 2 eval examples")
    d = challenger - champion
    mean = float(d.mean())
    half_width = float(scipy_stats.t.ppf(0.975, n - 1) * d.std(ddof=1) / math.sqrt(n))
    return PairedComparison(
        challenger_logloss=float(challenger.mean()), champion_logloss=float(champion.mean()),
        difference=mean, difference_ci95=(mean - half_width, mean + half_width), examples=n,
    )
