"""Promotion on the same day: champion and challenger scored on the same raw eval examples, the paired rule,
and every defined outcome (no champion, champion wins, challenger wins, champion unscorable, one-class split, too
few eval positives to trust), and a damaged champion stopping warm start with one line naming file and registry."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import numpy as np
import pytest
from fixture_models import TASK, day_of_examples, save_model, summary_naming, write_eval_examples

from components.contracts.promotion_decision import PromotionDecision
from components.evaluate.run_statistics import PairedComparison, paired_difference
from components.registry.champion import ChampionDamaged, champion_model_dir
from components.registry.local import LocalModelRegistry
from components.registry.promote_challenger import promote_best_run
from components.registry.promotion_rule import judge
from components.registry.scoring import per_example_logloss
from configs import load_config
from configs.slices import PromoteStepConfig

GOOD, BAD = (2.0, -2.0), (0.5, -1.0)  # (slope, bias): the truth, and a blurred model


def _config(tmp_path, *overrides) -> PromoteStepConfig:
    return PromoteStepConfig.of(load_config(None, [f"promotion.local_registry={tmp_path / 'registry'}", *overrides]))


@pytest.fixture
def day(tmp_path):
    x, y = day_of_examples(seed=1)
    return write_eval_examples(tmp_path / "examples", x, y), x, y


def _promote(tmp_path, config, examples_dir, slope_bias, name, required=None) -> PromotionDecision:
    model = save_model(tmp_path / name, *slope_bias, required_feature=required)
    return promote_best_run(config, "local", str(summary_naming(tmp_path / f"{name}.json", model)), str(examples_dir))


def _expected_logloss(x, y, slope, bias) -> float:
    return float(per_example_logloss(y, 1 / (1 + np.exp(-(slope * x + bias)))).mean())


def test_paired_difference_is_the_mean_difference_with_a_t_interval():
    a, b = np.array([0.5, 0.7, 0.2, 0.4]), np.array([0.4, 0.5, 0.3, 0.2])
    result = paired_difference(a, b)
    d = a - b
    half = 3.182446305284263 * d.std(ddof=1) / 2  # t(0.975, 3) · s / √4
    assert result.difference == pytest.approx(d.mean())
    assert result.difference_ci95 == pytest.approx((d.mean() - half, d.mean() + half))
    assert (result.challenger_logloss, result.champion_logloss, result.examples) == (pytest.approx(0.45),
                                                                                    pytest.approx(0.35), 4)


@pytest.mark.parametrize(("high", "tolerance", "promoted"), [
    (0.0009, 0.001, True), (0.0011, 0.001, False), (-0.0001, 0.0, True), (0.0001, 0.0, False),
    (-0.0004, -0.0005, False), (-0.0006, -0.0005, True),
])
def test_the_rule_reads_the_upper_end_of_the_interval(high, tolerance, promoted):
    comparison = PairedComparison(0.3, 0.3, high - 0.001, (high - 0.002, high), 1000)
    promotion = load_config(None, [f"promotion.logloss_tolerance={tolerance}"]).promotion
    verdict = judge(comparison, None, promotion)
    assert verdict.promoted is promoted and verdict.champion_status == "scored"


def test_a_day_where_the_champion_wins_and_one_where_the_challenger_wins(tmp_path, day):
    examples_dir, x, y = day
    config = _config(tmp_path)
    first = _promote(tmp_path, config, examples_dir, BAD, "day1")
    assert (first.version, first.promoted, first.champion_status) == ("1", True, "none")
    assert first.challenger_logloss == pytest.approx(_expected_logloss(x, y, *BAD), rel=1e-5)

    better = _promote(tmp_path, config, examples_dir, GOOD, "day2")
    assert (better.version, better.promoted, better.champion_version) == ("2", True, "1")
    assert better.champion_logloss == pytest.approx(_expected_logloss(x, y, *BAD), rel=1e-5)
    assert better.challenger_logloss == pytest.approx(_expected_logloss(x, y, *GOOD), rel=1e-5)
    assert better.difference == pytest.approx(better.challenger_logloss - better.champion_logloss, abs=1e-9)
    assert better.difference_ci95[0] < better.difference < better.difference_ci95[1] <= better.tolerance
    # the default tolerance is relative: 0.1% of the champion's log-loss on the same examples
    assert better.tolerance_form == "relative" and better.tolerance_relative == 0.001
    assert better.tolerance == pytest.approx(0.001 * better.champion_logloss)
    assert better.relative_difference == pytest.approx(better.difference / better.champion_logloss)
    assert better.relative_difference_ci95 == pytest.approx(
        tuple(bound / better.champion_logloss for bound in better.difference_ci95))
    assert better.eval_examples == len(y) and better.eval_positives == int(y.sum())

    worse = _promote(tmp_path, config, examples_dir, BAD, "day3")
    assert (worse.version, worse.promoted, worse.champion_version) == ("3", False, "2")
    assert worse.difference_ci95[1] > worse.tolerance
    assert "upper bound > tolerance" in worse.reason and "× champion log-loss" in worse.reason

    registry = LocalModelRegistry(tmp_path / "registry")
    assert registry.default("adrank-local")["version"] == "2"
    history = registry.history("adrank-local")
    assert [(h["version"], h["promoted"]) for h in history] == [("1", True), ("2", True), ("3", False)]
    assert history[2] == json.loads(worse.model_dump_json())


def test_the_same_model_twice_differs_by_exactly_zero(tmp_path, day):
    examples_dir, _, _ = day
    config = _config(tmp_path)
    _promote(tmp_path, config, examples_dir, GOOD, "a")
    again = _promote(tmp_path, config, examples_dir, GOOD, "b")
    assert again.difference == 0.0 and again.difference_ci95 == (0.0, 0.0) and again.promoted


@pytest.mark.parametrize("policy", ["promote", "keep"])
def test_a_champion_that_cannot_be_loaded_has_a_defined_outcome(tmp_path, day, policy):
    examples_dir, _, _ = day
    config = _config(tmp_path, f"promotion.on_unscorable_champion={policy}")
    _promote(tmp_path, config, examples_dir, BAD, "day1")
    (tmp_path / "registry/adrank-local/versions/1/model/saved_model.pb").unlink()  # a broken champion

    decision = _promote(tmp_path, config, examples_dir, GOOD, "day2")
    assert decision.champion_status == "unscorable" and decision.champion_logloss is None
    assert "cannot load the model" in decision.reason
    assert decision.promoted is (policy == "promote")
    registry = LocalModelRegistry(tmp_path / "registry")
    assert registry.versions("adrank-local") == ["1", "2"]  # registered either way, nothing lost
    assert registry.default("adrank-local")["version"] == ("2" if policy == "promote" else "1")


def test_a_champion_that_cannot_read_todays_features(tmp_path, day, caplog):
    examples_dir, x, y = day
    config = _config(tmp_path)
    yesterday = write_eval_examples(tmp_path / "yesterday", x, y, extra={"campaign_id": b"c1"})
    _promote(tmp_path, config, yesterday, GOOD, "day1", required="campaign_id")  # yesterday's logs had the column
    decision = _promote(tmp_path, config, examples_dir, BAD, "day2")
    assert decision.champion_status == "unscorable" and not decision.promoted  # default: keep
    assert "cannot read today's raw features" in decision.reason and "campaign_id" in decision.reason
    assert any(record.levelno == logging.WARNING and record.getMessage().startswith(
        "model adrank-local, champion version 1: champion could not be scored") for record in caplog.records)


def test_a_one_class_eval_split_is_never_registered(tmp_path):
    x, y = day_of_examples(seed=2, n=500)
    examples_dir = write_eval_examples(tmp_path / "examples", x, np.zeros_like(y))
    config = _config(tmp_path)
    decision = _promote(tmp_path, config, examples_dir, GOOD, "day1")
    assert (decision.registered, decision.promoted, decision.version) == (False, False, None)
    assert "no positives" in decision.reason and TASK in decision.reason
    assert not (tmp_path / "registry").exists()


def test_decision_metrics_for_the_experiment(tmp_path, day):
    examples_dir, _, _ = day
    config = _config(tmp_path)
    _promote(tmp_path, config, examples_dir, BAD, "day1")
    metrics = _promote(tmp_path, config, examples_dir, GOOD, "day2").metrics()
    assert set(metrics) == {"challenger_logloss", "champion_logloss", "difference", "difference_ci95_low",
                            "difference_ci95_high", "eval_examples", "eval_positives", "promoted",
                            "relative_difference", "relative_difference_ci95_high", "tolerance"}
    assert all(math.isfinite(v) for v in metrics.values()) and metrics["promoted"] == 1.0


def test_a_day_with_fewer_eval_positives_than_the_minimum_keeps_the_champion_and_says_why(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="components.registry.promote_challenger")
    x, y = day_of_examples(seed=1)
    install = (np.arange(y.size) % 500 == 0).astype(np.float32)  # 8 installs among the 4,000 examples
    examples_dir = write_eval_examples(tmp_path / "examples", x, y, other_tasks={"install": install},
                                       window_end="2026-03-04T00:00:00Z")
    positives = int(y.sum())
    config = _config(tmp_path, f"promotion.min_eval_positives={positives + 1}")
    _promote(tmp_path, config, examples_dir, BAD, "day1")  # no champion yet: promoted on any evidence
    decision = _promote(tmp_path, config, examples_dir, GOOD, "day2")  # clearly better, on too few positives
    assert not decision.promoted and decision.champion_status == "scored"
    assert decision.difference_ci95[1] < 0  # the interval alone would have promoted it
    assert decision.reason.startswith(f"only {positives:,} eval positives of task '{TASK}', fewer than "
                                      f"promotion.min_eval_positives {positives + 1:,}")
    assert "the champion stays (promotion.on_few_positives: keep)" in decision.reason
    assert decision.eval_positives_by_task == {TASK: positives, "install": 8}
    assert decision.min_eval_positives == positives + 1 and decision.day == "2026-03-03"
    assert decision.interval_method.startswith("paired bootstrap-t, 2,000 resamples of the 4,000 examples")
    assert LocalModelRegistry(tmp_path / "registry").default("adrank-local")["version"] == "1"
    # the console line (a progress record, the step's log on Vertex) says the evidence too
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("promotion: not promoted")]
    assert f"eval positives: {TASK} {positives:,}, install 8; only {positives:,} eval positives" in line

    explicit = _config(tmp_path, f"promotion.min_eval_positives={positives + 1}", "promotion.on_few_positives=promote")
    promoted = _promote(tmp_path, explicit, examples_dir, GOOD, "day3")
    assert promoted.promoted and "promoted on only" in promoted.reason


def test_a_damaged_champion_stops_warm_start_with_one_line_naming_the_file_and_the_registry(tmp_path, day):
    examples_dir, _, _ = day
    config = _config(tmp_path)
    _promote(tmp_path, config, examples_dir, GOOD, "day1")
    champion = Path(champion_model_dir(config, "local"))
    state = champion / "warm_start"
    state.mkdir()
    np.savez(state / "tables.npz", t=np.ones((3, 2)))
    (state / "row_keys.json").write_text('{"tables": {}}')
    assert champion_model_dir(config, "local") == str(champion)  # an intact state passes

    (state / "tables.npz").write_bytes((state / "tables.npz").read_bytes()[:40])  # cut short, as a broken copy
    with pytest.raises(ChampionDamaged) as raised:
        champion_model_dir(config, "local")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"the champion (the local registry {tmp_path / 'registry'}, model 'adrank-local', "
                              "default version 1) is damaged: ")
    assert f"{state / 'tables.npz'}: not a readable .npz archive (BadZipFile" in message
