"""`train()`: one training run of one target — the plain function behind the KFP `train_step`.

    resolve target overrides → seed, determinism → strategy from the hardware present → input pipeline →
    model + optimizers under the strategy scope → restore checkpoint → fit in checkpointed chunks (eval
    log-loss after each epoch; TensorBoard scalars when `AIP_TENSORBOARD_LOG_DIR` is set) → evaluate on the
    eval split → export the serving SavedModel (from TPU: a CPU copy of the model) → RunSummary
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from components.evaluate import metrics as ranking_metrics
from components.preprocess.manifest import CALIBRATION_SPLIT, Manifest
from components.train.callbacks import (
    EpochEvaluation, InputStallMeter, LossCurve, SaveCheckpoint, StepClock, StopOnNonFiniteLoss, TensorBoardScalars,
    TrainingProgress,
)
from components.train.export import export_serving_model, servable_copy, tft_output_dir
from components.train.input import InputOptions, make_dataset
from components.train.local_cluster import local_cluster_for
from components.train.models import RankingModel, build_model
from components.train.optimization import (
    make_optimizers, scaled_embedding_learning_rate, scaled_learning_rate, tpu_embedding_optimizer,
)
from components.train.strategy import (
    Runtime, parameter_server_role, runtime_for, serve_parameter_server_task, table_placement,
)
from components.train.summary import CurvePoint, EmbeddingTableMemory, RunSummary, TaskMetrics, WarmStartSummary
from components.train.warm_start import WarmStartUnavailable, apply_state, transform_vocabularies
from components.train.warm_start import write_state as write_warm_start_state
from components.train.calibration import Calibrator, fit_calibrator
from components.evaluate.task_metrics import task_metrics
from configs.slices import TrainStepConfig
from configs.training import ResolvedTarget, TrainingConfig, resolve_target

log = logging.getLogger(__name__)

CHECKPOINT_DIR = "checkpoints"
SAVED_MODEL_DIR = "saved_model"
LOCAL_CLUSTER_LOG_DIR = "cluster_logs"  # each local ps/worker server's output, under the model dir
TENSORBOARD_ENV = "AIP_TENSORBOARD_LOG_DIR"


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
            return train(config, target_name, run_index, examples_dir, model_dir, model_uri)
    started = time.perf_counter()
    resolved = resolve_target(config.model, config.training, config.target(target_name))
    seed = config.seed + run_index
    seed_everything(seed, resolved.training.deterministic)
    runtime = runtime_for(resolved.target.kind, resolved.target.allow_cpu_fallback)
    if runtime.fallback_reason:
        log.warning("falling back to CPU: %s", runtime.fallback_reason)
    set_precision_policy(resolved.training, runtime)
    manifest = Manifest.read(examples_dir)

    if runtime.is_parameter_server:
        from components.train.parameter_server import fit_parameter_server

        if warm_start_from:
            log.warning("warm start is not supported with parameter servers; %s trains cold", target_name)
        model, plan, fit_result = fit_parameter_server(resolved, runtime, manifest, examples_dir, model_dir, seed)
    else:
        model, plan, fit_result = fit_synchronous(resolved, runtime, manifest, examples_dir, model_dir, seed,
                                                  warm_start_from)

    calibrators = fit_calibrators(model, manifest, examples_dir, resolved.training)
    task_metrics = evaluate(model, manifest, examples_dir, resolved.training, calibrators)
    export_dir = Path(model_dir) / SAVED_MODEL_DIR
    # a TPU run exports the same model rebuilt off the TPU, its tables read back from the TPU embedding layer
    servable = servable_copy(model, runtime.strategy, manifest) if runtime.is_tpu else model
    export_serving_model(servable, manifest, examples_dir, export_dir, calibrators)
    write_warm_start_state(servable, manifest, transform_vocabularies(tft_output_dir(examples_dir, manifest)),
                           export_dir)
    exported_uri = str(export_dir) if model_uri is None else f"{model_uri.rstrip('/')}/{SAVED_MODEL_DIR}"

    curve = [CurvePoint(step=step, loss=loss, epoch=epoch, eval_logloss=value)
             for step, loss, epoch, value in fit_result.curve]
    # The curve follows the model's own output epoch by epoch: before the calibration step, if there is one.
    eval_logloss = float(np.mean([m.logloss if m.uncalibrated_logloss is None else m.uncalibrated_logloss
                                  for m in task_metrics.values()]))
    if curve:
        last_epoch = curve[-1].epoch if curve[-1].epoch is not None else resolved.training.epochs
        curve[-1] = curve[-1].model_copy(update={"eval_logloss": eval_logloss, "epoch": last_epoch})
    if fit_result.tensorboard is not None and curve:
        fit_result.tensorboard.write_eval(curve[-1].step, eval_logloss)
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
        metrics=task_metrics,
        curve=curve,
        embedding_tables=[EmbeddingTableMemory(**table) for table in model.table_memory()],
        model_uri=exported_uri,
        warm_start=fit_result.warm_start,
        calibrators=calibrators,
    )


# -- set-up ---------------------------------------------------------------------------------------
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


class StepPlan:
    """Steps of a run, grouped into equal chunks; a checkpoint is written after every chunk.

    A chunk is a whole number of executions (`steps_per_execution` steps each) and an epoch a whole number
    of chunks, so a resumed run restarts at a chunk boundary, each epoch trains every full batch, and the run
    ends at exactly `total_steps`. Only when no such split is possible without collapsing to one step per
    execution are a few steps per epoch left out: `dropped_steps_per_epoch` says how many (RunSummary and
    the report show it).
    """

    def __init__(self, train_examples: int, training: TrainingConfig):
        self.steps_per_epoch = train_examples // training.global_batch_size
        if self.steps_per_epoch < 1:
            raise ValueError(
                f"{train_examples} train examples are fewer than one global batch of {training.global_batch_size}"
            )
        self.chunks_per_epoch = chunks_per_epoch_for(self.steps_per_epoch, training.checkpoints_per_epoch)
        chunk = self.steps_per_epoch // self.chunks_per_epoch
        self.steps_per_execution = steps_per_execution_for(chunk, training.steps_per_execution)
        self.chunk_steps = chunk - chunk % self.steps_per_execution
        self.epochs = training.epochs
        self.chunks = training.epochs * self.chunks_per_epoch
        self.total_steps = self.chunks * self.chunk_steps
        self.dropped_steps_per_epoch = self.steps_per_epoch - self.chunks_per_epoch * self.chunk_steps

    @property
    def dropped_steps(self) -> int:
        return self.dropped_steps_per_epoch * self.epochs

    def ends_epoch(self, chunk_index: int) -> bool:
        """Whether chunk `chunk_index` (0-based over the run) is an epoch's last."""
        return (chunk_index + 1) % self.chunks_per_epoch == 0


def chunks_per_epoch_for(steps_per_epoch: int, checkpoints_per_epoch: int) -> int:
    """The fewest chunks ≥ `checkpoints_per_epoch` (and ≤ twice that) that split the epoch evenly; else
    `checkpoints_per_epoch` itself (the remainder steps are then dropped and reported)."""
    wanted = min(checkpoints_per_epoch, steps_per_epoch)
    for chunks in range(wanted, min(2 * wanted, steps_per_epoch) + 1):
        if steps_per_epoch % chunks == 0:
            return chunks
    return wanted


def steps_per_execution_for(chunk: int, configured: int, max_waste: float = 0.05) -> int:
    """The largest steps-per-execution ≤ `configured` that divides a chunk, so no step is dropped (chunk 279,
    configured 8 → 3, not 8, which would drop 7 steps every epoch). Only when that divisor is below a quarter
    of `configured` (a prime chunk: it would be 1) does speed win: the largest value that drops at most
    `max_waste` of the chunk."""
    limit = min(configured, chunk)
    divisor = max(d for d in range(1, limit + 1) if chunk % d == 0)
    if 4 * divisor >= configured:
        return divisor
    return max(d for d in range(1, limit + 1) if chunk % d <= max_waste * chunk)


class FitResult:
    """`curve`: (step, chunk training loss) or (step, loss, epoch or None, eval log-loss or None) per chunk;
    `input_stall_fraction`: the share of steady-state step time spent waiting for input (None: not measured)."""

    def __init__(self, curve: list[tuple], examples_per_second: float, tensorboard: TensorBoardScalars | None = None,
                 warm_start: WarmStartSummary | None = None, input_stall_fraction: float | None = None):
        self.curve = [(*point, None, None) if len(point) == 2 else tuple(point) for point in curve]
        self.examples_per_second = examples_per_second
        self.tensorboard = tensorboard
        self.warm_start = warm_start
        self.input_stall_fraction = input_stall_fraction


def tensorboard_scalars() -> TensorBoardScalars | None:
    """TensorBoard scalars to `AIP_TENSORBOARD_LOG_DIR` when Vertex (or the user) sets it."""
    log_dir = os.environ.get(TENSORBOARD_ENV)
    return TensorBoardScalars(log_dir) if log_dir else None


def checkpoint_dir(model_dir: str) -> str:
    """Locally checkpoints live in the model dir. On Vertex they go under the preemption-safe
    `AIP_CHECKPOINT_DIR`, nested by this run's model dir (its own output artifact, the same when the job
    restarts): a task resumes its own checkpoints, never those of another run sharing the variable."""
    import hashlib

    shared = os.environ.get("AIP_CHECKPOINT_DIR")
    if not shared:
        return str(Path(model_dir) / CHECKPOINT_DIR)
    run_key = hashlib.sha256(str(model_dir).rstrip("/").encode()).hexdigest()[:16]
    return f"{shared.rstrip('/')}/run-{run_key}"


def checkpoint_manager(model: RankingModel, model_dir: str) -> tf.train.CheckpointManager:
    objects = {"model": model, "optimizer": model.optimizer}
    if model.embedding_optimizer is not None:
        objects["embedding_optimizer"] = model.embedding_optimizer
    return tf.train.CheckpointManager(tf.train.Checkpoint(**objects), checkpoint_dir(model_dir), max_to_keep=2)


def compiled_model(
    resolved: ResolvedTarget, runtime: Runtime, manifest: Manifest, sample_features: dict, steps_per_execution: int
) -> RankingModel:
    """The model with built variables and optimizer slots; call under the strategy scope."""
    per_replica_batch = resolved.training.global_batch_size // runtime.replicas
    dense_optimizer, embedding_optimizer = make_optimizers(resolved.training)
    model = build_model(
        resolved.model, manifest, per_replica_batch, tpu_embedding=runtime.is_tpu,
        embedding_optimizer=tpu_embedding_optimizer(resolved.training), placement=table_placement(resolved.training, runtime),
    )
    model.compile(
        optimizer=dense_optimizer,
        embedding_optimizer=embedding_optimizer,
        loss={task: keras.losses.BinaryCrossentropy() for task in manifest.tasks},
        steps_per_execution=steps_per_execution,
        jit_compile=runtime.is_tpu,
    )
    model(sample_features)
    model.build_optimizers()
    return model


def fit_synchronous(
    resolved: ResolvedTarget, runtime: Runtime, manifest: Manifest, examples_dir: str, model_dir: str, seed: int,
    warm_start_from: str | None = None,
) -> tuple[RankingModel, StepPlan, FitResult]:
    training = resolved.training
    if training.global_batch_size % runtime.replicas:
        raise ValueError(
            f"global batch {training.global_batch_size} does not split evenly over {runtime.replicas} replicas"
        )
    plan = StepPlan(round(manifest.splits["train"].examples * (1 - calibration_holdout(training))), training)
    train_data = make_dataset(
        examples_dir,
        manifest,
        "train",
        InputOptions(
            batch_size=training.global_batch_size,
            training=True,
            seed=seed,
            shuffle_buffer=training.shuffle_buffer,
            deterministic=training.deterministic,
            drop_remainder=True,
            repeat=True,
            holdout_fraction=calibration_holdout(training),
        ),
    )
    sample_features, _ = next(iter(train_data.take(1)))
    # Keras 3.15's multi-step loop fails under MirroredStrategy on CPU/GPU ("You must feed a value for
    # placeholder ... while/cond"), so several synchronous replicas run one step per execution.
    steps_per_execution = plan.steps_per_execution if runtime.replicas == 1 or runtime.is_tpu else 1
    # its variables stay outside the strategy scope; no TPU kernel for tf.timestamp, which op determinism refuses
    stall = None if runtime.is_tpu or training.deterministic else InputStallMeter()
    with runtime.strategy.scope():
        model = compiled_model(resolved, runtime, manifest, sample_features, steps_per_execution)
        manager = checkpoint_manager(model, model_dir)
        if manager.latest_checkpoint:
            manager.checkpoint.restore(manager.latest_checkpoint).assert_existing_objects_matched()
            log.info("resumed from %s", manager.latest_checkpoint)
        warm_start = None
        if warm_start_from and not manager.latest_checkpoint:
            try:
                vocabularies = transform_vocabularies(tft_output_dir(examples_dir, manifest))
                warm_start = apply_state(model, manifest, vocabularies, warm_start_from)
            except WarmStartUnavailable as error:
                log.warning("training cold: %s", error)
    done_steps = int(model.optimizer.iterations.numpy())
    if done_steps % plan.chunk_steps:
        raise RuntimeError(f"checkpoint at step {done_steps} is not on a chunk boundary of {plan.chunk_steps} steps")
    if done_steps:  # resumed: the batches an uninterrupted run would see next (the same ones when deterministic)
        train_data = train_data.skip(done_steps)
    curve, clock, tensorboard = LossCurve(), StepClock(), tensorboard_scalars()
    callbacks: list[keras.callbacks.Callback] = [StopOnNonFiniteLoss(), SaveCheckpoint(manager)]
    if plan.epochs > 1:
        eval_split = EvalSplit(model, manifest, examples_dir, training)
        callbacks.append(EpochEvaluation(plan.ends_epoch, plan.chunks_per_epoch, plan.chunks - 1, eval_split.logloss))
    callbacks += [curve, clock] + ([tensorboard] if tensorboard else [])
    callbacks.append(TrainingProgress(plan.total_steps, plan.chunks_per_epoch * plan.chunk_steps, training.global_batch_size))
    if stall is not None:
        # Keras's compiled train function calls `self.train_step`: the meter replaces it on this instance only.
        model.train_step = stall.wrap(model.train_step, model)  # type: ignore[method-assign]
        callbacks.append(stall)
    if done_steps < plan.total_steps:
        model.fit(
            train_data,
            steps_per_epoch=plan.chunk_steps,
            epochs=plan.chunks,
            initial_epoch=done_steps // plan.chunk_steps,
            callbacks=callbacks,
            verbose=0,
        )
    steps_per_second = clock.steady_steps_per_second()
    examples_per_second = steps_per_second * training.global_batch_size if steps_per_second else 0.0
    stall_fraction = stall.input_stall_fraction() if stall is not None else None
    return model, plan, FitResult(curve.points, examples_per_second, tensorboard, warm_start=warm_start,
                                  input_stall_fraction=stall_fraction)


# -- evaluation -----------------------------------------------------------------------------------
def predict_split(
    model: RankingModel, manifest: Manifest, examples_dir: str, split: str, batch_size: int,
    holdout_fraction: float = 0.0,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(labels, probabilities) per task over every example of `split` (with `holdout_fraction`: of its
    held-out slice only), in file order."""
    data = make_dataset(
        examples_dir,
        manifest,
        split,
        InputOptions(batch_size=batch_size, training=False, drop_remainder=False, deterministic=True,
                     holdout_fraction=holdout_fraction, holdout="only"),
    )
    predict = tf.function(lambda features: model(features, training=False))
    return labels_and_probabilities(data, predict, list(manifest.tasks))


def labels_and_probabilities(data, predict, tasks: list[str]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Run `predict` over every batch of `data`: (labels, probabilities) per task, in batch order."""
    labels: dict[str, list] = {task: [] for task in tasks}
    probabilities: dict[str, list] = {task: [] for task in tasks}
    for features, batch_labels in data:
        outputs = predict(features)
        for task in tasks:
            labels[task].append(batch_labels[task].numpy().reshape(-1))
            probabilities[task].append(outputs[task].numpy().reshape(-1))
    return (
        {task: np.concatenate(v) for task, v in labels.items()},
        {task: np.concatenate(v) for task, v in probabilities.items()},
    )


class EvalSplit:
    """The eval split's mean log-loss over tasks, with one traced prediction function reused every epoch."""

    def __init__(self, model: RankingModel, manifest: Manifest, examples_dir: str, training: TrainingConfig):
        self.data = make_dataset(
            examples_dir,
            manifest,
            "eval",
            InputOptions(batch_size=max(training.global_batch_size, 1024), training=False, drop_remainder=False,
                         deterministic=True),
        )
        self.tasks = list(manifest.tasks)
        self.predict = tf.function(lambda features: model(features, training=False))

    def logloss(self) -> float:
        labels, probabilities = labels_and_probabilities(self.data, self.predict, self.tasks)
        return float(np.mean([ranking_metrics.logloss(labels[t], probabilities[t]) for t in self.tasks]))


def calibration_holdout(training: TrainingConfig) -> float:
    """The share of train examples held out of training to fit the calibration step (0 without one, and when it
    is fitted on the latest train days, which are trained on as well)."""
    if training.calibration == "none" or training.calibration_data != "holdout":
        return 0.0
    return training.calibration_holdout_fraction


def fit_calibrators(
    model: RankingModel, manifest: Manifest, examples_dir: str, training: TrainingConfig
) -> dict[str, Calibrator]:
    """Per task, `training.calibration` fitted on the held-out train slice; empty when it is none."""
    if training.calibration == "none":
        return {}
    batch_size = max(training.global_batch_size, 1024)
    if training.calibration_data == "latest_train_days":
        if CALIBRATION_SPLIT not in manifest.splits:
            raise ValueError("training.calibration_data is latest_train_days, but these examples have no calibration "
                             "split: preprocess them with split.calibration_days ≥ 1")
        labels, probabilities = predict_split(model, manifest, examples_dir, CALIBRATION_SPLIT, batch_size)
    else:
        labels, probabilities = predict_split(model, manifest, examples_dir, "train", batch_size,
                                              holdout_fraction=calibration_holdout(training))
    return {task: fit_calibrator(training.calibration, labels[task], probabilities[task]) for task in manifest.tasks}


def evaluate(model: RankingModel, manifest: Manifest, examples_dir: str, training: TrainingConfig,
             calibrators: dict[str, Calibrator] | None = None) -> dict[str, TaskMetrics]:
    """Eval-split metrics of what serving returns: the model's output, calibrated when a calibrator is given."""
    labels, probabilities = predict_split(model, manifest, examples_dir, "eval", max(training.global_batch_size, 1024))
    calibrators = calibrators or {}
    return {
        task: task_metrics(labels[task], calibrators[task].apply(probabilities[task]), probabilities[task])
        if task in calibrators else task_metrics(labels[task], probabilities[task])
        for task in manifest.tasks
    }
