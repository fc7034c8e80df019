"""Does a calibration step fitted on the latest train days carry over to the next day? A day-ahead backtest over
the train split's own days, from the per-day counts preprocess writes (`SplitInfo.days`).

`training.calibration_data: latest_train_days` bets that the base rate of the last `c = split.calibration_days`
train days is a better guess for the served day than the rate of the whole train window, which is what the model
learned. On a log whose rate walks from day to day that bet wins; on one whose days scatter around a steady rate
(or move back), one day's rate, noise included, is a worse guess than the window's, and a step fitted there misses
the next day by as much as that day differed (the install log of the quality issue: fitted on a 0.244% day, served
on a 0.207% one, 45% over).

The backtest replays the bet on every train day `d` that has more than `c` days before it, with nothing from `d`
or later:

- without the step, day `d` is predicted at the rate of all days before it (the model of that shorter window);
- with it, that rate's log-odds moved toward the rate of days `d − c … d − 1` as the step moves them: by
  `w · (logit(latest rate) − logit(window rate))`, `w = positives / (positives + calibration_shrinkage_positives)`
  of those days (`posthoc_calibration.shrunk`);

and scores both on day `d`'s labels (binomial log-loss of its examples and positives, weighted by examples over
the days). When the move raises the backtest's log-loss, the trainer takes it out of the step
(`posthoc_calibration.anchored_to_train_rate`): what is left corrects the model's own bias toward the train
rate, the part a drifting rate cannot make wrong (`run_evaluation.backtested`). Dropping the whole step instead was
measured worse: on the low-rate preset the models were off by far more than the days' rates moved
(docs/calibration.md).

What it measures is the base rate's move alone: the model is taken to predict its train window's rate on
average. An intercept step shifts every log-odds by the same amount, and at low rates its effect on a day's
log-loss is ≈ −rate·δ + mean prediction·(e^δ − 1), a function of that day's mean prediction and rate only, so the
rate-level replay is the step's own effect, up to the model's own bias (which the held-out check of the step
still judges) and to Platt's slope (which it does not test).
"""

from __future__ import annotations

import math

from components.contracts.calibrator import EPSILON, CalibrationBacktest, logit
from components.contracts.manifest import DayCount


def backtest_days_needed(calibration_days: int) -> int:
    """Train days the backtest needs: `calibration_days` to fit on, one more before them, one to score."""
    return calibration_days + 2


def day_ahead_backtest(days: list[DayCount], task: str, calibration_days: int,
                       shrinkage_positives: float) -> CalibrationBacktest | None:
    """The backtest over `days` (the train split's, oldest first), None when there are fewer than
    `backtest_days_needed(calibration_days)` of them (nothing to score)."""
    if calibration_days < 1:
        raise ValueError(f"calibration_days must be at least 1, got {calibration_days}")
    if len(days) < backtest_days_needed(calibration_days):
        return None
    examples = [day.examples for day in days]
    positives = [day.positives.get(task, 0) for day in days]
    scored: list[str] = []
    loss_without = loss_with = 0.0
    scored_examples = scored_positives = 0
    largest_miss = 0.0
    for d in range(calibration_days + 1, len(days)):
        if examples[d] == 0:
            continue
        window_rate = _rate(sum(positives[:d]), sum(examples[:d]))
        latest_positives = sum(positives[d - calibration_days:d])
        latest_rate = _rate(latest_positives, sum(examples[d - calibration_days:d]))
        weight = (latest_positives / (latest_positives + shrinkage_positives) if shrinkage_positives > 0
                  else 1.0)
        moved = _sigmoid(float(logit(window_rate) + weight * (logit(latest_rate) - logit(window_rate))))
        loss_without += examples[d] * _binomial_logloss(positives[d], examples[d], window_rate)
        loss_with += examples[d] * _binomial_logloss(positives[d], examples[d], moved)
        observed = positives[d] / examples[d]
        if observed > 0:
            largest_miss = max(largest_miss, abs(moved / observed - 1.0))
        scored.append(days[d].date)
        scored_examples += examples[d]
        scored_positives += positives[d]
    if not scored:
        return None
    return CalibrationBacktest(
        calibration_days=calibration_days, days_scored=scored, examples=scored_examples, positives=scored_positives,
        logloss_without=loss_without / scored_examples, logloss_with=loss_with / scored_examples,
        largest_miss=largest_miss,
    )


def _binomial_logloss(positives: int, examples: int, rate: float) -> float:
    """Mean log-loss of `examples` labels, `positives` of them 1, all predicted at `rate`."""
    p = min(max(rate, EPSILON), 1.0 - EPSILON)
    return -(positives * math.log(p) + (examples - positives) * math.log1p(-p)) / examples


def _rate(positives: int, examples: int) -> float:
    return min(max(positives / examples if examples else 0.0, EPSILON), 1.0 - EPSILON)


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))
