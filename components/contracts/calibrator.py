"""The calibration step's record: the fitted map a run's serving signatures apply to a task's probability, and the
check that kept it (fitted and checked by `components.train.posthoc_calibration`; `RunSummary.calibrators`)."""

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

    def apply(self, probabilities: np.ndarray) -> np.ndarray:
        z = logit(np.asarray(probabilities, dtype=np.float64))
        return 1.0 / (1.0 + np.exp(-(self.slope * z + self.intercept)))

    def apply_tensor(self, probabilities: Any) -> Any:
        """The same map on a tf tensor (what the serving signatures run)."""
        import tensorflow as tf

        p = tf.clip_by_value(tf.cast(probabilities, tf.float32), EPSILON, 1.0 - EPSILON)
        z = tf.math.log(p) - tf.math.log1p(-p)
        return tf.sigmoid(self.slope * z + self.intercept)


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, EPSILON, 1.0 - EPSILON)
    return np.log(p) - np.log1p(-p)
