"""`train()` on the JAX lane: one training run of one target, with no TensorFlow in the process.

    resolve target overrides → seed → devices from jax.devices() → precision → manifest, plan (`StepPlan`, as the
    TensorFlow lane plans) → the model with the lane's tables → the train state (from the latest checkpoint, or warm
    from the champion) → the input alone (capacity) → chunks of jitted executions fed by the block reader's thread
    (a checkpoint after each chunk, the eval log-loss after each epoch) → the paired-rounds stall → calibration step
    and eval metrics → the trained weights for the export step → RunSummary with the run's time split

The serving SavedModel is written by the export step, a TensorFlow process, from the weights this writes
(`components.train.export_trained`): one model artefact whatever the lane.

Several processes (the replicas of a multi-host CustomJob, `components.train.jax_lane.distributed`) run this same
function: each reads its devices' input streams and steps in lockstep; the chief (process 0) alone evaluates and
writes checkpoints, the weights and the summary, and the others return None. The paired-rounds input stall is timed
by the wall clock, round by round, which processes cannot agree on, so a multi-process run leaves it out. A CPU sweep
point trained by one process simulates its devices (`components.train.simulated_devices`).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import keras
import numpy as np

from components.contracts.manifest import Manifest
from components.contracts.run_summary import CurvePoint, EmbeddingTableMemory, RunSummary, TablePlacementSeen
from components.preprocess.vocabulary_file import transform_vocabularies
from components.train.backend_choice import select_backend
from components.train.block_files import cache_plan
from components.train.embedding_tables import EmbeddingTables
from components.train.failures import NonFiniteLossError
from components.train.input_capacity import (
    HELD_BYTES,
    WARM_UP_BATCHES,
    input_stall_fraction,
    paired_rounds,
)
from components.train.jax_lane import sparse_updates
from components.train.jax_lane.block_reader import BlockSplit, Holdout, Prefetcher, TrainingRows
from components.train.jax_lane.checkpoints import StateCheckpoints
from components.train.jax_lane.distributed import join_replicas, simulate_host_devices
from components.train.jax_lane.embedding import SparseRowTables
from components.train.jax_lane.prediction import SplitPredictor
from components.train.jax_lane.runtime import JaxRuntime, jax_runtime, set_precision_policy
from components.train.jax_lane.sparsecore import SparseCoreTables
from components.train.jax_lane.step import LabelColumns, TrainState, TrainStep, data_sharding, read_and_reset_loss
from components.train.jax_lane.tensorboard_scalars import ScalarWriter, scalar_writer
from components.train.models import build_model
from components.train.models.base import RankingModel
from components.train.optimization import (
    LinearWarmup,
    embedding_learning_rate,
    make_optimizer,
    scaled_embedding_learning_rate,
    scaled_learning_rate,
    table_config_optimizer,
)
from components.train.packed_batch import PACKED_FLOAT32, PACKED_INT64, label_columns
from components.train.run_clock import RunClock, examples_rate
from components.train.run_evaluation import curve_with_final_eval, evaluate, fit_calibrators, prediction_batch_size
from components.train.run_paths import checkpoint_dir, tft_output_dir
from components.train.simulated_devices import simulated_device_count
from components.train.step_plan import (
    CheckpointCadence,
    StepPlan,
    calibration_holdout,
    min_train_steps,
    planned_train_examples,
    sized_to_split,
)
from components.train.table_rows_check import check_table_rows
from components.train.trained_weights import TRAINED_WEIGHTS_DIR, dense_variables, trained_weights
from components.train.training_progress import TrainingProgress
from components.train.warm_start import WarmStartUnavailable, apply_state
from configs.slices import TrainStepConfig
from configs.training import TrainingConfig, resolve_target
from foundation.gcs_mount import container_path

log = logging.getLogger(__name__)



def train(config: TrainStepConfig, target_name: str, run_index: int, examples_dir: str, model_dir: str,
          warm_start_from: str | None = None, started: float | None = None) -> RunSummary | None:
    """Train `target_name`'s model once on the JAX lane (seed = config.seed + run_index) and summarize the run (None
    in a process other than the chief of a multi-process run).

    `started`: when the step began (`time.perf_counter()`, before its imports), so start-up counts them."""
    select_backend("jax")  # no TensorFlow in this process (Keras would load it to seed it)
    clock = RunClock(started)
    target = config.target(target_name)
    join_replicas(target.kind, os.environ)  # before anything asks JAX for its devices
    simulate_host_devices(simulated_device_count(target))
    resolved = resolve_target(config.model, config.training, target)
    seed = config.seed + run_index
    keras.utils.set_random_seed(seed)
    runtime = jax_runtime(resolved.target.kind, resolved.target.allow_cpu_fallback)
    if runtime.fallback_reason:
        log.warning("falling back to CPU: %s", runtime.fallback_reason)
    if resolved.training.global_batch_size % runtime.replicas:
        raise ValueError(f"global batch {resolved.training.global_batch_size} does not split evenly over "
                         f"{runtime.replicas} {runtime.device_kind} devices")
    set_precision_policy(resolved.training, runtime)
    manifest = Manifest.read(container_path(examples_dir))
    check_table_rows(manifest, config.features)
    resolved = sized_to_split(resolved, manifest)
    training = resolved.training
    plan = StepPlan.for_run(manifest, training)
    train_split = BlockSplit(examples_dir, manifest, "train", Holdout(calibration_holdout(training)))
    cache = cache_plan(manifest, "train", training.cache, training.cache_memory_mb * 2**20)
    log.info("input cache: %s", cache.reason)

    model = build_model(resolved.model, manifest, training.global_batch_size, lane_tables(runtime),
                        table_config_optimizer(training))
    model(symbolic_batch(train_split, training.global_batch_size))
    trainer = TrainStep(model, make_optimizer(training, scaled_learning_rate(training)), training,
                        LabelColumns(label_columns(train_split.layout, manifest.tasks)),
                        LinearWarmup(embedding_learning_rate(training), training.warmup_steps))
    checkpoints = StateCheckpoints(checkpoint_dir(model_dir))
    done_steps, warm_start = checkpoints.latest_step() or 0, None
    if not done_steps and warm_start_from:
        warm_start = warm_start_model(model, examples_dir, manifest, warm_start_from)
    state = trainer.initial_state()
    if done_steps:
        with clock.phase("checkpoints"):
            state = checkpoints.restore(state, done_steps)
        if done_steps % plan.chunk_steps:
            raise RuntimeError(f"checkpoint at step {done_steps} is not on a chunk boundary of {plan.chunk_steps} "
                               "steps")
    placement = data_sharding(runtime.devices)
    state = replicated(state, runtime)
    runtime.check_placement(state.step)
    several_processes = runtime.processes > 1
    local_streams = runtime.local_positions

    def rows_from(step: int) -> TrainingRows:
        return TrainingRows(train_split, training.global_batch_size, plan.steps_per_execution, seed, cache.cache,
                            training.shuffle_buffer, start_step=step, streams=runtime.replicas,
                            local_streams=local_streams)

    def to_device(execution):
        """An execution's batches on the devices (run on the reader's thread; of several processes, this one's
        share of each global batch on its devices), with the host-formatted ids the tables need (SparseCore)."""
        ints, floats = execution
        if several_processes:
            shape = (plan.steps_per_execution, training.global_batch_size)
            on_device = [jax.make_array_from_process_local_data(placement, part, (*shape, part.shape[-1]))
                         for part in (ints, floats)]
        else:
            on_device = [jax.device_put(ints, placement), jax.device_put(floats, placement)]
        formatted = trainer.host_inputs(ints)
        return tuple(on_device) if formatted is None else (*on_device, jax.device_put(formatted))

    held: list = []
    with clock.phase("input_check"):
        execution_examples = plan.steps_per_execution * training.global_batch_size * len(local_streams) \
            // runtime.replicas
        input_rate = input_examples_per_second(rows_from(0), execution_examples, training.input_capacity_seconds,
                                               held)
        if several_processes:
            held = []  # the paired rounds are not timed over several processes (the module docstring)
            log.info("input stall not measured: %d processes would time their paired rounds apart",
                     runtime.processes)
        held = [to_device(execution) for execution in held]

    predictor = SplitPredictor(model, manifest, examples_dir, trainer.labels)
    progress = TrainingProgress.of_plan(plan, training.global_batch_size)
    curve: list[CurvePoint] = []
    scalars = scalar_writer() if runtime.is_chief else None
    if done_steps < plan.total_steps:
        state = fit(trainer, state, Prefetcher(rows_from(done_steps).executions(), to_device), plan, training,
                    done_steps, clock, checkpoints if runtime.is_chief else None,
                    predictor if runtime.is_chief else None, progress, curve, scalars)
    if not runtime.is_chief:
        log.info("process %d of %d: trained; the chief evaluates and writes the run", jax.process_index(),
                 runtime.processes)
        return None
    if several_processes:
        state = local_copy(state)

    stall = step_rate = None
    if held:
        with clock.phase("input_check"):
            rounds = paired_step_times(trainer, state, rows_from(0), to_device, held, training.input_capacity_seconds,
                                       plan)
            memory_step = rounds.memory_seconds_per_step()
            step_rate = examples_rate(1, training.global_batch_size, memory_step) if memory_step else None
            stall = input_stall_fraction(rounds)

    trainer.write_back(state)
    predictor.state = state
    with clock.phase("evaluation"):
        calibrators, calibration_skipped = fit_calibrators(predictor.predict_split, manifest, training)
        metrics = evaluate(predictor.predict_split, manifest, training, calibrators)
    curve = curve_with_final_eval(curve, metrics, training.epochs)
    if scalars is not None:
        if curve and curve[-1].eval_logloss is not None:
            scalars.write("eval/logloss", curve[-1].step, curve[-1].eval_logloss)
        scalars.close()
    with clock.phase("export"):
        trained_weights(model, [v.value for v in dense_variables(model)], model.embedding.table_values()).write(
            Path(model_dir) / TRAINED_WEIGHTS_DIR)
    split = clock.split()
    return RunSummary(
        target=resolved.target.name, target_kind=resolved.target.kind, backend="jax", run_index=run_index, seed=seed,
        hardware=runtime.hardware_seen(), model_kind=resolved.model.kind,
        global_batch_size=training.global_batch_size, learning_rate=scaled_learning_rate(training),
        configured_learning_rate=training.learning_rate, learning_rate_scaling=training.learning_rate_scaling,
        embedding_learning_rate=scaled_embedding_learning_rate(training), steps=plan.total_steps,
        epochs=training.epochs, configured_epochs=resolved.configured_epochs,
        min_train_steps=min_train_steps(planned_train_examples(manifest, training), training), steps_per_epoch=plan.steps_per_epoch, steps_per_execution=plan.steps_per_execution,
        dropped_steps=plan.dropped_steps, train_examples=manifest.splits["train"].examples,
        wall_time_seconds=split.wall, examples_per_second=clock.steady_examples_per_second(training.global_batch_size),
        time_split=split, input_stall_fraction=stall, input_examples_per_second=input_rate,
        step_examples_per_second=step_rate, input_format="blocks",
        input_cache_bytes=train_split.decoded_bytes if cache.cache else 0, metrics=metrics, curve=curve,
        embedding_tables=table_memory(model, training.embedding_optimizer), model_uri=None, warm_start=warm_start,
        calibrators=calibrators, calibration_skipped=calibration_skipped, deterministic=training.deterministic,
        table_placement=table_placement_seen(model, runtime),
    )


# -- the fit ----------------------------------------------------------------------------------------------------
def fit(trainer: TrainStep, state: TrainState, feed: Prefetcher, plan: StepPlan, training: TrainingConfig,
        done_steps: int, clock: RunClock, checkpoints: StateCheckpoints | None, predictor: SplitPredictor | None,
        progress: TrainingProgress, curve: list[CurvePoint], scalars: ScalarWriter | None = None) -> TrainState:
    """Train the plan's chunks from `done_steps` on; the host reads the device at chunk ends only (loss, non-finite
    marker), and the clock times each chunk's executions apart from the first (tracing and compilation: start-up).
    Checkpoints and evaluations between epochs follow the config's cadences (`training.checkpoint_every_minutes`,
    `eval_every_epochs`, `eval_sample_examples`); without `checkpoints` and `predictor` (a process other than the
    chief) neither is written or run."""
    executions = plan.chunk_steps // plan.steps_per_execution
    cadence, batch = CheckpointCadence(training.checkpoint_every_minutes), prediction_batch_size(training)
    step, first = done_steps, True
    clock.close_startup()
    progress.begin(step)
    try:
        for chunk in range(done_steps // plan.chunk_steps, plan.chunks):
            chunk_started, waited_before, steady_steps = time.perf_counter(), feed.waited_seconds, 0
            for _ in range(executions):
                execution = next(feed)
                if first:  # tracing and compiling the execution: start-up, not training
                    compile_started = time.perf_counter()
                    state = trainer.run(state, *execution)
                    jax.block_until_ready(state.step)
                    clock.add("startup", time.perf_counter() - compile_started)
                    chunk_started, waited_before, first = time.perf_counter(), feed.waited_seconds, False
                else:
                    state = trainer.run(state, *execution)
                    steady_steps += plan.steps_per_execution
                step += plan.steps_per_execution
                progress.steps_done(step)
            state, loss, nonfinite = read_and_reset_loss(state)  # waits for the chunk's work
            clock.training_steps(steady_steps, time.perf_counter() - chunk_started,
                                 feed.waited_seconds - waited_before)
            if nonfinite >= 0:
                raise NonFiniteLossError(f"training loss or gradient norm is not finite at step {nonfinite} "
                                         "(non-finite loss); lower the learning rate, enable gradient_clip_norm, or "
                                         "check the input features")
            if checkpoints is not None and cadence.due(chunk == plan.chunks - 1):
                with clock.phase("checkpoints"):
                    checkpoints.save(state, step)
            epoch = eval_logloss = None
            if plan.ends_epoch(chunk):
                epoch = (chunk + 1) // plan.chunks_per_epoch
                # the final evaluation measures the last one
                if predictor is not None and chunk != plan.chunks - 1 and epoch % training.eval_every_epochs == 0:
                    with clock.phase("evaluation"):
                        predictor.state = local_copy(state)
                        eval_logloss = predictor.eval_logloss(batch, training.eval_sample_examples)
            curve.append(CurvePoint(step=step, loss=loss if loss is not None else float("nan"), epoch=epoch,
                                    eval_logloss=eval_logloss))
            progress.chunk_done(step, loss, eval_logloss)
            if scalars is not None:
                if loss is not None:
                    scalars.write("train/loss", step, loss)
                if eval_logloss is not None:
                    scalars.write("eval/logloss", step, eval_logloss)
    finally:
        feed.close()
    return state


# -- input capacity and the paired rounds ----------------------------------------------------------------------
def input_examples_per_second(rows: TrainingRows, execution_examples: int, seconds: float,
                              held: list) -> float | None:
    """Examples/s the reader delivers alone (on its own, before training) over `seconds`, after `WARM_UP_BATCHES`
    executions; the first executions read are appended to `held` (up to `HELD_BYTES`), for the memory feed."""
    if seconds <= 0:
        return None
    executions = rows.executions()
    for _ in range(WARM_UP_BATCHES):
        held.append(next(executions))
    size = sum(part.nbytes for part in held[0])
    limit = max(1, HELD_BYTES // max(1, size))
    count, started = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        execution = next(executions)
        if len(held) < limit:
            held.append(execution)
        count += 1
    return examples_rate(count, execution_examples, elapsed)


def paired_step_times(trainer: TrainStep, state: TrainState, rows: TrainingRows, to_device, held: list,
                      seconds: float, plan: StepPlan):
    """The paired rounds (`components.train.input_capacity`) on a copy of the trained state: executions fed from a
    fresh reader of the run's order and from executions held on the device."""
    probe = jax.tree_util.tree_map(jnp.copy, state)
    pipeline = Prefetcher(rows.executions(), to_device)
    cycle = [0]

    def feed(name: str):
        if name == "pipeline":
            return next(pipeline)
        cycle[0] += 1
        return held[cycle[0] % len(held)]

    def timed_calls(name: str, calls: int) -> float:
        nonlocal probe
        started = time.perf_counter()
        for _ in range(calls):
            probe = trainer.run(probe, *feed(name))
        jax.block_until_ready(probe.step)
        return (time.perf_counter() - started) / (calls * plan.steps_per_execution)

    try:
        for name in ("pipeline", "memory"):
            timed_calls(name, 1)
        return paired_rounds(timed_calls, seconds, plan.steps_per_execution, plan.steps_per_epoch)
    finally:
        pipeline.close()
        del probe


# -- pieces ------------------------------------------------------------------------------------------------------
# keras-rs DistributedEmbedding over several hosts: keras-team/keras-rs#143, open ("Multi-host training does not work
# for distributed embeddings"); a multi-host run's tables are the lane's own stacked arrays instead
MULTI_HOST_SPARSECORE = ("keras-rs DistributedEmbedding does not train over several hosts yet "
                         "(keras-team/keras-rs#143, open): tables as ordinary arrays in the TensorCores' memory, "
                         "sparse row updates")


def lane_tables(runtime: JaxRuntime):
    """How this lane makes a model's tables on `runtime` (`components.train.models.build_model`)."""
    if runtime.has_sparsecore and runtime.processes > 1:
        log.warning("%s", MULTI_HOST_SPARSECORE)
    elif runtime.has_sparsecore:
        return lambda configs: SparseCoreTables(configs, name="embedding")
    return lambda configs: SparseRowTables(configs, name="embedding")


def symbolic_batch(split: BlockSplit, batch: int) -> dict:
    """A packed batch of symbolic tensors in the blocks' shapes: calling the model on it builds every weight without
    running (and compiling) its ops one by one."""
    return {PACKED_INT64: keras.KerasTensor((batch, split.ints_width), "int32"),
            PACKED_FLOAT32: keras.KerasTensor((batch, split.floats_width), "float32")}


def replicated(state: TrainState, runtime: JaxRuntime) -> TrainState:
    """The state on every device (data parallelism: each holds the whole model), or as it is on one. Over several
    processes every process builds each leaf from its own host copy (the same values: the same seed and checkpoint)."""
    if runtime.replicas <= 1:  # committed to the target's device, whatever JAX's default device is
        return jax.device_put(state, runtime.devices[0])
    mesh = jax.sharding.Mesh(np.asarray(runtime.devices), ("data",))
    everywhere = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    if runtime.processes == 1:
        return jax.device_put(state, everywhere)

    def global_leaf(leaf):
        host = np.asarray(leaf)
        return jax.make_array_from_callback(host.shape, everywhere, lambda index: host[index])

    return jax.tree_util.tree_map(global_leaf, state)


def local_copy(state: TrainState) -> TrainState:
    """The state on this process's first device: of a multi-process run's replicated arrays, the local replica, so
    the chief predicts without the other processes (a computation over arrays spanning processes needs them all)."""

    def local(leaf):
        if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
            return leaf.addressable_data(0)
        return leaf

    return jax.tree_util.tree_map(local, state)


def warm_start_model(model: RankingModel, examples_dir: str, manifest: Manifest, warm_start_from: str):
    """Start `model` from the champion's warm-start state (either lane exported it); None, with a warning, when it
    cannot be used."""
    try:
        return apply_state(model, manifest, transform_vocabularies(tft_output_dir(container_path(examples_dir), manifest)),
                           warm_start_from)
    except WarmStartUnavailable as error:
        log.warning("training cold: %s", error)
        return None


def table_memory(model: RankingModel, optimizer_kind: str) -> list[EmbeddingTableMemory]:
    tables: EmbeddingTables = model.embedding
    rows = []
    for entry in tables.table_memory(None, None):
        shape = (entry["rows"], entry["embedding_dim"])
        rows.append(EmbeddingTableMemory(**{**entry, "optimizer_slot_bytes": sparse_updates.slot_bytes(optimizer_kind,
                                                                                                        shape)}))
    return rows


def table_placement_seen(model: RankingModel, runtime: JaxRuntime) -> TablePlacementSeen:
    """Where the tables lived, from the implementation the run built on the devices it found."""
    if isinstance(model.embedding, SparseRowTables):
        devices = runtime.device_kind if runtime.replicas == 1 else f"{runtime.replicas} {runtime.device_kind}s"
        detail = ("" if runtime.device_kind != "TPU" else MULTI_HOST_SPARSECORE if runtime.has_sparsecore else
                  "this TPU has no SparseCore (or jax-tpu-embedding is not installed): tables as ordinary arrays in "
                  "the TensorCores' memory")
        return TablePlacementSeen(implementation=f"stacked arrays on the {devices}, sparse row updates",
                                  embedding_hardware=False, detail=detail)
    return model.embedding.placement_seen()
