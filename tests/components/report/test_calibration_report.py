import math

import numpy as np
import pytest

from components.contracts.calibrator import CalibrationBacktest, Calibrator
from components.evaluate.calibration_interval import calibration_interval
from components.report.aggregation import summarize
from components.report.calibration_finding import explained_band
from components.report.findings import findings
from components.report.write_report import build_report
from tests.components.report.test_report import config, manifest, run

RELIABILITY = [(0.05, 0.04, 100), (0.10, 0.11, 100), (0.21, 0.20, 100)]


def calibrated_run(target, index, calibration, uncalibrated=None, eval_examples=300):
    summary = run(target, index, 0.33 + 0.001 * index, 1000.0)
    updates = {"calibration": calibration, "mean_prediction": calibration * 0.12, "reliability": RELIABILITY,
               "examples": eval_examples}
    if uncalibrated is not None:
        updates |= {"uncalibrated_calibration": uncalibrated, "uncalibrated_logloss": 0.34}
        summary.calibrators = {"engagement": Calibrator(method="platt", slope=0.9, intercept=-0.2, examples=90,
                                                        positives=9)}
    summary.metrics["engagement"] = summary.metrics["engagement"].model_copy(update=updates)
    return summary


def calibration_lines(runs):
    return [line for line in findings(summarize(config(), manifest(), runs)) if "predicts" in line or "step" in line]


def test_the_band_the_base_rate_shift_explains():
    # train 10%, eval 12%: a model that learned the train rate predicts 0.83x the eval rate
    assert explained_band(0.10, 0.12) == pytest.approx((0.10 / 0.12, 1.0))
    assert explained_band(0.12, 0.10) == pytest.approx((1.0, 1.2))


def test_the_interval_holds_the_eval_labels_binomial_spread_and_the_runs_spread():
    # 300 eval examples at 12% (36 positives): log p-hat has sd sqrt(0.88 / 36) = 0.156, so x/÷ exp(1.96 · 0.156)
    low, high = calibration_interval([1.0, 1.0], 300, 0.12)
    assert (low, high) == pytest.approx((1 / 1.359, 1.359), rel=1e-3)
    # the same spread at 100x the examples is 10x narrower on the log scale
    assert calibration_interval([1.0], 30_000, 0.12)[1] == pytest.approx(math.exp(0.0306), rel=1e-2)
    # runs that disagree widen it (t with Welch–Satterthwaite degrees of freedom)
    spread = calibration_interval([0.9, 1.1, 1.0], 30_000, 0.12)
    assert spread[0] < 0.8 and spread[1] > 1.2
    assert calibration_interval([0.0, 1.0], 300, 0.12) is None and calibration_interval([1.0], 0, 0.0) is None


def test_the_interval_covers_the_true_calibration_95_percent_of_the_time():
    """A model whose predictions average the true rate, scored on eval splits drawn by chance: the interval
    contains 1 in about 95% of draws (the binomial part is what makes it honest)."""
    generator = np.random.default_rng(0)
    examples, rate = 2000, 0.02  # 40 positives on average
    covered = 0
    draws = 2000
    for positives in generator.binomial(examples, rate, draws):
        observed = max(positives, 1) / examples
        low, high = calibration_interval([rate / observed] * 3, examples, observed)
        covered += low <= 1 <= high
    assert 0.93 <= covered / draws <= 0.975


def test_finding_when_off_by_more_than_5_percent_and_the_interval_excludes_1():
    # the manifest's train rate is 10%, eval 12% (the shift alone explains 0.83x); 300 eval examples
    assert calibration_lines([calibrated_run("cpu", i, 0.80) for i in range(2)]) == []  # interval 0.59-1.09
    (over,) = calibration_lines([calibrated_run("cpu", i, 1.48) for i in range(2)])
    assert over.startswith("cpu/engagement: over-predicts — mean prediction is 1.48× the eval rate (95% interval "
                           "1.09–2.01 over 2 run(s) and the eval labels' binomial spread), more than 5% off; beyond "
                           "what the base rate's move between the splits explains (train rate 10.000%, eval rate "
                           "12.000%: 0.83×). What to set: training.calibration: intercept")
    # on 30,000 eval examples 7% is beyond chance, 4% is within the tolerance
    (under,) = calibration_lines([calibrated_run("cpu", i, 0.93, eval_examples=30_000) for i in range(2)])
    assert "under-predicts — mean prediction is 0.93×" in under and "interval 0.90–0.96" in under
    assert "the base rate's move between the splits explains it" in under
    assert calibration_lines([calibrated_run("cpu", i, 0.96, eval_examples=30_000) for i in range(2)]) == []
    assert calibration_lines([calibrated_run("cpu", i, 1.06, eval_examples=30_000) for i in range(2)]) != []
    # the runs' spread counts: 0.80 and 1.10 average 0.95 but prove nothing
    assert calibration_lines([calibrated_run("cpu", 0, 0.80, eval_examples=30_000),
                              calibrated_run("cpu", 1, 1.1, eval_examples=30_000)]) == []


def test_a_feature_whose_eval_values_train_never_saw_is_named_as_a_cause():
    runs = [calibrated_run("cpu", i, 0.82, eval_examples=30_000) for i in range(2)]
    unseen = manifest().model_copy(update={"mostly_unseen_features": {"click_weekday": 1.0}})
    (finding,) = [line for line in findings(summarize(config(), unseen, runs)) if "predicts" in line]
    assert "feature values the train split never had ('click_weekday' on 100% of eval examples)" in finding
    assert "What to set: drop 'click_weekday' from `features` or train on logs that cover their values" in finding
    assert "; training.calibration: intercept" in finding
    # without such a feature the finding does not name one
    (plain,) = calibration_lines(runs)
    assert "never had" not in plain and "What to set: training.calibration: intercept" in plain
    # a calibrated run raises no finding whatever the features
    calibrated = [calibrated_run("cpu", i, 1.0, eval_examples=30_000) for i in range(2)]
    assert not [line for line in findings(summarize(config(), unseen, calibrated)) if "predicts" in line]


def test_with_a_calibration_step_the_finding_names_the_steps_settings():
    runs = [calibrated_run("cpu", i, 1.30, uncalibrated=1.45, eval_examples=30_000) for i in range(2)]
    (finding, step) = calibration_lines(runs)
    assert "over-predicts" in finding and "What to set: training.calibration_data (holdout, or latest_train_days" in finding
    assert "calibration step moved mean prediction / eval rate 1.450 → 1.300" in step


def test_a_step_with_a_day_ahead_backtest_says_what_it_said_with_its_figures():
    runs = [calibrated_run("cpu", i, 1.01, uncalibrated=1.2) for i in range(2)]
    backtest = CalibrationBacktest(calibration_days=1, days_scored=["2026-01-03", "2026-01-04"], examples=80_000,
                                   positives=200, logloss_without=0.0175, logloss_with=0.0177, largest_miss=0.45)
    for summary in runs:
        summary.calibrators["engagement"] = summary.calibrators["engagement"].model_copy(
            update={"backtest": backtest, "latest_move_removed": -0.12})
    (step,) = calibration_lines(runs)
    assert ("1.200 → 1.010 and log-loss 0.34000 → 0.33050; the day-ahead backtest did not support the move to the "
            "latest days' rate, taken out of the step (-0.120 in log-odds") in step
    assert ("on 2 train day(s) (2026-01-03, 2026-01-04; 80,000 examples, 200 positives), each predicted from the "
            "days before it: log-loss 0.017500 at the earlier days' rate, 0.017700 moved to the latest 1 day(s)' "
            "rate as the step does (largest miss 45%)") in step


def test_the_report_shows_the_calibration_step_and_the_reliability_curve():
    runs = [calibrated_run("cpu", i, 1.02, uncalibrated=1.4) for i in range(2)]
    summary, html_text, markdown_text, _ = build_report(config(), manifest(), runs)
    (step,) = calibration_lines(runs)
    assert "platt calibration step moved mean prediction / eval rate 1.400 → 1.020" in step
    curve = summary.targets["cpu"].tasks["engagement"].reliability
    assert [count for _, _, count in curve] == [100, 100, 100]
    assert [p for p, _, _ in curve] == pytest.approx([0.05, 0.10, 0.21])
    assert "Calibration: reliability per bin" in markdown_text
    # the statistics table shows the interval next to the mean (300 eval examples at 12%: x/÷ 1.36)
    assert "| calibration (95% interval) |" in markdown_text and " 1.020 (0.75–1.39) |" in markdown_text
    assert "| cpu | engagement | 3 | 100 | 0.21000 |" in markdown_text
    assert "alt='reliability'" in html_text and "Calibration: reliability per bin" in html_text


def test_summaries_written_before_the_calibration_fields_still_load(tmp_path):
    legacy = run("cpu", 0, 0.33, 1000.0).model_dump()
    for field in ("mean_prediction", "reliability", "uncalibrated_logloss", "uncalibrated_calibration"):
        del legacy["metrics"]["engagement"][field]
    del legacy["calibrators"]
    from components.contracts.run_summary import RunSummary

    loaded = RunSummary.model_validate(legacy)
    assert loaded.metrics["engagement"].reliability == [] and loaded.calibrators == {}
    summary, html_text, _, _ = build_report(config(), manifest(), [loaded])
    assert summary.targets["cpu"].tasks["engagement"].reliability == [] and "alt='reliability'" not in html_text
