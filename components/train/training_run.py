"""`train()`: one training run of one target — the plain function behind the KFP `train_step`.

    resolve target overrides → seed, determinism → strategy from the hardware present → input pipeline →
    model + optimizers under the strategy scope → restore checkpoint → fit in checkpointed chunks (eval
    log-loss after each epoch; TensorBoard scalars when `AIP_TENSORBOARD_LOG_DIR` is set) → evaluate on the
    eval split → export the serving SavedModel (from TPU: a CPU copy of the model) → RunSummary

A multi-host TPU slice is driven from its first host (TPUStrategy over the slice's TPU cluster); its other hosts'
replicas wait for the job to end. Several GPU or CPU machines (TF_CONFIG's chief and workers) train together under
MultiWorkerMirroredStrategy in adrank's own synchronous loop (`components.train.multi_worker`); every worker evaluates
and exports alike, the chief into the run's model dir and the others into scratch dirs, and only the chief returns
the run's summary (the others None). A CPU sweep point trained by one process simulates its devices
(`components.train.simulated_devices`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path

import keras
import tensorflow as tf

from components.contracts.manifest import Manifest
from components.contracts.run_summary import EmbeddingTableMemory, RunSummary, TablePlacementSeen
from components.train.export import servable_copy, write_serving_model
from components.train.loop import fit_synchronous
from components.train.multi_worker import fit_multi_worker, worker_model_dir
from components.train.optimization import scaled_embedding_learning_rate, scaled_learning_rate
from components.train.parameter_server import fit_parameter_server
from components.train.predictions import predict_split
from components.train.replica_cluster import ReplicaCluster, replica_cluster
from components.train.run_clock import RunClock
from components.train.run_evaluation import curve_with_final_eval, evaluate, fit_calibrators
from components.train.simulated_devices import simulated_device_count
from components.train.step_plan import min_train_steps, planned_train_examples, sized_to_split
from components.train.strategy import (
    Runtime,
    local_cluster_for,
    parameter_server_role,
    runtime_for,
    serve_parameter_server_task,
    simulate_cpu_devices,
)
from components.train.table_rows_check import check_table_rows
from configs.slices import TrainStepConfig
from configs.training import ResolvedTarget, TrainingConfig, resolve_target

log = logging.getLogger(__name__)

LOCAL_CLUSTER_LOG_DIR = "cluster_logs"  # each local ps/worker server's output, under the model dir


def train(
    config: TrainStepConfig,
    target_name: str,
    run_index: int,
    examples_dir: str,
    model_dir: str,
    model_uri: str | None = None,
    warm_start_from: str | None = None,
    started: float | None = None,
) -> RunSummary | None:
    """Train `target_name`'s model once (seed = config.seed + run_index) and summarize the run.

    `started`: when the step began (`time.perf_counter()`, before its imports), so start-up counts them.

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
            return train(config, target_name, run_index, examples_dir, model_dir, model_uri, warm_start_from,
                         started)
    replicas = replica_cluster()
    if config.target(target_name).kind == "tpu" and replicas is not None and not replicas.is_chief:
        wait_for_the_job_to_end(replicas)  # does not return
    simulate_cpu_devices(simulated_device_count(config.target(target_name)))
    clock = RunClock(started)
    resolved = reproducible_where_possible(resolve_target(config.model, config.training, config.target(target_name)))
    seed = config.seed + run_index
    # the strategy first: connecting to a TPU cluster (as any collective set-up) must precede TensorFlow's context
    runtime = runtime_for(resolved.target.kind, resolved.target.allow_cpu_fallback)
    seed_everything(seed, resolved.training.deterministic)
    if runtime.fallback_reason:
        log.warning("falling back to CPU: %s", runtime.fallback_reason)
    set_precision_policy(resolved.training, runtime)
    manifest = Manifest.read(examples_dir)
    check_table_rows(manifest, config.features)
    resolved = sized_to_split(resolved, manifest)

    with worker_model_dir(runtime, model_dir) as write_dir:  # a multi-worker run's non-chief: a scratch dir
        summary = fit_evaluate_export(resolved, runtime, manifest, examples_dir, model_dir, write_dir, seed, run_index,
                                      model_uri if runtime.is_chief else None, warm_start_from, clock)
    return summary if runtime.is_chief else None


def fit_evaluate_export(
    resolved: ResolvedTarget, runtime: Runtime, manifest: Manifest, examples_dir: str, model_dir: str,
    write_dir: str, seed: int, run_index: int, model_uri: str | None, warm_start_from: str | None, clock: RunClock,
) -> RunSummary:
    """Train under `runtime`'s strategy, evaluate, export under `write_dir` and summarize. In a multi-worker run every
    worker does all of it alike (a save may need the other workers), the chief under `model_dir` (= `write_dir`)."""
    if runtime.is_parameter_server:
        model, plan, fit_result = fit_parameter_server(resolved, runtime, manifest, examples_dir, model_dir, seed,
                                                       warm_start_from, clock)
    elif runtime.is_multi_worker:
        model, plan, fit_result = fit_multi_worker(resolved, runtime, manifest, examples_dir, model_dir, seed,
                                                   warm_start_from, clock, write_dir)
    else:
        model, plan, fit_result = fit_synchronous(resolved, runtime, manifest, examples_dir, model_dir, seed,
                                                  warm_start_from, clock)

    def predict(split: str, batch_size: int, holdout_fraction: float, holdout: str):
        return predict_split(model, manifest, examples_dir, split, batch_size, holdout_fraction, holdout)

    with clock.phase("evaluation"):
        calibrators, calibration_skipped = fit_calibrators(predict, manifest, resolved.training)
        task_metrics = evaluate(predict, manifest, resolved.training, calibrators)
    with clock.phase("export"):
        exported_uri = export_run_model(model, runtime, manifest, examples_dir, write_dir, model_uri, calibrators)
    curve = curve_with_final_eval(fit_result.curve, task_metrics, resolved.training.epochs)
    if fit_result.tensorboard is not None and curve and curve[-1].eval_logloss is not None:
        fit_result.tensorboard.write_eval(curve[-1].step, curve[-1].eval_logloss)
    split = clock.split()
    return RunSummary(
        target=resolved.target.name,
        target_kind=resolved.target.kind,
        backend="tensorflow",
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
        configured_epochs=resolved.configured_epochs,
        min_train_steps=min_train_steps(planned_train_examples(manifest, resolved.training), resolved.training),
        steps_per_epoch=plan.steps_per_epoch,
        steps_per_execution=plan.steps_per_execution,
        dropped_steps=plan.dropped_steps,
        train_examples=manifest.splits["train"].examples,
        wall_time_seconds=split.wall,
        examples_per_second=fit_result.examples_per_second,
        time_split=split,
        table_placement=table_placement_seen(model, runtime),
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


def wait_for_the_job_to_end(replicas: ReplicaCluster) -> None:
    """A TPU slice's host other than the first: TensorFlow drives the whole slice from the first host (its
    TPUStrategy reaches every host's TPU runtime), so this replica trains nothing and waits for the job to end, as the
    parameter-server tasks do (Vertex ends a job's replicas when its chief ends)."""
    log.info("TPU host %d of %d: the first host trains the slice; waiting for the job to end",
             replicas.process_index, replicas.processes)
    while True:
        time.sleep(3600)


# -- after the fit ---------------------------------------------------------------------------------
def table_placement_seen(model, runtime: Runtime) -> TablePlacementSeen:
    """Where the run's tables lived, read from the strategy it ran under: on a TPU, whether the TPU embedding API held
    them (keras-rs's TensorFlow `DistributedEmbedding` under a `TPUStrategy` with the TPU embedding feature) or they
    fell back to ordinary variables."""
    if runtime.is_tpu:
        feature = getattr(runtime.strategy.extended, "tpu_hardware_feature", None)
        support = getattr(feature, "embedding_feature", None)
        unsupported = support is None or "UNSUPPORTED" in str(support)
        return TablePlacementSeen(
            implementation="TPU embedding API" if not unsupported else "keras-rs DistributedEmbedding, ordinary "
            "variables", embedding_hardware=not unsupported, detail=f"TPU embedding feature: {support}")
    where = ("row-range shards on the parameter servers" if runtime.is_parameter_server
             else f"stacked variables on the {runtime.device_kind}")
    return TablePlacementSeen(implementation=f"{where}, sparse optimizer", embedding_hardware=False)


def export_run_model(model, runtime, manifest: Manifest, examples_dir: str, model_dir: str, model_uri: str | None,
                     calibrators) -> str:
    """Export the serving model (and its warm-start state) under `model_dir`; the URI the summary records.

    A TPU or parameter-server run exports the same model rebuilt on this host, its tables read back through the
    embedding interface (from the TPU embedding layer; from the ps tasks, whole however TensorFlow split them)."""
    rebuilt = runtime.is_tpu or runtime.is_parameter_server
    servable = servable_copy(model, runtime.strategy, manifest) if rebuilt else model
    return write_serving_model(servable, manifest, examples_dir, model_dir, model_uri, calibrators)


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
