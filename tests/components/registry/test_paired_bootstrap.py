"""The promotion's interval: a paired bootstrap-t that holds on rare events, in bounded memory, the same whatever the
batches, and equal to the t-interval where the normal approximation is sound."""

from __future__ import annotations

import numpy as np
import pytest

from components.evaluate.run_statistics import paired_difference
from components.registry.paired_bootstrap import EXACT_STRATUM_MAX, PairedBootstrap
from components.registry.scoring import per_example_logloss

MEAN_LOGIT = -7.0  # about 0.25% positives: the low-rate preset's install task


def _blurred(x: np.ndarray, slope: float) -> np.ndarray:
    return 1 / (1 + np.exp(-(slope * x + (1 - slope) * MEAN_LOGIT)))


def _install_day(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(MEAN_LOGIT, 1.5, n)
    return x, (rng.random(n) < 1 / (1 + np.exp(-x))).astype(np.float64)


def _differences(x, y, slope=0.9) -> np.ndarray:
    """Challenger (the truth blurred toward the mean logit) minus champion (the truth), per example."""
    return per_example_logloss(y, _blurred(x, slope)) - per_example_logloss(y, 1 / (1 + np.exp(-x)))


def _bootstrap(d: np.ndarray, y: np.ndarray, batch: int | None = None) -> PairedBootstrap:
    bootstrap = PairedBootstrap()
    step = batch or d.size
    for start in range(0, d.size, step):
        bootstrap.add(d[start:start + step], y[start:start + step])
    return bootstrap


def test_rare_positives_no_longer_wave_a_worse_challenger_through():
    """150 simulated install-rate days of 2,000 examples (about 5 positives each) where the challenger is truly
    worse: how often the interval's upper end falls below the true difference, i.e. the gate would take the worse
    model for no worse. The t-interval does so on about 1 day in 9; the bootstrap-t on half as many or fewer."""
    x_many, _ = _install_day(seed=99, n=400_000)
    truth, blurred = 1 / (1 + np.exp(-x_many)), _blurred(x_many, 0.9)
    true_difference = float((truth * np.log(truth / blurred)
                             + (1 - truth) * np.log((1 - truth) / (1 - blurred))).mean())
    assert true_difference > 0
    days, t_below, bootstrap_below, positives = 150, 0, 0, []
    for seed in range(days):
        x, y = _install_day(seed, 2000)
        positives.append(y.sum())
        d = _differences(x, y)
        t_below += paired_difference(d, np.zeros_like(d)).difference_ci95[1] < true_difference
        bootstrap_below += _bootstrap(d, y).interval(300, seed=seed)[1] < true_difference
    assert 4 < np.mean(positives) < 7
    assert t_below / days >= 0.09
    assert bootstrap_below / days <= 0.07 and bootstrap_below <= 0.6 * t_below


def test_with_many_positives_it_agrees_with_the_t_interval():
    rng = np.random.default_rng(3)
    x = rng.normal(-1.0, 1.0, 30_000)
    y = (rng.random(x.size) < 1 / (1 + np.exp(-x))).astype(np.float64)
    d = _differences(x, y, slope=0.8)
    low, high = _bootstrap(d, y).interval(2000)
    t_low, t_high = paired_difference(d, np.zeros_like(d)).difference_ci95
    width = t_high - t_low
    assert abs(low - t_low) < 0.05 * width and abs(high - t_high) < 0.05 * width


def test_the_interval_depends_on_the_examples_not_on_the_batches_and_repeats():
    x, y = _install_day(seed=7, n=EXACT_STRATUM_MAX + 2_000)  # the negatives past the exact limit: normal
    d = _differences(x, y)
    whole = _bootstrap(d, y)
    assert not whole.negatives.exact and whole.positives.exact
    assert _bootstrap(d, y, batch=997).interval(1000) == pytest.approx(whole.interval(1000), rel=1e-9)
    assert whole.interval(1000) == whole.interval(1000)  # seeded: a retried promotion decides the same
    assert whole.mean == pytest.approx(d.mean(), rel=1e-9)
    assert "negatives from its normal approximation" in whole.describe(1000)


def test_a_difference_that_never_varies_has_no_width():
    bootstrap = PairedBootstrap()
    bootstrap.add(np.full(10, 0.25), np.array([1.0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0]))
    assert bootstrap.interval(200) == (0.25, 0.25)
    with pytest.raises(ValueError, match="at least 2"):
        PairedBootstrap().interval(200)
