"""Where each step runs: a local subprocess, or on Vertex (CustomJob machine specs, Dataflow options).

The local backend needs no placement: every hook returns what it was given, and kfp.local runs the
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

from configs.schema import AdrankConfig
from configs.training import TargetConfig
from configs.vertex import VertexConfig, VertexTargetSpec, check_target_machine, default_image_kind

Backend = Literal["local", "vertex"]


def window_end_argument(backend: Backend, local_window_end: str = "") -> str:
    """What the preprocess step gets as `window_end`: on Vertex the job's create time (for a scheduled
    run, the time the schedule fired), so one compiled template reads a different window every day.
    kfp.local does not resolve that placeholder, so local runs pass the day `adrank retrain` replays, or ""
    (`adrank run`: read every log)."""
    return dsl.PIPELINE_JOB_CREATE_TIME_UTC_PLACEHOLDER if backend == "vertex" else local_window_end


def pipeline_job_id_argument(backend: Backend) -> str:
    """The preprocess step's `pipeline_job_id`: on Vertex the job's id (a unique Dataflow job name per run),
    "" locally (DirectRunner needs none)."""
    return dsl.PIPELINE_JOB_ID_PLACEHOLDER if backend == "vertex" else ""


def training_component(component, target: TargetConfig, config: AdrankConfig, backend: Backend):
    """Locally the plain training component; on Vertex a CustomJob running it on the target's machines."""
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
    container["image_uri"] = vertex.images.for_kind(spec.image or default_image_kind(target.kind))
    return functools.partial(
        custom_job_op,
        worker_pool_specs=worker_pool_specs(spec, container),
        base_output_directory=custom_job_output_directory(vertex, target),
    )


def custom_job_output_directory(vertex: VertexConfig, target: TargetConfig) -> str:
    """The CustomJob's `baseOutputDirectory`, one per training task: Vertex derives `AIP_CHECKPOINT_DIR`
    (`<dir>/checkpoints`) from it, so a directory per target only would let every run of the target, and
    every scheduled run, resume from another run's finished checkpoint. The pipeline job id and the task id
    are resolved by Vertex at run time; a CustomJob restarted after preemption keeps both, so it resumes."""
    return (f"{vertex.custom_job_output_directory}/{target.name}/"
            f"{dsl.PIPELINE_JOB_ID_PLACEHOLDER}/{dsl.PIPELINE_TASK_ID_PLACEHOLDER}")


def place_preprocess(task: dsl.PipelineTask, config: AdrankConfig, backend: Backend) -> dsl.PipelineTask:
    """On Vertex the preprocess task launches Beam: with DataflowRunner the job runs on Dataflow with the
    options of `config.preprocess.dataflow` (carried in the task's `beam_args_json`), so the launcher
    needs little; with DirectRunner it processes the data in its own pod, so it gets a large one."""
    if backend != "vertex":
        return task
    require_vertex(config)
    if config.preprocess.runner == "DataflowRunner":
        task.set_cpu_limit("2").set_memory_limit("8G")
    else:
        task.set_cpu_limit("16").set_memory_limit("64G")
    return task


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
    """The CustomJob `workerPoolSpecs`: the chief, then (parameter-server training) workers and servers.

    Every replica runs the same container; Vertex sets TF_CONFIG so the trainer's strategy finds its
    cluster role.
    """

    def pool(machine, replica_count: int) -> dict:
        return {
            "machine_spec": machine.to_vertex(),
            "replica_count": replica_count,
            "container_spec": copy.deepcopy(container),
            "disk_spec": {"boot_disk_type": machine.boot_disk_type, "boot_disk_size_gb": machine.boot_disk_size_gb},
        }

    pools = [pool(spec.machine, 1)]
    if spec.workers is not None and spec.parameter_servers is not None:
        pools.append(pool(spec.workers.machine, spec.workers.replica_count))
        pools.append(pool(spec.parameter_servers.machine, spec.parameter_servers.replica_count))
    return pools


def custom_job_labels(config: AdrankConfig, target: TargetConfig) -> dict[str, str]:
    vertex = require_vertex(config)
    return {**vertex.labels, "adrank-pipeline": config.name, "adrank-target": target.name,
            "adrank-target-kind": target.kind}
