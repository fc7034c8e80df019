"""Synchronous training over several workers (MultiWorkerMirroredStrategy): the TensorFlow lane's own loop.

Keras 3.15's `fit` cannot start under MultiWorkerMirroredStrategy with the model's dict batches: before building
the model it reduces the first distributed batch with `strategy.reduce` (keras/src/backend/tensorflow/trainer.py,
`_maybe_symbolic_build`), which that strategy cannot do for a dict of per-replica tensors. This loop never asks it
to: the model and its optimizer slots are built under the strategy scope before the first step (`compiled_model`),
and each execution runs the plan's steps per execution (in calls of a `tf.function` of up to `UNROLLED_STEPS`
steps), each `strategy.run` of the lane's own step (`tf_step.train_step`, the one `fit` calls) over the workers'
distributed batches:

    every worker: the plan's chunks → per chunk, its executions (steps per execution steps each, one call)
                  → the chunk's logs reduced over the replicas → the callbacks `fit` would call (step clock,
                  NaN stop, checkpoint, loss curve; on the chief also per-epoch evaluation, progress, TensorBoard)

The optimizer, learning-rate scaling and warm-up, loss and metrics are the single-host lane's (`compiled_model`).

Input (`replica_batches`): each worker reads the run's train order (its seed's, the same as one process reads) and
keeps its own replicas' rows of every global batch, as MirroredStrategy splits a global batch over one machine's
replicas (replica r the r-th slice). The global batches therefore do not depend on how the replicas are spread over
machines: two workers of one device train the same examples, step by step, as one process with two devices
(tests/components/train/test_multi_worker.py). The price: every worker decodes every block (the reader's own
rate: `benchmarks/input_pipeline.py`), so the input work does not shrink with workers.

Checkpoints: every worker saves (TensorFlow's multi-worker rule: a save may need the other workers), the chief to
the run's checkpoint directory, the others to a scratch directory of their own that is removed after the run; every
worker restores the chief's latest checkpoint, so a restarted job resumes where the chief saved.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import keras
import tensorflow as tf

from components.contracts.manifest import Manifest
from components.contracts.run_summary import CurvePoint
from components.train.callbacks import EpochEvaluation, LossCurve, SaveCheckpoint, StepClock, StopOnNonFiniteLoss
from components.train.input import InputOptions, make_dataset
from components.train.loop import (
    FitResult,
    checkpoint_manager,
    compiled_model,
    input_format,
    synchronous_run_input,
    tensorboard_scalars,
    warm_start_model,
)
from components.train.models import RankingModel
from components.train.predictions import EvalSplit
from components.train.run_clock import RunClock
from components.train.run_paths import checkpoint_dir
from components.train.step_plan import CheckpointCadence, StepPlan
from components.train.strategy import Runtime
from components.train.tf_input_capacity import input_examples_per_second
from components.train.training_progress import TrainingProgress
from configs.training import ResolvedTarget

log = logging.getLogger(__name__)


@contextmanager
def worker_model_dir(runtime: Runtime, model_dir: str) -> Iterator[str]:
    """Where this process writes the run: `model_dir` for the chief (and every single-process run), else a
    scratch directory of this worker's own, removed afterwards (TensorFlow's multi-worker saving rule: every worker
    saves, only the chief's copy is kept)."""
    if runtime.is_chief:
        yield model_dir
        return
    scratch = tempfile.mkdtemp(prefix="adrank-worker-")
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def replica_batches(examples_dir: str, manifest: Manifest, options: InputOptions, skip_steps: int = 0):
    """The `dataset_fn` of `distribute_datasets_from_function`: this worker's (input pipeline's) per-replica
    batches, its local replicas' consecutive slices of every global batch of the run's order, one replica's batch
    per element, in replica order (the strategy hands a worker's elements to its replicas in turn). `skip_steps`:
    global batches already trained (a resumed run)."""

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        per_replica = context.get_per_replica_batch_size(options.batch_size)
        local = context.num_replicas_in_sync // context.num_input_pipelines
        first = context.input_pipeline_id * local * per_replica
        global_batches = make_dataset(examples_dir, manifest, "train", options)
        if skip_steps:
            global_batches = global_batches.skip(skip_steps)

        def shares(features, labels):
            return tf.nest.map_structure(
                lambda t: tf.reshape(t[first:first + local * per_replica], [local, per_replica, *t.shape[1:]]),
                (features, labels))

        return global_batches.map(shares, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).unbatch() \
            .prefetch(tf.data.AUTOTUNE)

    return dataset_fn


# Steps traced into one call, at most. A graph loop (`tf.range`) over `strategy.run` fails under
# MultiWorkerMirroredStrategy here (TensorFlow 2.21, CPU): the sparse table gradients' all-gather (a `cond` on the
# replicas' row counts) inside the loop's body met another member's gather of a different shape ("Shape mismatch in
# the collective instance"); the same steps written out one after another in the traced function train correctly.
UNROLLED_STEPS = 16


def unrolled_steps(steps_per_execution: int) -> int:
    """The steps one call runs: the largest divisor of the plan's steps per execution up to `UNROLLED_STEPS` (an
    execution is then that many calls, back to back, with no host check between them)."""
    return max(d for d in range(1, min(steps_per_execution, UNROLLED_STEPS) + 1) if steps_per_execution % d == 0)


def execution_function(model: RankingModel, strategy: tf.distribute.Strategy, steps: int):
    """One call: `steps` steps written out in the traced function, each `strategy.run` of the lane's step (the one
    `fit` calls) over the next distributed batch; the last step's logs, per replica."""

    def replica_step(features, labels):
        return model.train_step((features, labels))

    @tf.function
    def execution(iterator):
        for _ in range(steps - 1):
            strategy.run(replica_step, args=next(iterator))
        return strategy.run(replica_step, args=next(iterator))

    return execution


def fit_multi_worker(
    resolved: ResolvedTarget, runtime: Runtime, manifest: Manifest, examples_dir: str, model_dir: str, seed: int,
    warm_start_from: str | None = None, clock: RunClock | None = None, write_dir: str | None = None,
) -> tuple[RankingModel, StepPlan, FitResult]:
    """Train over every worker of `runtime` (MultiWorkerMirroredStrategy) through the plan's chunks, resuming from the
    chief's latest checkpoint under `model_dir`; this worker saves under `write_dir` (`worker_model_dir`; the chief's
    is `model_dir`). Every worker calls it with the same arguments and runs the same collectives in the same order."""
    clock = clock or RunClock()
    training, strategy = resolved.training, runtime.strategy
    write_dir = write_dir or model_dir
    plan, cache, options = synchronous_run_input(resolved, runtime, manifest, seed)
    with clock.phase("input_check"):  # this worker's reader alone (each worker reads the whole order)
        input_rate = input_examples_per_second(make_dataset(examples_dir, manifest, "train", options),
                                               training.global_batch_size, training.input_capacity_seconds)
    sample_features, _ = next(iter(make_dataset(examples_dir, manifest, "train", options).take(1)))
    latest = tf.train.latest_checkpoint(checkpoint_dir(model_dir))  # the chief's, whichever worker this is
    with strategy.scope():
        model = compiled_model(resolved, runtime, manifest, sample_features, plan.steps_per_execution)
        # the chief's under the run's checkpoint dir (AIP_CHECKPOINT_DIR's on Vertex); another worker's in its scratch
        manager = checkpoint_manager(model, model_dir, None if runtime.is_chief else str(Path(write_dir) / "checkpoints"))
        if latest:
            with clock.phase("checkpoints"):
                manager.checkpoint.restore(latest).assert_existing_objects_matched()
            log.info("resumed from %s", latest)
        warm_start = None
        if warm_start_from and not latest:
            warm_start = warm_start_model(model, examples_dir, manifest, warm_start_from)
    done_steps = int(model.optimizer.iterations.numpy())
    if done_steps % plan.chunk_steps:
        raise RuntimeError(f"checkpoint at step {done_steps} is not on a chunk boundary of {plan.chunk_steps} steps")

    iterator = iter(strategy.distribute_datasets_from_function(
        replica_batches(examples_dir, manifest, options, done_steps)))
    per_call = unrolled_steps(plan.steps_per_execution)
    execution = execution_function(model, strategy, per_call)
    curve = LossCurve()
    tensorboard = tensorboard_scalars() if runtime.is_chief else None
    callbacks: list[keras.callbacks.Callback] = [  # in `fit_synchronous`'s order: the step clock first
        StepClock(clock), StopOnNonFiniteLoss(),
        SaveCheckpoint(manager, clock, CheckpointCadence(training.checkpoint_every_minutes), plan.chunks - 1)]
    if plan.epochs > 1 and runtime.is_chief:  # no collective inside: the other workers wait at the next step
        callbacks.append(EpochEvaluation(plan.ends_epoch, plan.chunks_per_epoch, plan.chunks - 1,
                                         EvalSplit(model, manifest, examples_dir, training).logloss, clock,
                                         training.eval_every_epochs))
    callbacks.append(curve)
    if runtime.is_chief:
        callbacks.append(TrainingProgress.of_plan(plan, training.global_batch_size))
    if tensorboard is not None:
        callbacks.append(tensorboard)
    hooks = keras.callbacks.CallbackList(callbacks, model=model)

    log.info("multi-worker loop: %d chunk(s) of %d step(s), %d replica(s) over %d worker(s)", plan.chunks,
             plan.chunk_steps, runtime.replicas, runtime.processes)
    clock.close_startup()
    executions = plan.chunk_steps // plan.steps_per_execution
    hooks.on_train_begin()
    for chunk in range(done_steps // plan.chunk_steps, plan.chunks):
        model.reset_metrics()
        hooks.on_epoch_begin(chunk)
        for number in range(executions):
            hooks.on_train_batch_begin(number * plan.steps_per_execution)
            for _ in range(plan.steps_per_execution // per_call):
                logs = execution(iterator)
        # over the replicas, as `fit` reduces its logs; a collective every worker joins
        hooks.on_epoch_end(chunk, {name: float(strategy.reduce("MEAN", value, axis=None))
                                   for name, value in logs.items()})
    model.optimizer.finalize_variable_values(model.trainable_weights)  # as `fit` ends
    hooks.on_train_end()
    return model, plan, FitResult(
        curve=[CurvePoint(step=step, loss=loss, epoch=epoch, eval_logloss=eval_logloss)
               for step, loss, epoch, eval_logloss in curve.points],
        examples_per_second=clock.steady_examples_per_second(training.global_batch_size),
        tensorboard=tensorboard,
        warm_start=warm_start,
        input_stall_fraction=None,  # the paired rounds are timed by one process's clock: not over several workers
        input_examples_per_second=input_rate,
        input_format=input_format(manifest),
        input_cache_bytes=cache.bytes,
    )
