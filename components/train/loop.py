"""The training loop's shared pieces and the synchronous fit.

Both loops, Keras `fit` here (one device, mirrored replicas, TPU) and the parameter-server coordinator
(`components.train.parameter_server`), train the same way:

    plan the run in checkpointed chunks (`StepPlan`) → build and compile the model with its optimizers under
    the strategy scope (`compiled_model`) → restore the latest checkpoint (`checkpoint_manager`) → train chunk
    by chunk, saving after each → hand back a `FitResult` (loss curve, steady examples/s, input stall)
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import keras
import tensorflow as tf

from components.contracts.manifest import Manifest
from components.contracts.run_summary import CurvePoint, WarmStartSummary
from components.preprocess.vocabulary_file import transform_vocabularies
from components.train.block_files import CachePlan, cache_plan
from components.train.callbacks import (
    EpochEvaluation,
    LossCurve,
    SaveCheckpoint,
    StepClock,
    StopOnNonFiniteLoss,
    TensorBoardScalars,
)
from components.train.embedding import table_factory
from components.train.embedding_optimizers import make_optimizers
from components.train.export import tft_output_dir
from components.train.input import InputOptions, make_dataset
from components.train.input_capacity import input_stall_fraction
from components.train.models import RankingModel, build_model
from components.train.optimization import table_config_optimizer
from components.train.predictions import EvalSplit
from components.train.run_clock import RunClock, examples_rate
from components.train.run_paths import TENSORBOARD_ENV, checkpoint_dir
from components.train.step_plan import CheckpointCadence, StepPlan, calibration_holdout
from components.train.strategy import Runtime, table_placement
from components.train.tf_input_capacity import input_examples_per_second, paired_step_times
from components.train.tf_step import bind_train_step, build_optimizers
from components.train.training_progress import TrainingProgress
from components.train.warm_start import WarmStartUnavailable, apply_state
from configs.training import ResolvedTarget, TrainingConfig

log = logging.getLogger(__name__)



def train_input_options(training: TrainingConfig, seed: int, cache: bool = False) -> InputOptions:
    """The train split as both loops read it: shuffled by the run's seed, full batches, repeated, the
    calibration slice held out; `cache`: decoded blocks kept in memory after the first epoch (`train_cache`); from
    blocks, packed batches."""
    return InputOptions(
        batch_size=training.global_batch_size,
        training=True,
        seed=seed,
        shuffle_buffer=training.shuffle_buffer,
        deterministic=training.deterministic,
        drop_remainder=True,
        repeat=True,
        holdout_fraction=calibration_holdout(training),
        cache=cache,
        packed=True,  # blocks: the two matrices, split in the model's first step (components.train.packed_batch)
    )


def synchronous_run_input(resolved: ResolvedTarget, runtime: Runtime, manifest: Manifest,
                          seed: int) -> tuple[StepPlan, CachePlan, InputOptions]:
    """A synchronous run's plan, cache decision and train input options (both synchronous loops: one machine's
    `fit` and several workers'), once the global batch is checked to split evenly over the replicas."""
    training = resolved.training
    if training.global_batch_size % runtime.replicas:
        raise ValueError(
            f"global batch {training.global_batch_size} does not split evenly over {runtime.replicas} replicas"
        )
    cache = train_cache(manifest, training)
    return StepPlan.for_run(manifest, training), cache, train_input_options(training, seed, cache.cache)


def train_cache(manifest: Manifest, training: TrainingConfig) -> CachePlan:
    """What `training.cache` decides for this run's train split (logged: the run summary keeps the bytes)."""
    plan = cache_plan(manifest, "train", training.cache, training.cache_memory_mb * 2**20)
    log.info("input cache: %s", plan.reason)
    return plan


def input_format(manifest: Manifest) -> str:
    return "blocks" if manifest.splits["train"].blocks is not None and manifest.block_layout is not None else \
        "tf.Example"


# -- what a fit hands back ---------------------------------------------------------------------------
@dataclass
class FitResult:
    """`curve`: one point per chunk (training loss; epoch and eval log-loss where the chunk ends an evaluated
    epoch); `input_stall_fraction`: the share of steady-state step time spent waiting for input (None: not
    measured); input and step examples/s: see `components.train.input_capacity`."""

    curve: list[CurvePoint]
    examples_per_second: float
    tensorboard: TensorBoardScalars | None = None
    warm_start: WarmStartSummary | None = None
    input_stall_fraction: float | None = None
    input_examples_per_second: float | None = None  # the train dataset alone, before training
    step_examples_per_second: float | None = None  # the step's own rate, waits excluded
    input_format: str | None = None
    input_cache_bytes: int = 0


# -- model, checkpoints, TensorBoard -----------------------------------------------------------------
def tensorboard_scalars() -> TensorBoardScalars | None:
    """TensorBoard scalars to `AIP_TENSORBOARD_LOG_DIR` when Vertex (or the user) sets it."""
    log_dir = os.environ.get(TENSORBOARD_ENV)
    return TensorBoardScalars(log_dir) if log_dir else None


def warm_start_model(model: RankingModel, examples_dir: str, manifest: Manifest,
                     warm_start_from: str) -> WarmStartSummary | None:
    """Start `model` from the champion's saved state (embedding rows by vocabulary token, dense weights where shapes
    match); None, with a warning, when the champion cannot be used and the run trains cold."""
    try:
        vocabularies = transform_vocabularies(tft_output_dir(examples_dir, manifest))
        return apply_state(model, manifest, vocabularies, warm_start_from)
    except WarmStartUnavailable as error:
        log.warning("training cold: %s", error)
        return None


def checkpoint_manager(model: RankingModel, model_dir: str, directory: str | None = None) -> tf.train.CheckpointManager:
    """The run's checkpoints under `checkpoint_dir(model_dir)`, or under `directory` when given (a multi-worker run's
    non-chief worker: its scratch dir)."""
    objects = {"model": model, "optimizer": model.optimizer}
    if model.embedding_optimizer is not None:
        objects["embedding_optimizer"] = model.embedding_optimizer
    return tf.train.CheckpointManager(tf.train.Checkpoint(**objects), directory or checkpoint_dir(model_dir),
                                      max_to_keep=2)


def compiled_model(
    resolved: ResolvedTarget, runtime: Runtime, manifest: Manifest, sample_features: dict, steps_per_execution: int
) -> RankingModel:
    """The model with built variables and optimizer slots; call under the strategy scope."""
    per_replica_batch = resolved.training.global_batch_size // runtime.replicas
    dense_optimizer, embedding_optimizer = make_optimizers(resolved.training)
    model = bind_train_step(build_model(
        resolved.model, manifest, per_replica_batch,
        table_factory(runtime.is_tpu, table_placement(resolved.training, runtime)),
        table_config_optimizer(resolved.training),
    ))
    model.compile(
        optimizer=dense_optimizer,
        embedding_optimizer=embedding_optimizer,
        loss={task: keras.losses.BinaryCrossentropy() for task in manifest.tasks},
        steps_per_execution=steps_per_execution,
        jit_compile=runtime.is_tpu,
    )
    model(sample_features)
    build_optimizers(model)
    return model


# -- the synchronous fit -------------------------------------------------------------------------------
def fit_synchronous(
    resolved: ResolvedTarget, runtime: Runtime, manifest: Manifest, examples_dir: str, model_dir: str, seed: int,
    warm_start_from: str | None = None, clock: RunClock | None = None,
) -> tuple[RankingModel, StepPlan, FitResult]:
    """Keras `fit` over the plan's chunks ('epochs' of fit), resuming from the latest checkpoint; a fresh run
    with `warm_start_from` starts from the champion's weights. `clock` gets the run's phases (a fresh one without)."""
    clock = clock or RunClock()
    training = resolved.training
    plan, cache, options = synchronous_run_input(resolved, runtime, manifest, seed)
    train_data = make_dataset(examples_dir, manifest, "train", options)
    # measured on a dataset of its own: a shuffle's reshuffle seeds (and a cache) belong to the dataset object,
    # so reading the training one for a fixed time would change the order the run then trains on; the batches it
    # holds feed the step from memory after training (the step's rate and the input stall)
    held: list = []
    with clock.phase("input_check"):
        input_rate = input_examples_per_second(make_dataset(examples_dir, manifest, "train", options),
                                               training.global_batch_size, training.input_capacity_seconds, held)
    sample_features, _ = next(iter(train_data.take(1)))
    # Keras 3.15's multi-step loop fails under MirroredStrategy on CPU/GPU ("You must feed a value for
    # placeholder ... while/cond"), so several synchronous replicas run one step per execution.
    steps_per_execution = plan.steps_per_execution if runtime.replicas == 1 or runtime.is_tpu else 1
    with runtime.strategy.scope():
        model = compiled_model(resolved, runtime, manifest, sample_features, steps_per_execution)
        manager = checkpoint_manager(model, model_dir)
        if manager.latest_checkpoint:
            with clock.phase("checkpoints"):
                manager.checkpoint.restore(manager.latest_checkpoint).assert_existing_objects_matched()
            log.info("resumed from %s", manager.latest_checkpoint)
        warm_start = None
        if warm_start_from and not manager.latest_checkpoint:
            warm_start = warm_start_model(model, examples_dir, manifest, warm_start_from)
    done_steps = int(model.optimizer.iterations.numpy())
    if done_steps % plan.chunk_steps:
        raise RuntimeError(f"checkpoint at step {done_steps} is not on a chunk boundary of {plan.chunk_steps} steps")
    pipeline = train_data
    if done_steps:  # resumed: the batches an uninterrupted run would see next (the same ones when deterministic)
        train_data = train_data.skip(done_steps)

    curve, tensorboard = LossCurve(), tensorboard_scalars()
    # the step clock first: its chunk ends before the checkpoint and the evaluation are timed
    callbacks: list[keras.callbacks.Callback] = [
        StepClock(clock), StopOnNonFiniteLoss(),
        SaveCheckpoint(manager, clock, CheckpointCadence(training.checkpoint_every_minutes), plan.chunks - 1)]
    if plan.epochs > 1:
        eval_split = EvalSplit(model, manifest, examples_dir, training)
        callbacks.append(EpochEvaluation(plan.ends_epoch, plan.chunks_per_epoch, plan.chunks - 1, eval_split.logloss,
                                         clock, training.eval_every_epochs))
    callbacks.append(curve)
    callbacks.append(TrainingProgress.of_plan(plan, training.global_batch_size))
    if tensorboard is not None:
        callbacks.append(tensorboard)

    clock.close_startup()
    if done_steps < plan.total_steps:
        model.fit(
            train_data,
            steps_per_epoch=plan.chunk_steps,
            epochs=plan.chunks,
            initial_epoch=done_steps // plan.chunk_steps,
            callbacks=callbacks,
            verbose=0,
        )
    step_rate, stall = None, None
    # after training, the run's pipeline against its batches held in memory, in alternating rounds by the host's
    # clock around the train function (input_capacity.py); not on TPU (untried there)
    if held and not runtime.is_tpu:
        with clock.phase("input_check"):
            rounds = paired_step_times(model, runtime.strategy, pipeline, held, training.input_capacity_seconds,
                                       plan.steps_per_epoch)
        with clock.phase("checkpoints"):
            manager.checkpoint.restore(manager.latest_checkpoint).assert_existing_objects_matched()  # as trained
        if int(model.optimizer.iterations.numpy()) != plan.total_steps:
            raise RuntimeError(f"the model restored after the paired step timing is at step "
                               f"{int(model.optimizer.iterations.numpy())}, not the run's {plan.total_steps}")
        memory_step = rounds.memory_seconds_per_step()
        step_rate = examples_rate(1, training.global_batch_size, memory_step) if memory_step else None
        stall = input_stall_fraction(rounds)
    clock.input_wait_share(stall)  # the TensorFlow step takes its batches inside: the stall's share of steady time
    examples_per_second = clock.steady_examples_per_second(training.global_batch_size)
    return model, plan, FitResult(
        curve=[CurvePoint(step=step, loss=loss, epoch=epoch, eval_logloss=eval_logloss)
               for step, loss, epoch, eval_logloss in curve.points],
        examples_per_second=examples_per_second,
        tensorboard=tensorboard,
        warm_start=warm_start,
        input_stall_fraction=stall,
        input_examples_per_second=input_rate,
        step_examples_per_second=step_rate,
        input_format=input_format(manifest),
        input_cache_bytes=cache.bytes,
    )
