"""`train()`: one training run of one target — the plain function behind the KFP `train_step`.

    resolve target overrides → seed, determinism → strategy from the hardware present → input pipeline →
    model + optimizers under the strategy scope → restore checkpoint → fit in checkpointed chunks (eval
    log-loss after each epoch; TensorBoard scalars when `AIP_TENSORBOARD_LOG_DIR` is set) → evaluate on the
    eval split → export the serving SavedModel (from TPU: a CPU copy of the model) → RunSummary
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from components.evaluate.task_metrics import task_metrics
from components.preprocess.manifest import CALIBRATION_SPLIT, Manifest
from components.train.export import export_serving_model, servable_copy, tft_output_dir
from components.train.loop import fit_synchronous
from components.train.models import RankingModel
from components.train.optimization import scaled_embedding_learning_rate, scaled_learning_rate
from components.train.parameter_server import fit_parameter_server
from components.train.posthoc_calibration import Calibrator, checked_calibrator
from components.train.predictions import predict_split, prediction_batch_size
from components.train.step_plan import calibration_holdout
from components.train.strategy import (
    Runtime,
    local_cluster_for,
    parameter_server_role,
    runtime_for,
    serve_parameter_server_task,
)
from components.train.summary import EmbeddingTableMemory, RunSummary, TaskMetrics
from components.train.table_rows_check import check_table_rows
from components.train.warm_start import transform_vocabularies
from components.train.warm_start import write_state as write_warm_start_state
from configs.slices import TrainStepConfig
from configs.training import ResolvedTarget, TrainingConfig, resolve_target

log = logging.getLogger(__name__)

SAVED_MODEL_DIR = "saved_model"
LOCAL_CLUSTER_LOG_DIR = "cluster_logs"  # each local ps/worker server's output, under the model dir


def train(
    config: TrainStepConfig,
    target_name: str,
    run_index: int,
    examples_dir: str,
    model_dir: str,
    model_uri: str | None = None,
    warm_start_from: str | None = None,
) -> RunSummary:
    """Train `target_name`'s model once (seed = config.seed + run_index) and summarize the run.

    `warm_start_from`: the champion's exported model directory (`training.warm_start: champion`); a fresh run
    starts from its weights (`components.train.warm_start`), a resumed one from its own checkpoint.

    In a parameter-server cluster only the chief trains; a worker or ps replica serves until the job ends.
    A `cpu-ps` target outside any cluster (no `ps` job in TF_CONFIG) starts its own on 127.0.0.1.
    """
    if parameter_server_role() is not None:
        serve_parameter_server_task()  # does not return
    cluster = local_cluster_for(config.target(target_name), Path(model_dir) / LOCAL_CLUSTER_LOG_DIR)
    if cluster is not None:  # a cpu-ps target with no cluster around it (local backend): start one, then train
        with cluster:         # as its chief; no server outlives this call (components/train/local_cluster.py)
            return train(config, target_name, run_index, examples_dir, model_dir, model_uri, warm_start_from)
    started = time.perf_counter()
    resolved = reproducible_where_possible(resolve_target(config.model, config.training, config.target(target_name)))
    seed = config.seed + run_index
    seed_everything(seed, resolved.training.deterministic)
    runtime = runtime_for(resolved.target.kind, resolved.target.allow_cpu_fallback)
    if runtime.fallback_reason:
        log.warning("falling back to CPU: %s", runtime.fallback_reason)
    set_precision_policy(resolved.training, runtime)
    manifest = Manifest.read(examples_dir)
    check_table_rows(manifest, config.features)

    if runtime.is_parameter_server:
        model, plan, fit_result = fit_parameter_server(resolved, runtime, manifest, examples_dir, model_dir, seed,
                                                       warm_start_from)
    else:
        model, plan, fit_result = fit_synchronous(resolved, runtime, manifest, examples_dir, model_dir, seed,
                                                  warm_start_from)

    calibrators, calibration_skipped = fit_calibrators(model, manifest, examples_dir, resolved.training)
    task_metrics = evaluate(model, manifest, examples_dir, resolved.training, calibrators)
    exported_uri = export_run_model(model, runtime, manifest, examples_dir, model_dir, model_uri, calibrators)
    curve = curve_with_final_eval(fit_result, task_metrics, resolved.training.epochs)
    return RunSummary(
        target=resolved.target.name,
        target_kind=resolved.target.kind,
        run_index=run_index,
        seed=seed,
        hardware=runtime.hardware_seen(),
        model_kind=resolved.model.kind,
        global_batch_size=resolved.training.global_batch_size,
        learning_rate=scaled_learning_rate(resolved.training),
        configured_learning_rate=resolved.training.learning_rate,
        learning_rate_scaling=resolved.training.learning_rate_scaling,
        embedding_learning_rate=scaled_embedding_learning_rate(resolved.training),
        steps=plan.total_steps,
        epochs=resolved.training.epochs,
        steps_per_epoch=plan.steps_per_epoch,
        steps_per_execution=plan.steps_per_execution,
        dropped_steps=plan.dropped_steps,
        train_examples=manifest.splits["train"].examples,
        wall_time_seconds=time.perf_counter() - started,
        examples_per_second=fit_result.examples_per_second,
        input_stall_fraction=fit_result.input_stall_fraction,
        input_examples_per_second=fit_result.input_examples_per_second,
        step_examples_per_second=fit_result.step_examples_per_second,
        input_format=fit_result.input_format,
        input_cache_bytes=fit_result.input_cache_bytes,
        metrics=task_metrics,
        curve=curve,
        embedding_tables=[EmbeddingTableMemory(**table) for table in model.table_memory()],
        model_uri=exported_uri,
        warm_start=fit_result.warm_start,
        calibrators=calibrators,
        calibration_skipped=calibration_skipped,
        deterministic=resolved.training.deterministic,
    )


# -- after the fit ---------------------------------------------------------------------------------
def export_run_model(model, runtime, manifest: Manifest, examples_dir: str, model_dir: str, model_uri: str | None,
                     calibrators) -> str:
    """Export the serving model (and its warm-start state) under `model_dir`; the URI the summary records.

    A TPU or parameter-server run exports the same model rebuilt on this host, its tables read back through the
    embedding interface (from the TPU embedding layer; from the ps tasks, whole however TensorFlow split them)."""
    export_dir = Path(model_dir) / SAVED_MODEL_DIR
    rebuilt = runtime.is_tpu or runtime.is_parameter_server
    servable = servable_copy(model, runtime.strategy, manifest) if rebuilt else model
    export_serving_model(servable, manifest, examples_dir, export_dir, calibrators)
    write_warm_start_state(servable, manifest, transform_vocabularies(tft_output_dir(examples_dir, manifest)),
                           export_dir)
    return str(export_dir) if model_uri is None else f"{model_uri.rstrip('/')}/{SAVED_MODEL_DIR}"


def curve_with_final_eval(fit_result, task_metrics: dict, epochs: int) -> list:
    """The fit's per-epoch curve with the final evaluation's log-loss on its last point (and in TensorBoard).

    The curve follows the model's own output epoch by epoch: before the calibration step, if there is one."""
    curve = list(fit_result.curve)
    eval_logloss = float(np.mean([m.logloss if m.uncalibrated_logloss is None else m.uncalibrated_logloss
                                  for m in task_metrics.values()]))
    if curve:
        last_epoch = curve[-1].epoch if curve[-1].epoch is not None else epochs
        curve[-1] = curve[-1].model_copy(update={"eval_logloss": eval_logloss, "epoch": last_epoch})
    if fit_result.tensorboard is not None and curve:
        fit_result.tensorboard.write_eval(curve[-1].step, eval_logloss)
    return curve


# -- set-up ---------------------------------------------------------------------------------------
def reproducible_where_possible(resolved: ResolvedTarget) -> ResolvedTarget:
    """`training.deterministic` (on by default) as this target can have it: asynchronous parameter-server training
    applies updates in whatever order workers finish, so op determinism cannot make it repeatable and would only
    cost the run its input-stall figure; a cpu-ps target trains without it."""
    if resolved.target.kind != "cpu-ps" or not resolved.training.deterministic:
        return resolved
    log.info("%s: parameter-server training is asynchronous, so training.deterministic does not apply to it",
             resolved.target.name)
    return dataclasses.replace(resolved, training=resolved.training.model_copy(update={"deterministic": False}))


def seed_everything(seed: int, deterministic: bool) -> None:
    keras.utils.set_random_seed(seed)
    if deterministic:
        tf.config.experimental.enable_op_determinism()


def set_precision_policy(training: TrainingConfig, runtime: Runtime) -> None:
    """bfloat16 compute where the hardware has it (TPU, GPUs of compute capability ≥ 8), else float32.

    bfloat16 keeps float32's exponent range, so no loss scaling is needed.
    """
    policy = "float32"
    if training.mixed_precision == "on" or (
        training.mixed_precision == "auto" and (runtime.is_tpu or _gpus_have_bfloat16(runtime))
    ):
        policy = "mixed_bfloat16"
    keras.mixed_precision.set_global_policy(policy)


def _gpus_have_bfloat16(runtime: Runtime) -> bool:
    if runtime.device_kind != "GPU":
        return False
    for gpu in tf.config.list_physical_devices("GPU"):
        capability = tf.config.experimental.get_device_details(gpu).get("compute_capability", (0, 0))
        if tuple(capability) < (8, 0):
            return False
    return True


def fit_calibrators(
    model: RankingModel, manifest: Manifest, examples_dir: str, training: TrainingConfig
) -> tuple[dict[str, Calibrator], dict[str, str]]:
    """Per task, `training.calibration` fitted and shrunk by its evidence, kept only where it lowers log-loss on
    examples neither it nor the model was fitted on (`components.train.posthoc_calibration.checked_calibrator`):
    (calibrators kept, why each other task's step was skipped). Both empty when calibration is none.

    holdout: fitted on the hashed slice of train held out of training, checked by cross-fitting over it.
    latest_train_days: fitted on the latest train days the model trained on, checked on their held-out part.
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
        fit = predict_split(model, manifest, examples_dir, CALIBRATION_SPLIT, batch_size, fraction, holdout="exclude")
        check = predict_split(model, manifest, examples_dir, CALIBRATION_SPLIT, batch_size, fraction, holdout="only")
    else:
        fit = predict_split(model, manifest, examples_dir, "train", batch_size, holdout_fraction=fraction)
    kept: dict[str, Calibrator] = {}
    skipped: dict[str, str] = {}
    for task in manifest.tasks:
        calibrator, reason = checked_calibrator(
            training.calibration, (fit[0][task], fit[1][task]),
            None if check is None else (check[0][task], check[1][task]), training.calibration_shrinkage_positives,
        )
        if calibrator is None:
            skipped[task] = f"{reason}: serving the model's own output (set training.calibration: none)"
            log.warning("calibration step for %s skipped: %s", task, skipped[task])
        else:
            kept[task] = calibrator
    return kept, skipped


def evaluate(model: RankingModel, manifest: Manifest, examples_dir: str, training: TrainingConfig,
             calibrators: dict[str, Calibrator] | None = None) -> dict[str, TaskMetrics]:
    """Eval-split metrics of what serving returns: the model's output, calibrated when a calibrator is given."""
    labels, probabilities = predict_split(model, manifest, examples_dir, "eval", prediction_batch_size(training))
    calibrators = calibrators or {}
    return {
        task: task_metrics(labels[task], calibrators[task].apply(probabilities[task]), probabilities[task])
        if task in calibrators else task_metrics(labels[task], probabilities[task])
        for task in manifest.tasks
    }
