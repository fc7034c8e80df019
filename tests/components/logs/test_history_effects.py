"""History-shaped synthetic logs: ad fatigue lowers the log-odds of repeated exposures, each user's propensity
moves from day to day, the impressions (what was shown) stay as they were, and the Bayes floor follows the labels."""

from pathlib import Path

import numpy as np
from synthetic_logs import SMALL, impressions_by_day

from components.logs.history_effects import HistoryEffects
from components.logs.synthetic import generate_logs, read_ground_truth
from configs import load_config
from configs.logs import SyntheticHistoryConfig
from configs.slices import PreprocessStepConfig


def test_ad_fatigue_follows_earlier_exposures_of_the_same_pair_across_days():
    effects = HistoryEffects(SyntheticHistoryConfig(ad_fatigue=0.5), np.random.default_rng(0))
    day1 = effects.logit_shifts(np.array([1, 1, 2, 1]), np.array([7, 7, 7, 8]))
    assert set(day1) == {"fatigue"}  # the propensity is off
    np.testing.assert_allclose(day1["fatigue"], [0.0, -0.5 * np.log(2), 0.0, 0.0])
    day2 = effects.logit_shifts(np.array([1]), np.array([7]))
    np.testing.assert_allclose(day2["fatigue"], [-0.5 * np.log(3)])


def test_user_propensity_is_one_value_per_user_and_day_and_moves_between_days():
    effects = HistoryEffects(SyntheticHistoryConfig(user_propensity_std=1.0, persistence=0.5),
                             np.random.default_rng(0))
    users = np.array([1, 2, 1, 2, 3])
    first, second = (effects.logit_shifts(users, users)["propensity"] for _ in range(2))
    assert first[0] == first[2] and first[1] == first[3] and first[0] != first[1]
    assert not np.allclose(first, second)


def test_history_effects_change_labels_not_what_was_shown(tmp_path: Path):
    plain = load_config(overrides=SMALL)
    shaped = load_config(overrides=[*SMALL, "logs.synthetic.history.ad_fatigue=1.5",
                                    "logs.synthetic.history.user_propensity_std=1.0"])
    plain_logs = generate_logs(PreprocessStepConfig.of(plain), tmp_path / "plain").directory
    shaped_logs = generate_logs(PreprocessStepConfig.of(shaped), tmp_path / "shaped").directory
    assert impressions_by_day(plain_logs) == impressions_by_day(shaped_logs)
    tired = load_config(overrides=[*SMALL, "logs.synthetic.history.ad_fatigue=1.5"])
    tired_logs = generate_logs(PreprocessStepConfig.of(tired), tmp_path / "tired").directory
    positives = [sum(day["tasks"]["engagement"]["positives"] for day in read_ground_truth(logs)["days"])
                 for logs in (plain_logs, tired_logs)]
    assert positives[1] < positives[0]  # fatigue takes clicks away from repeated showings


def test_the_ground_truth_says_what_knowing_each_history_effect_is_worth(tmp_path: Path):
    """Per day and task, the Bayes floor without each effect (the rest exact, one intercept refitted), against the
    floor with the same refit: knowing a strong effect is worth log-loss."""
    config = load_config(overrides=[*SMALL, "logs.synthetic.history.ad_fatigue=1.5",
                                    "logs.synthetic.history.user_propensity_std=2.0"])
    truth = read_ground_truth(generate_logs(PreprocessStepConfig.of(config), tmp_path / "logs").directory)
    for day in truth["days"][1:]:  # from the second day on, every user's earlier showings weigh
        task = day["tasks"]["engagement"]
        without = task["bayes_logloss_without"]
        assert set(without) == {"propensity", "fatigue"}
        assert task["bayes_logloss_refitted"] <= task["bayes_logloss"] + 1e-9  # the refit's own optimum
        assert min(without.values()) > task["bayes_logloss_refitted"]
    plain = read_ground_truth(generate_logs(PreprocessStepConfig.of(load_config(overrides=SMALL)),
                                            tmp_path / "plain").directory)
    assert all("bayes_logloss_without" not in day["tasks"]["engagement"] for day in plain["days"])
