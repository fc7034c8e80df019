"""The finding that history features cost log-loss on the held-out days: raised only for a cost beyond noise,
naming the features."""

from components.report.history_finding import history_cost_finding

FEATURES = ["ip_history", "ip_app_history"]


def test_a_cost_in_every_run_names_the_features():
    finding = history_cost_finding(FEATURES, [0.0112, 0.0118, 0.0125], [0.0110, 0.0111, 0.0112], task="download")
    assert finding is not None
    assert "'ip_history', 'ip_app_history'" in finding and "(download)" in finding
    assert "0.01183 with them vs 0.01110 without" in finding and "1.066×" in finding


def test_a_significant_cost_is_raised_even_when_one_run_gained():
    without = [0.0110, 0.0111, 0.0112, 0.0113, 0.0114, 0.0115]
    with_history = [w + d for w, d in zip(without, [4e-4, 5e-4, 6e-4, 5e-4, 4e-4, -1e-5], strict=True)]
    finding = history_cost_finding(FEATURES, with_history, without)
    assert finding is not None and "p = " in finding and "every run" not in finding


def test_an_unstable_cost_of_more_than_one_percent_is_raised_as_such():
    # the install log's seeds with history inputs as numbers: 1.046x on average, from 0.918x to 1.142x, p = 0.24
    without = [0.006482, 0.006378, 0.007172, 0.006701, 0.007065, 0.007319]
    with_history = [0.007404, 0.006581, 0.007092, 0.007493, 0.006486, 0.007968]
    finding = history_cost_finding(["ip_history"], with_history, without)
    assert finding is not None and "1.046×" in finding and "unstable from seed to seed" in finding


def test_no_finding_for_a_gain_or_for_a_small_cost_within_noise():
    assert history_cost_finding(FEATURES, [0.0108, 0.0109, 0.0110], [0.0110, 0.0111, 0.0112]) is None
    # 0.6% higher on average, one run gained, the paired test not significant: noise
    assert history_cost_finding(FEATURES, [0.0103, 0.0115, 0.0117], [0.0110, 0.0111, 0.0112]) is None
    assert history_cost_finding([], [0.0112], [0.0110]) is None
