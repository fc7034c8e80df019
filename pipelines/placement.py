"""Where each step runs: a local subprocess, or on Vertex (CustomJob machine specs, Dataflow options).

The local backend needs no placement: every hook returns what it was given, and the local engine runs the
plain components. The vertex backend's rules live here so `ranking.py` stays the one DAG definition
for both backends. `training_component` swaps the training component for one that runs elsewhere
(a Vertex CustomJob wrapper with the target's machines); `place_preprocess` sets options on the
created preprocess task.

Everything here is computed from the config alone, so the compiled YAML depends only on the config.
"""

from __future__ import annotations

import copy
import functools
from typing import Literal

from kfp import dsl

from configs.retry import RetryConfig
from configs.schema import AdrankConfig
from configs.training import TargetConfig
from configs.vertex import VertexConfig, VertexTargetSpec, check_target_machine, default_image_kind

Backend = Literal["local", "vertex"]


def scheduled_time_argument(backend: Backend) -> str:
    """What the preprocess step gets as `scheduled_time`: on Vertex the run's scheduled time, so one compiled
    template reads a different window every day, catch-up runs each read their own day, and re-running a day
    gives the same input (the cache reuses a finished preprocess). Not the create time or the job id: those differ
    on every run and would keep Vertex's cache from ever matching. A run nobody scheduled may get it empty; the
    step then reads the window ending when it starts (`adrank submit` passes its own `window_end` instead).
    Locally the window is the run's own (`window_end`): "" here."""
    return dsl.PIPELINE_JOB_SCHEDULE_TIME_UTC_PLACEHOLDER if backend == "vertex" else ""


def set_retries(tasks: list[dsl.PipelineTask], retry: RetryConfig) -> None:
    """Every task gets the `retry` policy (Vertex tries a failed task again after a growing wait). A retried
    training CustomJob gets the same `baseOutputDirectory`, so the trainer finds its checkpoints under
    `AIP_CHECKPOINT_DIR` and continues (components.train.loop.checkpoint_dir)."""
    for task in tasks:
        task.set_retry(num_retries=retry.max_retries, backoff_duration=f"{retry.backoff_seconds}s",
                       backoff_factor=retry.backoff_factor, backoff_max_duration=f"{retry.max_backoff_seconds}s")


def failure_notification(config: AdrankConfig) -> dsl.PipelineTask | None:
    """With `vertex.notify_emails`, GCPC's e-mail notification task (the exit task around the whole pipeline:
    Vertex runs it when the pipeline ends, failed or not, and mails its final status); None without."""
    vertex = require_vertex(config)
    if not vertex.notify_emails:
        return None
    from google_cloud_pipeline_components.v1.vertex_notification_email import VertexNotificationEmailOp

    task = VertexNotificationEmailOp(recipients=list(vertex.notify_emails))
    task.set_display_name("notify by e-mail")
    task.set_caching_options(False)  # every ending is news, even one with the same recipients as yesterday
    return task


# What the fan-in steps ask for on Vertex (without a request Vertex gives a task its small default machine). The
# report reads one summary per training run and renders figures; promotion scores two models over the eval day.
REPORT_RESOURCES = ("4", "16G")
PROMOTION_RESOURCES = ("8", "32G")
# The preprocess task: with DataflowRunner it launches and watches the Dataflow job; with DirectRunner it does the work.
PREPROCESS_LAUNCHER_RESOURCES = ("2", "8G")
PREPROCESS_DIRECT_RESOURCES = ("16", "64G")


def place_report(task: dsl.PipelineTask, backend: Backend) -> dsl.PipelineTask:
    if backend == "vertex":
        task.set_cpu_limit(REPORT_RESOURCES[0]).set_memory_limit(REPORT_RESOURCES[1])
    return task


def place_promotion(task: dsl.PipelineTask, backend: Backend) -> dsl.PipelineTask:
    if backend == "vertex":
        task.set_cpu_limit(PROMOTION_RESOURCES[0]).set_memory_limit(PROMOTION_RESOURCES[1])
    return task


def training_component(component, target: TargetConfig, config: AdrankConfig, backend: Backend,
                       output_directory=None):
    """Locally the plain training component; on Vertex a CustomJob running it on the target's machines, writing
    under `output_directory` (the run's own, the output of the `run directory` step: `run_output_directory`)."""
    if backend != "vertex":
        return component
    from google_cloud_pipeline_components.v1.custom_job import create_custom_training_job_from_component

    vertex = require_vertex(config)
    spec = target_spec(target)
    custom_job_op = create_custom_training_job_from_component(
        component,
        display_name=f"{config.name}-train-{target.name}",
        machine_type=spec.machine.machine_type,
        timeout=spec.timeout,
        restart_job_on_worker_restart=spec.restart_job_on_worker_restart,
        service_account=vertex.service_account or "",
        network=vertex.network or "",
        encryption_spec_key_name=vertex.encryption_spec_key_name or "",
        tensorboard=vertex.tensorboard or "",
        labels=custom_job_labels(config, target),
    )
    default_pools = custom_job_op.component_spec.inputs["worker_pool_specs"].default
    container = copy.deepcopy(default_pools[0]["container_spec"])
    container["image_uri"] = vertex.images.for_kind(spec.image or default_image_kind(target.kind, target.backend))
    return functools.partial(
        custom_job_op,
        worker_pool_specs=worker_pool_specs(spec, container),
        base_output_directory=(output_directory if output_directory is not None
                               else f"{vertex.custom_job_output_directory}/{target.name}"),
    )


def run_output_directory(custom_jobs_dir: str, target: str, run_index: str, day: str) -> str:
    """A training run's CustomJob `baseOutputDirectory`: `<custom-jobs dir>/<target>/day-<day>/run-index-<index>`
    (`day`: the last day the run reads, `20260303`), one per training run of a day.

    Vertex derives from it what it hands the trainer: `AIP_TENSORBOARD_LOG_DIR` (`<dir>/logs`), so each run's
    TensorBoard scalars are that run's own curves in the Vertex UI (the runs of a target and the days of the
    schedule never share a directory), and `AIP_CHECKPOINT_DIR` (`<dir>/checkpoints`), which the trainer nests by
    its own model output artifact (`components.train.loop.checkpoint_dir`). It is a cached task's input, so it holds
    no job or task id (they would keep Vertex's cache from ever matching): a re-run of the day finds the same
    directory, and a retried task resumes its own checkpoints.

    (A step computes it because KFP 2.16 cannot put a loop item's field into a string input: an f-string with
    `run.run_index` compiles to a pipeline input the spec never declares.)"""
    for name, value in (("target", target), ("run index", run_index), ("day", day)):
        if not value or "/" in value:
            raise ValueError(f"the training run's {name} {value!r} cannot name a directory")
    return f"{custom_jobs_dir.rstrip('/')}/{target}/day-{day}/run-index-{run_index}"


def place_preprocess(task: dsl.PipelineTask, config: AdrankConfig, backend: Backend) -> dsl.PipelineTask:
    """On Vertex the preprocess task launches Beam: with DataflowRunner the job runs on Dataflow with the
    options of `config.preprocess.dataflow` (carried in the task's `beam_args_json`), so the launcher
    needs little; with DirectRunner it processes the data in its own pod, so it gets a large one."""
    if backend != "vertex":
        return task
    require_vertex(config)
    cpus, memory = preprocess_resources(config)
    return task.set_cpu_limit(cpus).set_memory_limit(memory)


def preprocess_resources(config: AdrankConfig) -> tuple[str, str]:
    """(CPU, memory) the preprocess task asks for on Vertex."""
    if config.preprocess.runner == "DataflowRunner":
        return PREPROCESS_LAUNCHER_RESOURCES
    return PREPROCESS_DIRECT_RESOURCES


def require_vertex(config: AdrankConfig) -> VertexConfig:
    if config.vertex is None:
        raise ValueError(f"config '{config.name}' has no 'vertex' section; the vertex backend needs one")
    return config.vertex


def target_spec(target: TargetConfig) -> VertexTargetSpec:
    if target.vertex is None:
        raise ValueError(
            f"target '{target.name}' has no 'vertex' machine spec (targets[].vertex.machine); "
            "the vertex backend needs one per target"
        )
    check_target_machine(target.kind, target.vertex)
    return target.vertex


def worker_pool_specs(spec: VertexTargetSpec, container: dict) -> list[dict]:
    """The CustomJob `workerPoolSpecs`, every replica running the same container (Vertex sets CLUSTER_SPEC and
    TF_CONFIG, so the trainer finds its role: `components.train.strategy`, `components.train.jax_lane.cluster`):

        one machine                 pool 0: 1 replica
        a TPU slice over N VMs      pool 0: N replicas, one per VM (Vertex's TPU VM slices; `MachineSpec.tpu_vms`)
        N synchronous machines      pool 0: the chief, pool 1: N − 1 replicas of the same machine
                                    (`vertex.replica_count`; Vertex's primary pool has exactly one replica)
        parameter servers           pool 0: the chief, pool 1: the workers, pool 2: the servers
    """

    def pool(machine, replica_count: int) -> dict:
        return {
            "machine_spec": machine.to_vertex(),
            "replica_count": replica_count,
            "container_spec": copy.deepcopy(container),
            "disk_spec": {"boot_disk_type": machine.boot_disk_type, "boot_disk_size_gb": machine.boot_disk_size_gb},
        }

    pools = [pool(spec.machine, spec.machine.tpu_vms if spec.machine.is_tpu else 1)]
    if spec.replica_count > 1:
        pools.append(pool(spec.machine, spec.replica_count - 1))
    if spec.workers is not None and spec.parameter_servers is not None:
        pools.append(pool(spec.workers.machine, spec.workers.replica_count))
        pools.append(pool(spec.parameter_servers.machine, spec.parameter_servers.replica_count))
    return pools


def custom_job_labels(config: AdrankConfig, target: TargetConfig) -> dict[str, str]:
    vertex = require_vertex(config)
    return {**vertex.labels, "adrank-pipeline": config.name, "adrank-target": target.name,
            "adrank-target-kind": target.kind}
