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

A step that cannot hurt (`checked_calibrator`):

- **shrunk by its evidence**: the fitted map is pulled toward "no change" (slope 1, intercept 0) by
  `w = positives / (positives + k)`, `k = training.calibration_shrinkage_positives`: slope' = 1 + w·(slope − 1),
  intercept' = w·intercept. Fitted on 80 positives with k = 100 it moves the log-odds less than half the way;
  on 10,000 positives almost all of it;
- **kept only when it lowers log-loss on examples it was not fitted on, which the model did not train on
  either**: either a separate check slice (`check`), or, without one, cross-fitting over the fit examples
  (two halves by position: fit on one, score on the other, both ways). Otherwise the run serves the model as is
  and records why (`RunSummary.calibration_skipped`).
"""

from __future__ import annotations

import math

import numpy as np

from components.contracts.calibrator import CalibrationCheck, Calibrator, logit
from components.evaluate.metrics import logloss

NEWTON_STEPS = 50



def anchored_to_train_rate(calibrator: Calibrator, latest_rate: float, train_rate: float) -> Calibrator:
    """`calibrator` (fitted on the latest train days) without its move from the train rate to theirs: the intercept
    less `evidence_weight · (logit(latest_rate) − logit(train_rate))`. What is left shifts the model's log-odds as
    far as fitting it to the train rate on the same days would, to first order: it corrects the model's own bias
    and bets nothing on the latest days' rate."""
    move = calibrator.evidence_weight * float(logit(np.array(latest_rate)) - logit(np.array(train_rate)))
    return calibrator.model_copy(update={"intercept": calibrator.intercept - move, "latest_move_removed": move})


def fit_calibrator(method: str, labels: np.ndarray, probabilities: np.ndarray) -> Calibrator:
    """Newton's method on the (convex) log-loss of sigmoid(slope · z + intercept)."""
    if method not in ("platt", "intercept"):
        raise ValueError(f"unknown calibration method {method!r}: platt or intercept")
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    z = logit(np.asarray(probabilities, dtype=np.float64).reshape(-1))
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


def shrunk(calibrator: Calibrator, shrinkage_positives: float) -> Calibrator:
    """`calibrator` pulled toward no change by its evidence: weight positives / (positives + shrinkage_positives)."""
    if shrinkage_positives <= 0:
        return calibrator
    weight = calibrator.positives / (calibrator.positives + shrinkage_positives)
    return calibrator.model_copy(update={
        "slope": 1.0 + weight * (calibrator.slope - 1.0),
        "intercept": weight * calibrator.intercept,
        "evidence_weight": weight,
    })


def fit_shrunk(method: str, labels: np.ndarray, probabilities: np.ndarray, shrinkage_positives: float) -> Calibrator:
    return shrunk(fit_calibrator(method, labels, probabilities), shrinkage_positives)


def checked_calibrator(
    method: str,
    fit: tuple[np.ndarray, np.ndarray],
    check: tuple[np.ndarray, np.ndarray] | None,
    shrinkage_positives: float,
) -> tuple[Calibrator | None, str | None]:
    """(the shrunk calibrator fitted on `fit`, None) when it lowers log-loss on examples it was not fitted on;
    (None, why) otherwise. `fit` and `check` are (labels, probabilities of the model before the step); without
    `check`, cross-fitting over `fit` decides."""
    labels, probabilities = (np.asarray(a, dtype=np.float64).reshape(-1) for a in fit)
    calibrator = fit_shrunk(method, labels, probabilities, shrinkage_positives)
    result: CalibrationCheck | None
    if check is not None:
        check_labels, check_probabilities = (np.asarray(a, dtype=np.float64).reshape(-1) for a in check)
        if check_labels.size == 0:
            return None, f"no held-out examples to check the {method} step on (the check slice is empty)"
        result = CalibrationCheck(
            how="held-out slice", examples=int(check_labels.size), positives=int(check_labels.sum()),
            logloss_without=logloss(check_labels, check_probabilities),
            logloss_with=logloss(check_labels, calibrator.apply(check_probabilities)),
        )
    else:
        result = _cross_fitted(method, labels, probabilities, shrinkage_positives)
        if result is None:
            return None, f"too few examples ({labels.size}) to check the {method} step by cross-fitting"
    if not result.improves:
        return None, f"the {method} step did not lower log-loss: {result.describe()}"
    return calibrator.model_copy(update={"check": result}), None


def _cross_fitted(method: str, labels: np.ndarray, probabilities: np.ndarray,
                  shrinkage_positives: float) -> CalibrationCheck | None:
    """Two halves by position (even, odd): each half scored by the step fitted on the other."""
    halves = [np.arange(labels.size) % 2 == parity for parity in (0, 1)]
    if min(int(half.sum()) for half in halves) < 2:
        return None
    with_step = np.empty_like(probabilities)
    for scored, fitted in (halves, halves[::-1]):
        other = fit_shrunk(method, labels[fitted], probabilities[fitted], shrinkage_positives)
        with_step[scored] = other.apply(probabilities[scored])
    return CalibrationCheck(
        how="cross-fitting", examples=int(labels.size), positives=int(labels.sum()),
        logloss_without=logloss(labels, probabilities), logloss_with=logloss(labels, with_step),
    )


