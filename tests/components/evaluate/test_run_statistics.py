import math

import pytest
from scipy import stats as scipy_stats

from components.evaluate.run_statistics import describe, welch_test


def test_describe_matches_closed_form():
    values = [0.30, 0.31, 0.32, 0.33, 0.34]
    result = describe(values)
    mean = 0.32
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / 4)  # 0.0158114
    half = 2.7764451 * std / math.sqrt(5)  # t(0.975, 4)
    assert result.mean == pytest.approx(mean)
    assert result.std == pytest.approx(std)
    assert (result.ci95_low, result.ci95_high) == pytest.approx((mean - half, mean + half), rel=1e-6)
    assert (result.min, result.max) == (0.30, 0.34)
    assert result.cv == pytest.approx(std / mean)


def test_describe_single_value_has_no_spread():
    result = describe([0.5])
    assert result.std is None and result.ci95_low is None and result.mean == 0.5


def test_welch_matches_hand_computed_statistic():
    a, b = [0.30, 0.31, 0.29, 0.30], [0.33, 0.35, 0.34, 0.36, 0.32]
    va, vb = 0.0000666667, 0.00025
    t = (0.30 - 0.34) / math.sqrt(va / 4 + vb / 5)
    dof = (va / 4 + vb / 5) ** 2 / ((va / 4) ** 2 / 3 + (vb / 5) ** 2 / 4)
    p = 2 * scipy_stats.t.sf(abs(t), dof)
    result = welch_test(a, b, other="cpu")
    assert result.t_statistic == pytest.approx(t, rel=1e-4)
    assert result.p_value == pytest.approx(p, rel=1e-3)
    assert result.significant
    assert result.difference == pytest.approx(-0.04)
    assert "lower than cpu: significant at 5%" in result.verdict


def test_welch_says_when_there_is_no_difference():
    result = welch_test([0.30, 0.32, 0.31], [0.31, 0.30, 0.32], other="cpu")
    assert not result.significant
    assert result.verdict.startswith("no significant log-loss difference from cpu at 5%")


def test_welch_needs_two_runs_per_side():
    result = welch_test([0.3], [0.31, 0.32])
    assert result.p_value is None and "too few runs" in result.verdict
