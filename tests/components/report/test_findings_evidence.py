"""Findings only where the evidence holds, each naming the config key to change: the epochs advice is tested
over runs (paired), an eval value never seen in train is flagged, runs without op determinism are called out,
and a calibration step that hurt or was skipped says what to set."""

import pytest

from components.contracts.calibrator import Calibrator
from components.evaluate.run_statistics import paired_change
from components.report.aggregation import summarize
from components.report.epochs import epochs_advice
from components.report.findings import findings
from tests.components.report.test_eval_curve_and_exports import with_curve
from tests.components.report.test_report import config, manifest, run


def curves(*per_run):
    return [[(epoch + 1, value) for epoch, value in enumerate(values)] for values in per_run]


def test_paired_change_tests_the_per_run_differences():
    change = paired_change([0.30, 0.31, 0.32], [0.29, 0.299, 0.311])
    assert change.mean == pytest.approx(-0.01, abs=1e-4) and change.significant
    assert not paired_change([0.30, 0.31, 0.32], [0.29, 0.32, 0.31]).significant  # one run rose
    assert paired_change([0.3], [0.2]).p_value is None  # one run: nothing to test
    assert paired_change([0.3, 0.4], [0.2, 0.3]).p_value is None  # no spread: cannot be tested


def test_fewer_epochs_only_when_the_rise_after_the_best_epoch_is_significant():
    rose = epochs_advice("cpu", curves([0.33, 0.32, 0.340], [0.35, 0.34, 0.361], [0.34, 0.33, 0.352]))
    assert "over-fitting" in rose and "set training.epochs: 2" in rose
    # the mean rose, but one run fell: not evidence
    assert epochs_advice("cpu", curves([0.33, 0.32, 0.340], [0.35, 0.34, 0.330], [0.34, 0.33, 0.352])) is None


def test_more_epochs_only_when_the_last_fall_is_significant():
    fell = epochs_advice("cpu", curves([0.40, 0.350], [0.41, 0.361], [0.39, 0.342]))
    # two evaluations: no decay to measure, so double rather than add one epoch per try
    assert "more epochs help" in fell and "double the epochs" in fell and fell.endswith("set training.epochs: 4.")
    # the click-log case: the mean fell 1.4% in the last epoch, but not in every run
    assert epochs_advice("cpu", curves([0.0080, 0.0076], [0.0079, 0.0080], [0.0081, 0.0077])) is None
    assert epochs_advice("cpu", curves([0.40, 0.35])) is None  # one run
    assert epochs_advice("cpu", curves([0.40], [0.41])) is None  # one epoch


def geometric(floor: float, scale: float, ratio: float, epochs: int, jitter: float = 0.0) -> list[float]:
    """An eval curve floor + scale · (1 + 10 · jitter) · ratioᵉ for epochs 1…`epochs` (`jitter`: a run's own
    deviation, so the runs' per-epoch changes differ and can be tested; they average `scale` when the jitters
    sum to 0)."""
    return [floor + scale * (1 + 10 * jitter) * ratio ** epoch for epoch in range(1, epochs + 1)]


def test_the_advice_says_how_many_epochs_the_trend_supports_not_one_more():
    """Gains that shrink ×0.6 an epoch from a loss near 0.313 at epoch 4: an epoch gains ≥ 0.1% of the log-loss
    (0.000313) up to epoch 10, where 0.04 · 0.6^(k-1) first drops below it; the advice names 10 and the expected
    log-loss there (0.30 + 0.1 · 0.6^10)."""
    runs = curves(*(geometric(0.30, 0.1, 0.6, 4, jitter) for jitter in (0.0, 0.002, -0.002)))
    advice = epochs_advice("cpu", runs)
    assert "gains per epoch shrink ×0.60 an epoch (epochs 2–4)" in advice
    assert "expected 0.30060 there" in advice and advice.endswith("set training.epochs: 10.")
    # slower decay, capped at 4x the epochs run
    slow = epochs_advice("cpu", curves(*(geometric(0.30, 0.1, 0.95, 4, j) for j in (0.0, 0.002, -0.002))))
    assert "capped at 4×" in slow and slow.endswith("set training.epochs: 16.")
    # a straight fall: the trend sets no end, double
    straight = epochs_advice("cpu", curves(*([0.50 - (0.01 + j) * e for e in range(1, 5)] for j in (0, 0.0004, -0.0003))))
    assert "do not shrink yet" in straight and straight.endswith("set training.epochs: 8.")
    # nearly converged: the last epoch's fall is significant but under 0.1%: nothing to advise
    assert epochs_advice("cpu", curves(*(geometric(0.30, 0.1, 0.3, 6, j) for j in (0.0, 0.002, -0.002)))) is None


def test_following_the_advice_converges_in_one_more_try():
    """The advised epochs, run, leave a curve whose last gain is under the threshold: no further advice."""
    first = epochs_advice("cpu", curves(*(geometric(0.30, 0.1, 0.6, 4, j) for j in (0.0, 0.002, -0.002))))
    epochs = int(first.rsplit(" ", 1)[1].rstrip("."))
    assert epochs_advice("cpu", curves(*(geometric(0.30, 0.1, 0.6, epochs, j) for j in (0.0, 0.002, -0.002)))) is None


def test_the_report_advises_on_epochs_from_the_runs_curves():
    runs = [with_curve(run("cpu", i, 0.33, 1000.0), values)
            for i, values in enumerate([[0.40, 0.350], [0.41, 0.361], [0.39, 0.342]])]
    lines = findings(summarize(config(), manifest(), runs))
    assert any("more epochs help" in line and "set training.epochs: 4" in line for line in lines)
    noisy = [with_curve(run("cpu", i, 0.33, 1000.0), values)
             for i, values in enumerate([[0.40, 0.350], [0.41, 0.415], [0.39, 0.342]])]
    assert not any("epochs" in line for line in findings(summarize(config(), manifest(), noisy)))


def test_epochs_raised_by_the_small_split_rule_are_a_finding_and_fewer_epochs_turn_the_rule_off():
    runs = [with_curve(run("cpu", i, 0.33, 1000.0), values).model_copy(
                update={"epochs": 8, "configured_epochs": 2, "steps_per_epoch": 14, "min_train_steps": 87})
            for i, values in enumerate([[0.44, 0.40, 0.37, 0.380], [0.45, 0.41, 0.38, 0.392],
                                        [0.43, 0.39, 0.36, 0.371]])]
    lines = findings(summarize(config(), manifest(), runs))
    assert any("trained 8 epochs, not the 2 set" in line and "14 steps an epoch" in line
               and "trains at least 87 steps (training.min_train_steps" in line for line in lines)
    assert any("set training.epochs: 3 and training.min_train_steps: 0." in line for line in lines)
    unraised = [r.model_copy(update={"configured_epochs": None}) for r in runs]
    lines = findings(summarize(config(), manifest(), unraised))
    assert not any("not the" in line or "min_train_steps" in line for line in lines)
    assert any(line.endswith("set training.epochs: 3.") for line in lines)


def test_a_feature_mostly_unseen_in_train_is_a_finding_naming_what_to_change():
    unseen = manifest().model_copy(update={"unseen_eval_shares": {"weekday": 1.0, "ad_id": 0.2},
                                           "mostly_unseen_features": {"weekday": 1.0}})
    lines = findings(summarize(config(), unseen, [run("cpu", 0, 0.33, 1000.0)]))
    (line,) = [line for line in lines if "never seen in the train split" in line]
    assert line.startswith("Feature 'weekday': 100.0% of eval examples") and "`features`" in line
    assert not any("ad_id" in line for line in lines)


def test_runs_without_op_determinism_are_called_out():
    loose = [run("cpu", i, 0.33, 1000.0).model_copy(update={"deterministic": False}) for i in range(2)]
    (line,) = [line for line in findings(summarize(config(), manifest(), loose)) if "determinism" in line]
    assert line.startswith("cpu: trained without op determinism") and "training.deterministic: true" in line
    exact = [run("cpu", i, 0.33, 1000.0).model_copy(update={"deterministic": True}) for i in range(2)]
    assert not any("determinism" in line for line in findings(summarize(config(), manifest(), exact)))


def calibrated(index, before, after, skipped=None):
    summary = run("cpu", index, after, 1000.0)
    if skipped:
        summary.calibration_skipped = {"engagement": skipped}
        return summary
    summary.calibrators = {"engagement": Calibrator(method="intercept", slope=1.0, intercept=0.2, examples=900,
                                                    positives=40)}
    summary.metrics["engagement"] = summary.metrics["engagement"].model_copy(
        update={"uncalibrated_logloss": before, "uncalibrated_calibration": 1.1})
    return summary


def test_a_calibration_step_that_hurt_says_what_to_set():
    lines = findings(summarize(config(), manifest(), [calibrated(i, 0.330, 0.335) for i in range(2)]))
    (line,) = [line for line in lines if "calibration step moved" in line]
    assert "it hurt on the eval split; set training.calibration: none" in line
    helped = findings(summarize(config(), manifest(), [calibrated(i, 0.335, 0.330) for i in range(2)]))
    assert not any("hurt" in line for line in helped)


def test_a_skipped_calibration_step_is_a_finding_with_its_reason():
    reason = ("the intercept step did not lower log-loss: on 900 examples ... (set training.calibration: none)")
    runs = [calibrated(0, 0.33, 0.33, skipped=reason), calibrated(1, 0.33, 0.33)]
    (line,) = [line for line in findings(summarize(config(), manifest(), runs)) if "was skipped" in line]
    assert line.startswith("cpu/engagement: the calibration step was skipped in 1 of 2 run(s)")
    assert "training.calibration: none" in line


def test_a_steady_window_too_short_to_compare_hardware_by_is_a_finding_with_each_runs_ratio():
    from components.contracts.time_split import TimeSplit

    def timed(index: int, headline: float, window: float):
        return run("cpu", index, 0.33, headline).model_copy(update={
            "step_examples_per_second": 1000.0,
            "time_split": TimeSplit(startup=5.0, training=window * 0.97, input_wait=window * 0.03, evaluation=1.0,
                                    steady_steps=232)})

    short = findings(summarize(config(), manifest(), [timed(i, h, 0.2) for i, h in enumerate([630.0, 850.0, 940.0])]))
    [line] = [line for line in short if "steady training steps a run" in line]
    assert line.startswith("cpu: examples/s rests on 0.20 s of steady training steps a run (below 2 s)")
    assert "trained at 0.63, 0.85, 0.94 of their step's own rate" in line and "training.epochs" in line
    long = findings(summarize(config(), manifest(), [timed(i, h, 3.0) for i, h in enumerate([630.0, 850.0, 940.0])]))
    assert not [line for line in long if "steady training steps a run" in line]
