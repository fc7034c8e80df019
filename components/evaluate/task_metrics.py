"""What a training run reports for one task on the eval split: `TaskMetrics` from labels and predictions."""

from __future__ import annotations

import numpy as np

from components.contracts.run_summary import TaskMetrics
from components.evaluate import metrics

RELIABILITY_BINS = 10


def task_metrics(labels: np.ndarray, probabilities: np.ndarray, uncalibrated: np.ndarray | None = None) -> TaskMetrics:
    """Metrics of the served predictions `probabilities`; with `uncalibrated` (the model's output before the
    calibration step) also the log-loss and calibration it had before."""
    y, p = np.asarray(labels).reshape(-1), np.asarray(probabilities).reshape(-1)
    return TaskMetrics(
        logloss=metrics.logloss(y, p),
        auc=metrics.auc(y, p),
        normalized_entropy=metrics.normalized_entropy(y, p),
        calibration=metrics.calibration(y, p),
        examples=int(y.size),
        positive_rate=float(y.mean()),
        roc=metrics.roc_curve(y, p),
        mean_prediction=float(p.mean()),
        reliability=metrics.reliability_curve(y, p, RELIABILITY_BINS),
        uncalibrated_logloss=None if uncalibrated is None else metrics.logloss(y, uncalibrated),
        uncalibrated_calibration=None if uncalibrated is None else metrics.calibration(y, uncalibrated),
    )
