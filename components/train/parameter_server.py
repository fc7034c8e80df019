"""Asynchronous training with parameter servers: a `ClusterCoordinator` loop (Keras `fit` has none).

The coordinator (this process, the chief) schedules steps on the workers; each worker reads its own
input pipeline and pushes updates to the variables held by the parameter servers, without waiting for
the other workers. A checkpoint is written after every chunk, as in the synchronous path.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import keras
import tensorflow as tf

from components.contracts.manifest import Manifest
from components.contracts.run_summary import CurvePoint, WarmStartSummary
from components.train.callbacks import stall_fraction
from components.train.embedding_optimizers import gradient_norm
from components.train.failures import NonFiniteLossError
from components.train.input import InputOptions, make_dataset
from components.train.loop import (
    FitResult,
    checkpoint_manager,
    compiled_model,
    input_format,
    train_cache,
    train_input_options,
    warm_start_model,
)
from components.train.models import RankingModel
from components.train.run_clock import RunClock, examples_rate
from components.train.step_plan import StepPlan
from components.train.strategy import Runtime
from components.train.tf_input_capacity import input_examples_per_second
from components.train.tf_step import apply_split_gradients, table_gradients_summed, variable_groups
from components.train.training_progress import TrainingProgress
from configs.training import ResolvedTarget

log = logging.getLogger(__name__)


def fit_parameter_server(
    resolved: ResolvedTarget, runtime: Runtime, manifest: Manifest, examples_dir: str, model_dir: str, seed: int,
    warm_start_from: str | None = None, clock: RunClock | None = None,
) -> tuple[RankingModel, StepPlan, FitResult]:
    """The coordinator's loop over the plan's chunks, resuming from the latest checkpoint; a fresh run with
    `warm_start_from` first sets the variables on the parameter servers from the champion's state (the chief
    reads and assigns each table shard through the embedding interface, as the synchronous path does)."""
    training = resolved.training
    clock = clock or RunClock()
    strategy = runtime.strategy
    plan = StepPlan.for_run(manifest, training)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    cache = train_cache(manifest, training)
    options = train_input_options(training, seed, cache.cache)
    # one input pipeline (each worker reads its own, alike) alone on this host, before the workers start
    with clock.phase("input_check"):
        input_rate = input_examples_per_second(make_dataset(examples_dir, manifest, "train", options),
                                               training.global_batch_size, training.input_capacity_seconds)
    per_worker_iterator = _per_worker_iterator(coordinator, strategy, examples_dir, manifest, options)
    model, manager, warm_start = _model_on_parameter_servers(resolved, runtime, manifest, examples_dir, model_dir,
                                                             warm_start_from)
    worker_step = _worker_step(model, strategy, manifest, training.deterministic, plan.steps_per_execution)

    done = int(model.optimizer.iterations.numpy())
    done -= done % plan.chunk_steps
    curve: list[CurvePoint] = []
    log.info("parameter-server loop: %d chunk(s) of %d step(s) over %d worker(s)", plan.chunks, plan.chunk_steps,
             len(runtime.device_names))
    timing = _LoopTiming(loop_started=time.perf_counter())
    progress = TrainingProgress.of_plan(plan, training.global_batch_size)
    progress.begin(done)
    clock.close_startup()
    for _chunk in range(done // plan.chunk_steps, plan.chunks):
        chunk_started = time.perf_counter()
        results = [coordinator.schedule(worker_step, args=(per_worker_iterator,))
                   for _ in range(plan.chunk_steps // plan.steps_per_execution)]
        coordinator.join()
        done += plan.chunk_steps
        fetched = [r.fetch() for r in results]
        # the first chunk (tracing the worker function, the workers' first batches) is start-up
        if timing.steady_started is None:
            clock.add("startup", time.perf_counter() - chunk_started)
        else:
            clock.training_steps(plan.chunk_steps, time.perf_counter() - chunk_started, 0.0)
        _set_step_count(model, done)
        mean_loss = _finite_mean_loss(fetched, done)
        curve.append(CurvePoint(step=done, loss=mean_loss, epoch=None, eval_logloss=None))  # the last: train() adds both
        with clock.phase("checkpoints"):
            manager.save(checkpoint_number=done)
        log.info("parameter-server loop: step %d, mean loss %.4f", done, mean_loss)
        progress.steps_done(done)
        progress.chunk_done(done, loss=mean_loss)
        timing.chunk_done(fetched, plan.chunk_steps)
    _, waited, computed, timed_steps = timing.figures(plan.chunk_steps, training.global_batch_size)
    stall = stall_fraction(waited, computed)
    clock.input_wait_share(stall)
    examples_per_second = clock.steady_examples_per_second(training.global_batch_size)
    if not examples_per_second:  # a one-chunk run: its only chunk, start-up included, is what there is
        examples_per_second = timing.figures(plan.chunk_steps, training.global_batch_size)[0]
    return model, plan, FitResult(
        curve=curve, examples_per_second=examples_per_second, warm_start=warm_start,
        input_stall_fraction=stall,
        input_examples_per_second=input_rate,
        step_examples_per_second=workers_step_rate(timed_steps, training.global_batch_size, computed,
                                                   len(runtime.device_names)),
        input_format=input_format(manifest), input_cache_bytes=cache.bytes,
    )


def workers_step_rate(steps: int, global_batch_size: int, computed_seconds: float, workers: int) -> float | None:
    """The step's own rate of a parameter-server run: all workers together, as its headline counts them. Each
    step's compute is stamped on the worker that ran it and `computed_seconds` sums them over the workers, which
    compute side by side (the coordinator spreads the steps over them): the run's rate had no worker ever waited.
    Its headline over this is the share of the steady window the workers spent computing."""
    return examples_rate(steps, global_batch_size, computed_seconds / max(1, workers))


def _per_worker_iterator(coordinator, strategy: tf.distribute.Strategy, examples_dir: str, manifest: Manifest,
                         options: InputOptions):
    """An iterator over every worker's own train input pipeline (each worker reads and shuffles its own)."""

    def dataset_fn(input_context):
        return make_dataset(examples_dir, manifest, "train", options, input_context)

    def per_worker_dataset_fn():
        return strategy.distribute_datasets_from_function(dataset_fn)

    return iter(coordinator.create_per_worker_dataset(per_worker_dataset_fn))


def _model_on_parameter_servers(
    resolved: ResolvedTarget, runtime: Runtime, manifest: Manifest, examples_dir: str, model_dir: str,
    warm_start_from: str | None,
) -> tuple[RankingModel, tf.train.CheckpointManager, WarmStartSummary | None]:
    """The compiled model with its variables on the parameter servers, restored from the latest checkpoint, or
    warm-started from `warm_start_from` when there is none; its checkpoint manager."""
    sample_features, _ = next(iter(make_dataset(examples_dir, manifest, "eval", InputOptions(8, training=False))))
    with runtime.strategy.scope():
        model = compiled_model(resolved, runtime, manifest, sample_features, steps_per_execution=1)
        manager = checkpoint_manager(model, model_dir)
        if manager.latest_checkpoint:
            manager.checkpoint.restore(manager.latest_checkpoint)
        warm_start = None
        if warm_start_from and not manager.latest_checkpoint:
            warm_start = warm_start_model(model, examples_dir, manifest, warm_start_from)
    return model, manager, warm_start


def _worker_step(model: RankingModel, strategy: tf.distribute.Strategy, manifest: Manifest, deterministic: bool,
                 steps: int = 1):
    """The `tf.function` a worker runs per call: `steps` steps (the plan's steps per execution: one round trip to the
    coordinator for all of them), each one batch, the summed task losses and the split table/dense update. It returns
    (mean loss, summed gradient norms — non-finite if any step's was —, seconds waiting for batches, seconds computing
    the steps)."""
    losses = {task: keras.losses.BinaryCrossentropy() for task in manifest.tasks}
    tables, dense = variable_groups(model)

    def replica_step(features, labels):
        with tf.GradientTape() as tape:
            predictions = model(features, training=True)
            loss = tf.add_n([losses[t](labels[t], predictions[t]) for t in manifest.tasks])
        gradients = table_gradients_summed(model, tape.gradient(loss, tables + dense), tables)
        apply_split_gradients(model, gradients, tables, dense)
        return loss, gradient_norm(gradients, rows_summed=True)

    def one_step(iterator):
        """(loss, norm, seconds waited, seconds computed) of one step. The worker stamps the time before and after
        taking its batch and after the step's updates: the share of step time spent waiting for input (waits /
        (waits + compute), `callbacks.stall_fraction`). (Not under op determinism, which refuses tf.timestamp and
        whose workers cannot call back into this process's Python clock: the run then records no stall;
        asynchronous training is not reproducible anyway.)"""
        if deterministic:
            features, labels = next(iterator)
            loss, norm = strategy.run(replica_step, args=(features, labels))
            return loss, norm, tf.constant(0.0, tf.float64), tf.constant(0.0, tf.float64)
        asked = tf.timestamp()
        with tf.control_dependencies([asked]):
            features, labels = next(iterator)
        with tf.control_dependencies(tf.nest.flatten((features, labels))):
            arrived = tf.timestamp()
        loss, norm = strategy.run(replica_step, args=(features, labels))
        with tf.control_dependencies([loss, norm]):
            finished = tf.timestamp()
        return loss, norm, arrived - asked, finished - arrived

    @tf.function
    def worker_step(iterator):
        totals = one_step(iterator)
        for _ in tf.range(steps - 1):  # a graph loop: the whole execution is one call from the coordinator
            totals = tuple(total + value for total, value in zip(totals, one_step(iterator)))
        loss, norm, waited, computed = totals
        return loss / steps, norm, waited, computed

    return worker_step


def _set_step_count(model: RankingModel, done: int) -> None:
    """Write the completed steps into the optimizers' counters before the checkpoint (resume and schedules rely
    on it). Keras 3 counts steps with `iterations.assign_add(1)`, which on a Keras variable is a read then an
    assign: workers updating the ps at once lose increments (seen: 6 of 8); the chief knows how many completed."""
    for optimizer in (model.optimizer, model.embedding_optimizer):
        if optimizer is not None:
            optimizer.iterations.assign(done)


def _finite_mean_loss(fetched: list, done: int) -> float:
    """The chunk's mean loss over its steps; `NonFiniteLossError` when a step's loss or gradient norm is not
    finite."""
    mean_loss = float(sum(float(loss) for loss, *_ in fetched) / len(fetched))
    if not all(math.isfinite(float(loss)) and math.isfinite(float(norm)) for loss, norm, *_ in fetched):
        raise NonFiniteLossError(f"training loss is nan at step {done} (non-finite loss or gradients)")
    return mean_loss


@dataclass
class _LoopTiming:
    """The loop's throughput and its input stall, over the steady chunks: the first chunk (tracing and start-up)
    is left out, unless it is the run's only one."""

    loop_started: float
    steady_started: float | None = None
    steady_steps: int = 0
    waited: float = 0.0  # seconds the workers waited for batches, over the steady chunks
    computed: float = 0.0  # seconds they computed steps
    first_chunk: tuple[float, float] = (0.0, 0.0)  # (waited, computed) of the first chunk

    def chunk_done(self, fetched: list, chunk_steps: int) -> None:
        if self.steady_started is None:
            self.steady_started = time.perf_counter()  # after the first chunk: tracing and start-up excluded
            self.first_chunk = (sum(float(f[2]) for f in fetched), sum(float(f[3]) for f in fetched))
        else:
            self.steady_steps += chunk_steps
            self.waited += sum(float(wait) for _, _, wait, _ in fetched)
            self.computed += sum(float(step) for _, _, _, step in fetched)

    def figures(self, chunk_steps: int, global_batch_size: int) -> tuple[float, float, float, int]:
        """(examples per second, seconds waited, seconds computed, the steps those seconds cover)."""
        elapsed = time.perf_counter() - self.steady_started if self.steady_started else 0.0
        rate = examples_rate(self.steady_steps, global_batch_size, elapsed) or 0.0
        waited, computed = self.waited, self.computed
        if not self.steady_steps and self.steady_started is not None:  # a one-chunk run: start-up included
            waited, computed = self.first_chunk
            rate = examples_rate(chunk_steps, global_batch_size, self.steady_started - self.loop_started) or 0.0
        return rate, waited, computed, self.steady_steps if self.steady_steps else chunk_steps
