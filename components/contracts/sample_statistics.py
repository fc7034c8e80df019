"""The statistics of repeated runs that the benchmark summary carries: a sample described, and two samples' means
compared (built by `components.evaluate.run_statistics`: `describe`, `welch_test`)."""

from __future__ import annotations

from components.contracts.base import Contract


class SampleStats(Contract):
    n: int
    mean: float
    std: float | None
    ci95_low: float | None
    ci95_high: float | None
    min: float
    max: float
    cv: float | None


class Comparison(Contract):
    """`difference` is mean(a) − mean(b); for log-loss, negative means `a` is better."""

    difference: float
    relative_difference: float
    t_statistic: float | None
    p_value: float | None
    significant: bool | None
    verdict: str

