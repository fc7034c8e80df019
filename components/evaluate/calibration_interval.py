"""How sure is a target's calibration (mean prediction / eval positive rate), measured over repeated runs?

Two spreads make it uncertain, and the interval holds both, on the log scale (a ratio's natural scale):

- the runs: each run's calibration differs with its seed; their log values' variance s² over R runs gives the
  mean's variance s²/R (none is known from one run);
- the eval labels: every run divides by the same eval positive rate p̂ = k/n, itself a binomial estimate of the
  rate the eval day's traffic has. Its log has variance (1 − p)/(n p) (delta method), shared by every run, so the
  runs' spread cannot show it. On a small or rare-positive eval split it dominates: 300 examples at 12% alone give
  a 95% interval of ×/÷ 1.36.

The interval of the mean log calibration is mean ± t · √(s²/R + (1 − p)/(n p)) with Welch–Satterthwaite degrees of
freedom (the binomial part counted as known: infinite degrees of freedom), returned as ratios. The prediction's
own sampling noise over the same eval examples is left out: it moves with the labels (both come from the same
examples), and the binomial term alone is the larger for a model that ranks at all.
"""

from __future__ import annotations

import math
from typing import Sequence

from scipy import stats as scipy_stats


def label_log_variance(eval_examples: int, eval_rate: float) -> float:
    """Variance of log(p̂) for a binomial rate estimated on `eval_examples` at rate `eval_rate`."""
    if eval_examples <= 0 or not 0 < eval_rate < 1:
        return math.inf
    return (1 - eval_rate) / (eval_examples * eval_rate)


def calibration_interval(calibrations: Sequence[float], eval_examples: int,
                         eval_rate: float) -> tuple[float, float] | None:
    """95% interval of the calibration mean over `calibrations` (one per run) given the eval split's size and
    positive rate; None without a positive calibration in every run or without an estimable eval rate."""
    if not calibrations or any(c <= 0 or not math.isfinite(c) for c in calibrations):
        return None
    labels = label_log_variance(eval_examples, eval_rate)
    if not math.isfinite(labels):
        return None
    logs = [math.log(c) for c in calibrations]
    runs = len(logs)
    mean = sum(logs) / runs
    between = sum((x - mean) ** 2 for x in logs) / (runs - 1) / runs if runs > 1 else 0.0
    variance = between + labels
    # Welch–Satterthwaite: the runs' part has runs − 1 degrees of freedom, the binomial part infinitely many
    freedom = math.inf if between == 0 else variance ** 2 / (between ** 2 / (runs - 1))
    quantile = scipy_stats.norm.ppf(0.975) if math.isinf(freedom) else scipy_stats.t.ppf(0.975, freedom)
    half = quantile * math.sqrt(variance)
    return math.exp(mean - half), math.exp(mean + half)
