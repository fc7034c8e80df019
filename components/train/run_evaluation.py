"""After the fit, in either lane: the calibration step fitted and checked, the eval split's metrics of what serving
returns, the loss curve's last point. A lane hands over how it predicts a split (`PredictSplit`); the rules are
here once."""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from components.contracts.calibrator import Calibrator
from components.contracts.manifest import CALIBRATION_SPLIT, Manifest
from components.contracts.run_summary import CurvePoint, TaskMetrics
from components.evaluate.task_metrics import task_metrics
from components.train.calibration_backtest import backtest_days_needed, day_ahead_backtest
from components.train.posthoc_calibration import anchored_to_train_rate, checked_calibrator
from components.train.step_plan import calibration_holdout
from configs.training import TrainingConfig

log = logging.getLogger(__name__)

# (split, batch size, holdout fraction, holdout "only" | "exclude") → (labels, probabilities) per task, file order
PredictSplit = Callable[[str, int, float, str], tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]
PREDICTION_BATCH_FLOOR = 1024  # predicting needs no gradients, so a small training batch need not slow it down


def prediction_batch_size(training: TrainingConfig) -> int:
    """The batch the trainer predicts in (eval metrics, the per-epoch eval loss, calibration data): the training
    batch, but never fewer than `PREDICTION_BATCH_FLOOR` examples."""
    return max(training.global_batch_size, PREDICTION_BATCH_FLOOR)


def curve_with_final_eval(fit_curve: list[CurvePoint], task_metrics: dict, epochs: int) -> list[CurvePoint]:
    """The fit's per-epoch curve with the final evaluation's log-loss on its last point.

    The curve follows the model's own output epoch by epoch: before the calibration step, if there is one."""
    curve = list(fit_curve)
    eval_logloss = float(np.mean([m.logloss if m.uncalibrated_logloss is None else m.uncalibrated_logloss
                                  for m in task_metrics.values()]))
    if curve:
        last_epoch = curve[-1].epoch if curve[-1].epoch is not None else epochs
        curve[-1] = curve[-1].model_copy(update={"eval_logloss": eval_logloss, "epoch": last_epoch})
    return curve


def fit_calibrators(predict: PredictSplit, manifest: Manifest, training: TrainingConfig,
                    ) -> tuple[dict[str, Calibrator], dict[str, str]]:
    """Per task, `training.calibration` fitted and shrunk by its evidence, kept only where it lowers log-loss on
    examples neither it nor the model was fitted on (`components.train.posthoc_calibration.checked_calibrator`):
    (calibrators kept, why each other task's step was skipped). Both empty when calibration is none.

    holdout: fitted on the hashed slice of train held out of training, checked by cross-fitting over it.
    latest_train_days: fitted on the latest train days the model trained on, checked on their held-out part and
    by the day-ahead backtest over the train days (`backtested`).
    """
    if training.calibration == "none":
        return {}, {}
    batch_size = prediction_batch_size(training)
    fraction = calibration_holdout(training)
    check: tuple[dict[str, np.ndarray], dict[str, np.ndarray]] | None = None
    if training.calibration_data == "latest_train_days":
        if CALIBRATION_SPLIT not in manifest.splits:
            raise ValueError("training.calibration_data is latest_train_days, but these examples have no calibration "
                             "split: preprocess them with split.calibration_days ≥ 1")
        fit = predict(CALIBRATION_SPLIT, batch_size, fraction, "exclude")
        check = predict(CALIBRATION_SPLIT, batch_size, fraction, "only")
    else:
        fit = predict("train", batch_size, fraction, "only")
    kept: dict[str, Calibrator] = {}
    skipped: dict[str, str] = {}
    for task in manifest.tasks:
        calibrator, reason = checked_calibrator(
            training.calibration, (fit[0][task], fit[1][task]),
            None if check is None else (check[0][task], check[1][task]), training.calibration_shrinkage_positives,
        )
        if calibrator is not None and training.calibration_data == "latest_train_days":
            calibrator = backtested(calibrator, manifest, task, training)
        if calibrator is None:
            skipped[task] = f"{reason}: serving the model's own output (set training.calibration: none)"
            log.warning("calibration step for %s skipped: %s", task, skipped[task])
        else:
            kept[task] = calibrator
    return kept, skipped


def backtested(calibrator: Calibrator, manifest: Manifest, task: str, training: TrainingConfig) -> Calibrator:
    """A step fitted on the latest train days, after the day-ahead backtest over the train days: as fitted (with
    its backtest) when moving to the latest days' rate did not raise the backtest's log-loss or when there is
    nothing to replay; without that move (`posthoc_calibration.anchored_to_train_rate`) when it did and
    `training.calibration_backtest` is enforce; with report, as fitted, its backtest recorded."""
    calibration_days = len(manifest.splits[CALIBRATION_SPLIT].days)
    train_days = manifest.splits["train"].days
    result = None if calibration_days < 1 else day_ahead_backtest(
        train_days, task, calibration_days, training.calibration_shrinkage_positives)
    if result is None:
        log.info("calibration step for %s: no day-ahead backtest (%d train days with per-day counts; it needs "
                 "split.calibration_days + 2 = %d): the held-out check alone kept it", task, len(train_days),
                 backtest_days_needed(max(calibration_days, 1)))
        return calibrator
    if result.keeps_the_move or training.calibration_backtest == "report":
        checked = calibrator.model_copy(update={"backtest": result})
        if not result.keeps_the_move:
            log.warning("calibration step for %s: the day-ahead backtest %s", task, checked.backtest_line())
        return checked
    anchored = anchored_to_train_rate(calibrator, manifest.splits[CALIBRATION_SPLIT].label_rates[task],
                                      manifest.splits["train"].label_rates[task])
    anchored = anchored.model_copy(update={"backtest": result})
    log.warning("calibration step for %s: the day-ahead backtest %s", task, anchored.backtest_line())
    return anchored


def evaluate(predict: PredictSplit, manifest: Manifest, training: TrainingConfig,
             calibrators: dict[str, Calibrator] | None = None) -> dict[str, TaskMetrics]:
    """Eval-split metrics of what serving returns: the model's output, calibrated when a calibrator is given."""
    labels, probabilities = predict("eval", prediction_batch_size(training), 0.0, "only")
    calibrators = calibrators or {}
    return {
        task: task_metrics(labels[task], calibrators[task].apply(probabilities[task]), probabilities[task])
        if task in calibrators else task_metrics(labels[task], probabilities[task])
        for task in manifest.tasks
    }
