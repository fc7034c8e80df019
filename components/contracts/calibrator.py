"""The calibration step's record: the fitted map a run's serving signatures apply to a task's probability, the
check that kept it, the day-ahead backtest of its move to the latest days' rate (fitted and checked by `components.train.posthoc_calibration`; `RunSummary.calibrators`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from components.contracts.base import Contract

EPSILON = 1e-7


class CalibrationCheck(Contract):
    """The step's log-loss on examples it was not fitted on (and the model did not train on)."""

    how: str = Field(description="'held-out slice' (a separate check slice) or 'cross-fitting' (two halves)")
    examples: int
    positives: int
    logloss_without: float
    logloss_with: float

    @property
    def improves(self) -> bool:
        return self.logloss_with < self.logloss_without

    def describe(self) -> str:
        return (f"on {self.examples:,} examples it was not fitted on ({self.positives:,} positives, {self.how}) "
                f"log-loss {self.logloss_without:.6f} without it, {self.logloss_with:.6f} with it")


class CalibrationBacktest(Contract):
    """The day-ahead backtest of a step fitted on the latest `calibration_days` train days."""

    calibration_days: int
    days_scored: list[str] = Field(description="the train days predicted (YYYY-MM-DD), each from the days before it")
    examples: int = Field(description="examples of the days scored")
    positives: int
    logloss_without: float = Field(description="log-loss of the days scored at the rate of the days before each")
    logloss_with: float = Field(description="the same with the rate moved toward the latest days' as the step does")
    largest_miss: float = Field(
        description="the largest |predicted / observed rate − 1| of a scored day with the step (0.45: 45% off)",
    )

    @property
    def keeps_the_move(self) -> bool:
        """Moving to the latest days' rate did not raise the backtest's log-loss (equal: the days' rates did not
        move)."""
        return self.logloss_with <= self.logloss_without

    def describe(self) -> str:
        days = ", ".join(self.days_scored)
        return (f"on {len(self.days_scored)} train day(s) ({days}; {self.examples:,} examples, "
                f"{self.positives:,} positives), each predicted from the days before it: log-loss "
                f"{self.logloss_without:.6f} at the earlier days' rate, {self.logloss_with:.6f} moved to the latest "
                f"{self.calibration_days} day(s)' rate as the step does (largest miss {self.largest_miss:.0%})")


class Calibrator(Contract):
    """p' = sigmoid(slope · logit(p) + intercept), fitted on `examples` held-out train examples."""

    method: str = Field(description="platt or intercept (training.calibration)")
    slope: float
    intercept: float
    examples: int = Field(description="held-out train examples it was fitted on")
    positives: int
    evidence_weight: float = Field(
        1.0, description="w = positives / (positives + training.calibration_shrinkage_positives): the share of the "
        "fitted move of slope and intercept away from no change that was kept (1: unshrunk)",
    )
    check: CalibrationCheck | None = Field(
        None, description="log-loss without and with the step on examples neither it nor the model was fitted on",
    )
    backtest: CalibrationBacktest | None = Field(
        None, description="latest_train_days: the day-ahead backtest over the train days "
        "(components.train.calibration_backtest); None when not run",
    )
    latest_move_removed: float | None = Field(
        None, description="when the backtest rejected the move to the latest days' rate: the log-odds taken out of "
        "the intercept (w · (logit(latest days' rate) − logit(train rate))), so the step corrects the model's own "
        "bias toward the train window's rate instead; None when the move was kept",
    )

    def backtest_line(self) -> str | None:
        """What the day-ahead backtest said and what was served, for the report; None without a backtest."""
        if self.backtest is None:
            return None
        if self.backtest.keeps_the_move:
            return f"supported the move to the latest days' rate: {self.backtest.describe()}"
        if self.latest_move_removed is None:
            return ("did not support the move to the latest days' rate (served as fitted; training."
                    f"calibration_backtest: enforce takes the move out): {self.backtest.describe()}")
        return (f"did not support the move to the latest days' rate, taken out of the step "
                f"({self.latest_move_removed:+.3f} in log-odds; it corrects toward the train rate only): "
                f"{self.backtest.describe()}")

    def apply(self, probabilities: np.ndarray) -> np.ndarray:
        z = logit(np.asarray(probabilities, dtype=np.float64))
        return 1.0 / (1.0 + np.exp(-(self.slope * z + self.intercept)))

    def apply_tensor(self, probabilities: Any) -> Any:
        """The same map on a tf tensor (what the serving signatures run)."""
        import tensorflow as tf

        p = tf.clip_by_value(tf.cast(probabilities, tf.float32), EPSILON, 1.0 - EPSILON)
        z = tf.math.log(p) - tf.math.log1p(-p)
        return tf.sigmoid(self.slope * z + self.intercept)


def logit(p: Any) -> Any:
    """log(p / (1 − p)) of a probability or an array of them, clipped to [EPSILON, 1 − EPSILON]."""
    p = np.clip(p, EPSILON, 1.0 - EPSILON)
    return np.log(p) - np.log1p(-p)
