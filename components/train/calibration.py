"""Post-hoc calibration of a task's predicted probability, fitted on a slice of the train split held out of
training, and applied by the exported model's serving signatures.

With z = logit(p), the calibrated probability is

    p' = sigmoid(slope · z + intercept)

- `platt` (Platt, 1999) fits slope and intercept by minimizing log-loss on the held-out slice, against Platt's
  smoothed targets (N+ + 1)/(N+ + 2) for positives and 1/(N- + 2) for negatives so a slice with few positives
  does not drive the fit to 0 or 1;
- `intercept` keeps slope 1 and fits the intercept alone: a shift of the log-odds that makes the mean prediction
  match the held-out rate. One parameter; the robust choice when the slice has only tens of positives.

Both are monotone, so AUC is unchanged. Which examples are held out is decided by a hash of the serialized
transformed example (`components.train.input`), so every run and every epoch holds out the same slice.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

EPSILON = 1e-7
NEWTON_STEPS = 50


class Calibrator(BaseModel):
    """p' = sigmoid(slope · logit(p) + intercept), fitted on `examples` held-out train examples."""

    model_config = ConfigDict(extra="forbid")

    method: str = Field(description="platt or intercept (training.calibration)")
    slope: float
    intercept: float
    examples: int = Field(description="held-out train examples it was fitted on")
    positives: int

    def apply(self, probabilities: np.ndarray) -> np.ndarray:
        z = _logit(np.asarray(probabilities, dtype=np.float64))
        return 1.0 / (1.0 + np.exp(-(self.slope * z + self.intercept)))

    def apply_tensor(self, probabilities):
        """The same map on a tf tensor (what the serving signatures run)."""
        import tensorflow as tf

        p = tf.clip_by_value(tf.cast(probabilities, tf.float32), EPSILON, 1.0 - EPSILON)
        z = tf.math.log(p) - tf.math.log1p(-p)
        return tf.sigmoid(self.slope * z + self.intercept)


def fit_calibrator(method: str, labels: np.ndarray, probabilities: np.ndarray) -> Calibrator:
    """Newton's method on the (convex) log-loss of sigmoid(slope · z + intercept)."""
    if method not in ("platt", "intercept"):
        raise ValueError(f"unknown calibration method {method!r}: platt or intercept")
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    z = _logit(np.asarray(probabilities, dtype=np.float64).reshape(-1))
    if y.size == 0:
        raise ValueError("calibration needs held-out examples; the held-out slice of the train split is empty")
    positives = int(y.sum())
    negatives = y.size - positives
    target = np.where(y > 0.5, (positives + 1.0) / (positives + 2.0), 1.0 / (negatives + 2.0))
    slope, intercept = 1.0, 0.0
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-(slope * z + intercept)))
        residual, weight = p - target, np.maximum(p * (1.0 - p), 1e-12)
        if method == "intercept":
            step_slope, step_intercept = 0.0, residual.sum() / weight.sum()
        else:
            gradient = np.array([(residual * z).sum(), residual.sum()])
            hessian = np.array([[(weight * z * z).sum(), (weight * z).sum()], [(weight * z).sum(), weight.sum()]])
            hessian += 1e-9 * np.eye(2)
            step_slope, step_intercept = np.linalg.solve(hessian, gradient)
        slope, intercept = slope - step_slope, intercept - step_intercept
        if abs(step_slope) < 1e-10 and abs(step_intercept) < 1e-10:
            break
    if not (math.isfinite(slope) and math.isfinite(intercept)):
        raise ValueError(f"{method} calibration did not converge on {y.size} held-out examples")
    return Calibrator(method=method, slope=float(slope), intercept=float(intercept), examples=int(y.size),
                      positives=positives)


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, EPSILON, 1.0 - EPSILON)
    return np.log(p) - np.log1p(-p)
