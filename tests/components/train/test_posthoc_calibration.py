import numpy as np
import pytest
import tensorflow as tf
from config_fixture import small_config
from fixture_data import write_transformed_examples

from components.contracts.manifest import Manifest
from components.evaluate import metrics
from components.train.input import InputOptions, make_dataset
from components.train.posthoc_calibration import checked_calibrator, fit_calibrator, shrunk
from components.train.training_run import train
from configs import AdrankConfig


def distorted_log(examples=200_000, slope=2.0, shift=1.0, seed=0):
    """Labels drawn from true probabilities, and predictions over-confident (slope) and too high (shift)."""
    rng = np.random.default_rng(seed)
    true_logit = rng.normal(-5.0, 1.0, examples)
    labels = (rng.random(examples) < 1 / (1 + np.exp(-true_logit))).astype(float)
    predicted = 1 / (1 + np.exp(-(slope * true_logit + 5.0 * (slope - 1) + shift)))
    return labels, predicted


def test_platt_recovers_a_known_distortion_and_lowers_logloss():
    labels, predicted = distorted_log()
    calibrator = fit_calibrator("platt", labels, predicted)
    assert calibrator.slope == pytest.approx(0.5, abs=0.05)
    calibrated = calibrator.apply(predicted)
    assert metrics.calibration(labels, predicted) > 1.5
    assert metrics.calibration(labels, calibrated) == pytest.approx(1.0, abs=0.05)
    assert metrics.logloss(labels, calibrated) < metrics.logloss(labels, predicted)
    assert metrics.auc(labels, calibrated) == pytest.approx(metrics.auc(labels, predicted))  # monotone


def test_intercept_only_matches_the_mean_and_keeps_the_slope():
    labels, predicted = distorted_log(slope=1.0, shift=1.0)
    calibrator = fit_calibrator("intercept", labels, predicted)
    assert calibrator.slope == 1.0
    assert calibrator.intercept == pytest.approx(-1.0, abs=0.1)
    assert metrics.calibration(labels, calibrator.apply(predicted)) == pytest.approx(1.0, abs=0.03)


def test_the_serving_map_equals_the_evaluation_map():
    labels, predicted = distorted_log(examples=1000)
    calibrator = fit_calibrator("platt", labels, predicted)
    served = calibrator.apply_tensor(tf.constant(predicted, tf.float32)).numpy()
    np.testing.assert_allclose(served, calibrator.apply(predicted), rtol=1e-4, atol=1e-7)


def test_unknown_method_and_empty_slice_fail_clearly():
    with pytest.raises(ValueError, match="unknown calibration method"):
        fit_calibrator("isotonic", [1, 0], [0.5, 0.5])
    with pytest.raises(ValueError, match="held-out slice"):
        fit_calibrator("platt", [], [])


def test_the_fit_is_shrunk_toward_no_change_by_its_positives():
    labels, predicted = distorted_log(examples=20_000, slope=1.0, shift=1.0)  # ~130 positives
    full = fit_calibrator("intercept", labels, predicted)
    positives = full.positives
    half = shrunk(full, shrinkage_positives=positives)
    assert half.evidence_weight == pytest.approx(0.5)
    assert half.intercept == pytest.approx(full.intercept / 2)
    platt = fit_calibrator("platt", labels, predicted)
    pulled = shrunk(platt, shrinkage_positives=3 * positives)
    assert pulled.slope - 1.0 == pytest.approx((platt.slope - 1.0) / 4)
    assert shrunk(full, 0.0) == full  # no shrinkage


def test_a_step_that_fixes_a_real_distortion_is_kept_by_cross_fitting():
    labels, predicted = distorted_log(examples=50_000, slope=1.5, shift=0.8)
    calibrator, reason = checked_calibrator("platt", (labels, predicted), None, shrinkage_positives=100.0)
    assert reason is None and calibrator is not None
    assert calibrator.check.how == "cross-fitting" and calibrator.check.examples == 50_000
    assert calibrator.check.logloss_with < calibrator.check.logloss_without


def test_a_step_fitted_where_the_rate_differs_from_held_out_data_is_skipped_and_says_why():
    """The click-log case: the latest train day ran at a higher rate than the data the model will meet; an intercept
    fitted there would raise held-out log-loss, so it is not kept."""
    rng = np.random.default_rng(3)
    true_p = 1 / (1 + np.exp(-rng.normal(-6.2, 0.8, 100_000)))
    fit_labels = (rng.random(true_p.size) < true_p * 1.3).astype(float)  # a noisy high day
    check_labels = (rng.random(true_p.size) < true_p).astype(float)
    calibrator, reason = checked_calibrator(
        "intercept", (fit_labels, true_p), (check_labels, true_p), shrinkage_positives=100.0)
    assert calibrator is None
    assert "did not lower log-loss" in reason and "held-out slice" in reason


def test_a_step_fitted_on_noise_around_calibrated_predictions_is_skipped():
    rng = np.random.default_rng(5)
    predicted = 1 / (1 + np.exp(-rng.normal(-6.0, 1.0, 30_000)))
    labels = (rng.random(predicted.size) < predicted).astype(float)
    calibrator, reason = checked_calibrator("platt", (labels, predicted), None, shrinkage_positives=100.0)
    assert calibrator is None and "cross-fitting" in reason


def test_holdout_slices_split_the_train_split_without_overlap(single_task_examples_dir):
    manifest = Manifest.read(single_task_examples_dir)

    def count(holdout):
        options = InputOptions(1024, training=False, drop_remainder=False, holdout_fraction=0.1, holdout=holdout)
        return sum(int(labels["engagement"].shape[0])
                   for _, labels in make_dataset(single_task_examples_dir, manifest, "train", options))

    held, rest = count("only"), count("exclude")
    assert held + rest == manifest.splits["train"].examples
    assert 0.05 < held / manifest.splits["train"].examples < 0.15


def test_a_calibrated_run_serves_what_it_evaluated(single_task_examples_dir, tmp_path):
    config = small_config(epochs=1, calibration="platt", calibration_holdout_fraction=0.2)
    summary = train(config, "cpu", 0, str(single_task_examples_dir), str(tmp_path / "model"))
    manifest = Manifest.read(single_task_examples_dir)
    calibrator = summary.calibrators["engagement"]  # the fixture's model is off enough for the step to help
    assert calibrator.method == "platt" and 0 < calibrator.examples < 4096 * 0.3
    assert calibrator.check is not None and calibrator.check.improves and 0 < calibrator.evidence_weight < 1
    assert summary.steps == round(4096 * 0.8) // 256  # the held-out slice is not trained on
    task = summary.metrics["engagement"]
    assert task.uncalibrated_logloss is not None and task.uncalibrated_calibration is not None
    assert task.mean_prediction == pytest.approx(task.calibration * task.positive_rate)
    assert sum(count for _, _, count in task.reliability) == task.examples

    serve = tf.saved_model.load(str(tmp_path / "model" / "saved_model")).signatures["serving_transformed"]
    options = InputOptions(512, training=False, drop_remainder=False)
    data = make_dataset(single_task_examples_dir, manifest, "eval", options)
    labels, served = [], []
    for features, batch_labels in data:
        served.append(serve(**features)["engagement"].numpy())
        labels.append(batch_labels["engagement"].numpy().reshape(-1))
    labels, served = np.concatenate(labels), np.concatenate(served)
    assert metrics.logloss(labels, served) == pytest.approx(task.logloss, rel=1e-4)
    assert metrics.logloss(labels, served) != pytest.approx(task.uncalibrated_logloss, rel=1e-6)
    assert summary.curve[-1].eval_logloss == task.uncalibrated_logloss  # the curve is the model's own output


def test_calibration_on_the_latest_train_days_is_checked_on_their_held_out_part(tmp_path):
    """latest_train_days: the calibrator is fitted on the calibration split preprocess wrote (a part of train that
    is trained on too) less its hashed held-out part, which the model never trained on and which decides whether
    the step is kept; what is served is what was evaluated."""
    examples = tmp_path / "examples"
    write_transformed_examples(examples, train=4096, eval=1024, tasks=("engagement",), calibration=1024)
    config = latest_days_config(calibration_shrinkage_positives=0.0)
    summary = train(config, "cpu", 0, str(examples), str(tmp_path / "model"))
    assert summary.steps == round(4096 * 0.9) // 256  # the hashed 10% of train is held out
    if "engagement" in summary.calibration_skipped:  # the check decided against it: nothing is applied
        assert "did not lower log-loss" in summary.calibration_skipped["engagement"]
        assert summary.metrics["engagement"].uncalibrated_logloss is None
        return
    calibrator = summary.calibrators["engagement"]
    assert calibrator.method == "intercept" and 800 < calibrator.examples < 1024 and calibrator.slope == 1.0
    assert calibrator.check is not None and calibrator.check.how == "held-out slice"
    assert calibrator.examples + calibrator.check.examples == 1024
    assert calibrator.check.logloss_with < calibrator.check.logloss_without
    manifest = Manifest.read(examples)
    labels, served = [], []
    serve = tf.saved_model.load(str(tmp_path / "model" / "saved_model")).signatures["serving_transformed"]
    for features, batch_labels in make_dataset(examples, manifest, "calibration",
                                               InputOptions(512, training=False, drop_remainder=False)):
        served.append(serve(**features)["engagement"].numpy().reshape(-1))
        labels.append(batch_labels["engagement"].numpy().reshape(-1))
    # an unshrunk intercept fit makes the mean served prediction on the latest days (the part it was fitted on)
    # about their label rate
    assert np.mean(np.concatenate(served)) == pytest.approx(np.mean(np.concatenate(labels)), rel=0.1)


def test_latest_train_days_without_a_calibration_split_fails_clearly(single_task_examples_dir, tmp_path):
    config = latest_days_config()
    with pytest.raises(ValueError, match="split.calibration_days"):
        train(config, "cpu", 0, str(single_task_examples_dir), str(tmp_path / "model"))


def latest_days_config(**training) -> AdrankConfig:
    values = small_config(epochs=1).model_dump()
    values["training"].update(calibration="intercept", calibration_data="latest_train_days", **training)
    values["split"]["calibration_days"] = 1
    return AdrankConfig.model_validate(values)
