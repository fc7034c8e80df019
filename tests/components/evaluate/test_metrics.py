import math

import numpy as np
import pytest

from components.evaluate import metrics

LABELS = np.array([1, 0, 1, 0])
PROBS = np.array([0.9, 0.2, 0.4, 0.6])


def test_logloss_matches_hand_computation():
    expected = -(math.log(0.9) + math.log(0.8) + math.log(0.4) + math.log(0.4)) / 4
    assert metrics.logloss(LABELS, PROBS) == pytest.approx(expected)


def test_auc_counts_ordered_pairs_and_ties():
    # positives 0.9, 0.4; negatives 0.2, 0.6 → pairs (0.9>0.2, 0.9>0.6, 0.4>0.2, 0.4<0.6) = 3/4
    assert metrics.auc(LABELS, PROBS) == pytest.approx(0.75)
    assert metrics.auc([1, 0], [0.5, 0.5]) == pytest.approx(0.5)
    assert math.isnan(metrics.auc([1, 1], [0.2, 0.3]))


def test_average_ranks_share_tied_ranks_like_scipy():
    from scipy.stats import rankdata

    assert metrics.average_ranks(np.array([0.3, 0.1, 0.3, 0.2, 0.3])).tolist() == [4.0, 1.0, 4.0, 2.0, 4.0]
    rng = np.random.default_rng(0)
    for values in (rng.integers(0, 20, 500).astype(float), rng.random(500), np.ones(7), np.array([5.0])):
        np.testing.assert_array_equal(metrics.average_ranks(values), rankdata(values))
    # and the AUC they give equals the count of ordered pairs (ties one half) on data with many ties
    labels, scores = rng.integers(0, 2, 300), rng.integers(0, 10, 300) / 10
    positives, negatives = scores[labels == 1], scores[labels == 0]
    pairs = (positives[:, None] > negatives[None, :]).sum() + 0.5 * (positives[:, None] == negatives[None, :]).sum()
    assert metrics.auc(labels, scores) == pytest.approx(pairs / (positives.size * negatives.size))


def test_normalized_entropy_is_one_for_the_base_rate():
    labels = np.array([1, 0, 0, 0])
    assert metrics.normalized_entropy(labels, np.full(4, 0.25)) == pytest.approx(1.0)
    entropy = -(0.5 * math.log(0.5) * 2)
    assert metrics.normalized_entropy(LABELS, PROBS) == pytest.approx(metrics.logloss(LABELS, PROBS) / entropy)


def test_calibration_is_mean_prediction_over_rate():
    assert metrics.calibration(LABELS, PROBS) == pytest.approx(0.525 / 0.5)


def test_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match="differ in length"):
        metrics.logloss([1, 0], [0.5])
    with pytest.raises(ValueError, match="0 or 1"):
        metrics.logloss([2, 0], [0.5, 0.5])


def test_roc_curve_runs_from_origin_to_corner_and_matches_counts():
    curve = metrics.roc_curve(LABELS, PROBS, points=5)
    assert curve[0] == (0.0, 0.0, 1.0)
    assert curve[-1][:2] == (1.0, 1.0)
    # at threshold 0.6: predicted positive 0.9 (pos) and 0.6 (neg) → tpr 1/2, fpr 1/2
    assert (0.5, 0.5, 0.6) in [(f, t, round(th, 6)) for f, t, th in curve]
    fprs = [point[0] for point in curve]
    assert fprs == sorted(fprs)


def test_reliability_curve_bins_by_predicted_probability_in_equal_counts():
    probabilities = np.array([0.9, 0.1, 0.2, 0.8, 0.3, 0.7])
    labels = np.array([1, 0, 0, 1, 1, 0])
    curve = metrics.reliability_curve(labels, probabilities, bins=3)
    # sorted by p: (0.1 0, 0.2 0), (0.3 1, 0.7 0), (0.8 1, 0.9 1)
    assert [count for _, _, count in curve] == [2, 2, 2]
    assert [round(p, 6) for p, _, _ in curve] == [0.15, 0.5, 0.85]
    assert [rate for _, rate, _ in curve] == [0.0, 0.5, 1.0]
    assert len(metrics.reliability_curve([1, 0], [0.4, 0.6], bins=10)) == 2  # no empty bins
    with pytest.raises(ValueError, match="bins"):
        metrics.reliability_curve(labels, probabilities, bins=0)
