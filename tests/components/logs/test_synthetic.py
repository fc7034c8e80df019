"""The synthetic ad server: the per-day Bayes floor, day-to-day drift (base rate, effects, new ids), that drift
off and the first day of a drifted log are what they always were, and the install-shaped low-rate preset."""

from pathlib import Path

import numpy as np
import pytest
from synthetic_logs import SMALL, impressions_by_day

from components.logs.synthetic import (
    GROUND_TRUTH_FILE,
    bayes_logloss_over_days,
    generate_logs,
    read_ground_truth,
)
from configs import load_config
from configs.errors import ConfigError
from configs.slices import PreprocessStepConfig

REPO = Path(__file__).resolve().parents[3]
DRIFT = ["logs.synthetic.drift.base_rate_step=0.5", "logs.synthetic.drift.effect_drift=0.3",
         "logs.synthetic.drift.new_users_per_day=100", "logs.synthetic.drift.new_ads_per_day=10"]


def generated(tmp_path: Path, name: str, overrides: list[str], config_file=None) -> tuple[Path, dict]:
    config = load_config(config_file, overrides=overrides)
    logs = generate_logs(PreprocessStepConfig.of(config), tmp_path / name)
    return logs.directory, read_ground_truth(logs.directory)


def test_per_day_bayes_floor_adds_up_to_the_split_floors(tmp_path):
    _, truth = generated(tmp_path, "plain", SMALL)
    days = [day["date"] for day in truth["days"]]
    assert days == ["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04"]
    assert all(day["examples"] == 1500 and day["base_logit_shift"] == 0.0 for day in truth["days"])
    eval_floor = bayes_logloss_over_days(truth, "engagement", days[-1:])
    train_floor = bayes_logloss_over_days(truth, "engagement", days[:-1])
    assert eval_floor == pytest.approx(truth["splits"]["eval"]["tasks"]["engagement"]["bayes_logloss"], rel=1e-9)
    assert train_floor == pytest.approx(truth["splits"]["train"]["tasks"]["engagement"]["bayes_logloss"], rel=1e-9)
    assert bayes_logloss_over_days(truth, "engagement", ["2026-02-01"]) is None  # a day outside the logs
    assert bayes_logloss_over_days(truth, "conversion", days) is None  # a task the logs were not labelled for



def test_burn_in_days_are_in_no_split_of_the_ground_truth(tmp_path):
    _, truth = generated(tmp_path, "burn_in", [*SMALL, "split.history_burn_in_days=1"])
    days = [day["date"] for day in truth["days"]]
    assert truth["splits"]["train"]["examples"] == 2 * 1500 and truth["splits"]["eval"]["examples"] == 1500
    assert truth["splits"]["train"]["tasks"]["engagement"]["bayes_logloss"] == pytest.approx(
        bayes_logloss_over_days(truth, "engagement", days[1:-1]), rel=1e-9)

def test_drift_moves_rates_and_brings_new_ids_while_the_first_day_stays_as_it_was(tmp_path):
    still_dir, still = generated(tmp_path, "still", SMALL)
    drift_dir, drifting = generated(tmp_path, "drift", SMALL + DRIFT)
    still_days, drift_days = impressions_by_day(still_dir), impressions_by_day(drift_dir)
    first = "2026-01-01"
    assert drift_days[first] == still_days[first]
    assert drifting["days"][0]["tasks"] == still["days"][0]["tasks"]
    assert all(drift_days[day] != still_days[day] for day in drift_days if day != first)

    shifts = [day["base_logit_shift"] for day in drifting["days"]]
    assert shifts[0] == 0.0 and len(set(shifts)) == len(shifts)  # a random walk: every day moves
    assert [day["users"] for day in drifting["days"]] == [400, 500, 600, 700]
    assert [day["ads"] for day in drifting["days"]] == [60, 70, 80, 90]
    assert drifting["drift"]["new_users_per_day"] == 100

    def user_number(record):
        return int(record["user_id"][1:])

    assert max(user_number(r) for r in drift_days[first]) < 400
    assert any(user_number(r) >= 400 for r in drift_days["2026-01-04"])  # newcomers are served
    assert max(user_number(r) for r in drift_days["2026-01-02"]) < 500  # ...only from the day they appear
    for day in drifting["days"]:  # the floor is known per day and below the constant-rate log-loss
        task = day["tasks"]["engagement"]
        rate = task["positive_rate"]
        assert 0 < task["bayes_logloss"] < -(rate * np.log(rate) + (1 - rate) * np.log(1 - rate))


def test_same_config_same_bytes_with_drift(tmp_path):
    first, _ = generated(tmp_path, "a", SMALL + DRIFT)
    second, _ = generated(tmp_path, "b", SMALL + DRIFT)
    for path in sorted(first.rglob("*")):
        if path.is_file():
            assert path.read_bytes() == (second / path.relative_to(first)).read_bytes(), path.name


def test_drift_settings_are_validated_at_load_naming_the_field():
    with pytest.raises(ConfigError, match=r"logs\.synthetic\.drift\.effect_drift"):
        load_config(None, overrides=["logs.synthetic.drift.effect_drift=1.5"])
    with pytest.raises(ConfigError, match=r"logs\.synthetic\.drift\.new_users_per_day"):
        load_config(None, overrides=["logs.synthetic.drift.new_users_per_day=-1"])
    with pytest.raises(ConfigError, match=r"logs\.synthetic\.drift\.base_rat"):
        load_config(None, overrides=["logs.synthetic.drift.base_rate_stepp=0.1"])


def test_low_rate_preset_looks_like_install_logs(tmp_path):
    logs_dir, truth = generated(tmp_path, "low", [], REPO / "configs/examples/low_rate.yaml")
    assert (logs_dir / GROUND_TRUTH_FILE).exists()
    for split in ("train", "eval"):
        task = truth["splits"][split]["tasks"]["install"]
        assert 0.001 <= task["positive_rate"] <= 0.005, split
        assert 0.001 <= task["mean_probability"] <= 0.005, split
        assert task["bayes_logloss"] > 0
    for day in truth["days"]:
        assert day["users_seen_once"] > 0.6 * day["distinct_users_seen"]  # a long tail of users seen once
    means = [day["tasks"]["install"]["mean_probability"] for day in truth["days"]]
    assert max(means) / min(means) > 1.2  # the base rate shifts between days
    # strong per-id effects: the Bayes floor is well below the constant-rate log-loss
    rate = truth["splits"]["eval"]["tasks"]["install"]["positive_rate"]
    constant = -(rate * np.log(rate) + (1 - rate) * np.log(1 - rate))
    assert truth["splits"]["eval"]["tasks"]["install"]["bayes_logloss"] < 0.9 * constant
