"""Binary ranking metrics on arrays of labels and predicted probabilities.

- log-loss:  -mean(y log p + (1-y) log(1-p))
- AUC:       P(score of a random positive > score of a random negative), ties count one half
- normalized entropy (He et al., 2014): log-loss / H(mean(y)), the entropy of the observed positive rate;
             below 1 means better than always predicting the average rate
- calibration: mean(p) / mean(y)
- reliability curve: examples sorted by p and cut into bins of equal count; per bin mean(p) against mean(y).
             Equal-count bins, because at a 0.2% positive rate equal-width bins put almost every example in the
             first one
"""

from __future__ import annotations

import numpy as np

EPSILON = 1e-7


def logloss(labels: np.ndarray, probabilities: np.ndarray) -> float:
    y, p = _check(labels, probabilities)
    p = np.clip(p, EPSILON, 1.0 - EPSILON)
    return float(-np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p)))


def auc(labels: np.ndarray, probabilities: np.ndarray) -> float:
    """Mann-Whitney form of the ROC AUC; NaN when only one class is present."""
    y, p = _check(labels, probabilities)
    positives = int(y.sum())
    negatives = y.size - positives
    if positives == 0 or negatives == 0:
        return float("nan")
    ranks = average_ranks(p)
    return float((ranks[y == 1].sum() - positives * (positives + 1) / 2.0) / (positives * negatives))


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1 in ascending order, tied values sharing the mean of the ranks they span (scipy's
    `rankdata(method="average")`, here in numpy so that a train step does not import scipy.stats: seconds of
    every step's start)."""
    values = np.asarray(values).reshape(-1)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    # starts of runs of equal values, and the end of the last: a run [start, end) holds ranks start+1 … end
    bounds = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1], [True]]))
    mean_rank = (bounds[:-1] + 1 + bounds[1:]) / 2.0
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.repeat(mean_rank, np.diff(bounds))
    return ranks


def normalized_entropy(labels: np.ndarray, probabilities: np.ndarray) -> float:
    y, _ = _check(labels, probabilities)
    rate = float(np.clip(y.mean(), EPSILON, 1.0 - EPSILON))
    entropy = -(rate * np.log(rate) + (1.0 - rate) * np.log(1.0 - rate))
    return logloss(labels, probabilities) / entropy


def calibration(labels: np.ndarray, probabilities: np.ndarray) -> float:
    y, p = _check(labels, probabilities)
    observed = y.mean()
    return float(p.mean() / observed) if observed > 0 else float("nan")


def _check(labels: np.ndarray, probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    p = np.asarray(probabilities, dtype=np.float64).reshape(-1)
    if y.shape != p.shape:
        raise ValueError(f"labels and probabilities differ in length: {y.size} vs {p.size}")
    if y.size == 0:
        raise ValueError("metrics need at least one example")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("labels must be 0 or 1")
    return y, p


def roc_curve(labels: np.ndarray, probabilities: np.ndarray, points: int = 51) -> list[tuple[float, float, float]]:
    """(false-positive rate, true-positive rate, threshold) at up to `points` thresholds taken from the observed
    scores (evenly over their sorted unique values), from the highest threshold to the lowest, which reaches
    (1, 1); a compact curve for KFP's ClassificationMetrics."""
    y, p = _check(labels, probabilities)
    positives, negatives = max(int(y.sum()), 1), max(int((1 - y).sum()), 1)
    scores = np.unique(p)
    thresholds = scores[np.unique(np.linspace(0, scores.size - 1, min(points, scores.size)).round().astype(int))][::-1]
    curve = [(0.0, 0.0, 1.0)]
    for threshold in thresholds:
        predicted = p >= threshold
        curve.append((float((predicted & (y == 0)).sum() / negatives), float((predicted & (y == 1)).sum() / positives),
                      float(threshold)))
    return curve


def reliability_curve(
    labels: np.ndarray, probabilities: np.ndarray, bins: int = 10
) -> list[tuple[float, float, int]]:
    """(mean predicted probability, observed positive rate, examples) per bin, bins of equal example count
    ordered by predicted probability (fewer bins when there are fewer examples). A calibrated model's points lie
    on the diagonal."""
    y, p = _check(labels, probabilities)
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    order = np.argsort(p, kind="stable")
    curve = []
    for part in np.array_split(order, min(bins, y.size)):
        curve.append((float(p[part].mean()), float(y[part].mean()), int(part.size)))
    return curve
