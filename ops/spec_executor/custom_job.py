"""The GCPC custom-job launcher and the CustomJob service, on this machine.

The compiled task runs `python3 -m google_cloud_pipeline_components.container.v1.custom_job.launcher
--type CustomJob --payload <json> --project P --location L --gcp_resources FILE`. Here the payload goes
through GCPC's own launcher code (`recursive_remove_empty`, system labels, `max_wait_duration` dropped unless
FLEX_START), then `LocalCustomJobs.create_custom_job` plays the CustomJob service: the job must parse as an
`aiplatform_v1.CustomJob` (unknown fields, wrong types, a primary pool of more than one replica unless it is a
TPU slice over several VMs are errors as on Vertex), and every replica of every worker pool starts as a process
with the environment Vertex gives it:

    CLUSTER_SPEC   {"cluster": {"workerpool0": [addr], "workerpool1": [...], ...}, "environment": "cloud",
                    "task": {"type": "workerpool<i>", "index": j}, "job": <the job spec, container args left out>}
    TF_CONFIG      {"cluster": {"chief": [...], "worker": [...], "ps": [...], "evaluator": [...]},
                    "environment": "cloud", "task": {"type": "chief"|"worker"|"ps"|"evaluator", "index": j}}
    AIP_MODEL_DIR, AIP_CHECKPOINT_DIR, AIP_TENSORBOARD_LOG_DIR
                   <baseOutputDirectory>/model/, /checkpoints/, /logs/ (Vertex's documented layout)

Addresses are `127.0.0.1:<free port>`. The job succeeds when the primary replica (pool 0) exits 0; the
other replicas are then stopped (assumed from Vertex's docs: the job ends with the primary replica; parameter
servers never exit by themselves). Any replica exiting non-zero first fails the job and stops every replica.

Differences from Vertex, on purpose: the AIP_* directories are given as the local directories their gs://
URIs map to (TensorFlow here cannot reach gs://), and the job spec in CLUSTER_SPEC leaves out container args
(each holds the whole executor input; one environment string must stay under the kernel's 128 KiB).
"""

from __future__ import annotations

import argparse
import copy
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from foundation.local_ports import LOOPBACK, free_local_ports
from ops.spec_executor import machines
from ops.spec_executor.machines import local_gpu_count
from ops.spec_executor.processes import ProcessTable, Started
from ops.spec_executor.storage import CloudStorageRoot

LAUNCHER_MODULE = "google_cloud_pipeline_components.container.v1.custom_job.launcher"
TF_TASK_TYPES = ("chief", "worker", "ps", "evaluator")  # Vertex: worker pools 0..3


class CustomJobError(RuntimeError):
    """The payload is not a valid CustomJob, or the job failed; the message says which replica and why."""


def is_custom_job_launcher(container: dict) -> bool:
    return LAUNCHER_MODULE in container.get("command", [])


@dataclass
class LauncherCall:
    job_type: str
    project: str
    location: str
    payload: str
    gcp_resources: str


def parse_launcher_args(task: str, args: list[str]) -> LauncherCall:
    parser = argparse.ArgumentParser(prog=LAUNCHER_MODULE, exit_on_error=False, add_help=False)
    for flag in ("--type", "--project", "--location", "--payload", "--gcp_resources"):
        parser.add_argument(flag, required=True)
    try:
        known, unknown = parser.parse_known_args(args)
    except (argparse.ArgumentError, SystemExit) as error:
        raise CustomJobError(f"task '{task}': the custom-job launcher arguments do not parse: {error}") from None
    if unknown:
        raise CustomJobError(f"task '{task}': the custom-job launcher does not take {unknown}")
    if known.type != "CustomJob":
        raise CustomJobError(f"task '{task}': launcher --type {known.type}, expected CustomJob")
    return LauncherCall(known.type, known.project, known.location, known.payload, known.gcp_resources)


def job_spec_from_payload(task: str, payload: str) -> dict:
    """The dict GCPC's launcher hands to `create_custom_job`, built by GCPC's own helpers."""
    from google_cloud_pipeline_components.container.v1.custom_job import remote_runner
    from google_cloud_pipeline_components.container.v1.gcp_launcher.utils import json_util

    try:
        labelled = remote_runner.insert_system_labels_into_payload(payload)
        job_spec = json_util.recursive_remove_empty(json.loads(labelled, strict=False))
    except json.JSONDecodeError as error:
        around = payload[max(0, error.pos - 80): error.pos + 80]
        raise CustomJobError(f"task '{task}': the custom-job payload is not JSON ({error.msg} at {error.pos}: "
                             f"...{around}...)") from None
    scheduling = job_spec.get("job_spec", {}).get("scheduling", {})
    if scheduling.get("strategy") != "FLEX_START":  # as GCPC's create_custom_job_with_client does
        scheduling.pop("max_wait_duration", None)
    return job_spec


def validate_custom_job(task: str, job_spec: dict) -> None:
    """Parse as `aiplatform_v1.CustomJob`, as the CustomJob service does, plus the pool rules Vertex enforces."""
    from google.cloud import aiplatform_v1

    try:
        aiplatform_v1.CustomJob(copy.deepcopy(job_spec))
    except (TypeError, ValueError, KeyError) as error:
        raise CustomJobError(f"task '{task}': the payload is not a valid CustomJob: {error}") from None
    pools = job_spec.get("job_spec", {}).get("worker_pool_specs", [])
    if not pools or not pools[0]:
        raise CustomJobError(f"task '{task}': the CustomJob has no primary worker pool (worker_pool_specs[0])")
    if int(pools[0].get("replica_count", 1)) != 1 and not machines.is_tpu(pools[0].get("machine_spec", {})):
        raise CustomJobError(f"task '{task}': worker_pool_specs[0] must have exactly one replica (Vertex's rule; only "
                             "a TPU slice over several VMs has one replica per VM there)")
    if len(pools) > len(TF_TASK_TYPES):
        raise CustomJobError(f"task '{task}': {len(pools)} worker pools; Vertex takes at most {len(TF_TASK_TYPES)}")
    for index, pool in enumerate(pools):
        if pool and not pool.get("container_spec", {}).get("image_uri"):
            raise CustomJobError(f"task '{task}': worker pool {index} has no container_spec.image_uri")


@dataclass(frozen=True)
class Replica:
    pool: int
    index: int
    address: str

    @property
    def tf_type(self) -> str:
        return TF_TASK_TYPES[self.pool]

    @property
    def label(self) -> str:
        return f"workerpool{self.pool}-{self.index} ({self.tf_type} {self.index})"


def cluster_replicas(pools: list[dict]) -> list[Replica]:
    slots = [(pool_index, replica) for pool_index, pool in enumerate(pools) if pool
             for replica in range(int(pool.get("replica_count", 1)))]
    ports = free_local_ports(len(slots))
    return [Replica(pool_index, replica, f"{LOOPBACK}:{port}") for (pool_index, replica), port in zip(slots, ports)]


def replica_environment(replica: Replica, replicas: list[Replica], job_spec: dict,
                        storage: CloudStorageRoot) -> dict[str, str]:
    """The variables Vertex sets in one replica's container (see the module docstring)."""
    by_pool: dict[int, list[str]] = {}
    for other in replicas:
        by_pool.setdefault(other.pool, []).append(other.address)
    spec_without_args = copy.deepcopy(job_spec.get("job_spec", {}))
    for pool in spec_without_args.get("worker_pool_specs", []):
        pool.get("container_spec", {}).pop("args", None)
        pool.get("container_spec", {}).pop("command", None)
    cluster_spec = {
        "cluster": {f"workerpool{pool}": addresses for pool, addresses in sorted(by_pool.items())},
        "environment": "cloud",
        "task": {"type": f"workerpool{replica.pool}", "index": replica.index},
        "job": spec_without_args,
    }
    tf_config = {
        "cluster": {TF_TASK_TYPES[pool]: addresses for pool, addresses in sorted(by_pool.items())},
        "environment": "cloud",
        "task": {"type": replica.tf_type, "index": replica.index},
    }
    env = {"CLUSTER_SPEC": json.dumps(cluster_spec), "TF_CONFIG": json.dumps(tf_config)}
    prefix = job_spec.get("job_spec", {}).get("base_output_directory", {}).get("output_uri_prefix")
    if prefix:
        for variable, leaf in (("AIP_MODEL_DIR", "model"), ("AIP_CHECKPOINT_DIR", "checkpoints"),
                               ("AIP_TENSORBOARD_LOG_DIR", "logs")):
            local = storage.local_path(f"{prefix.rstrip('/')}/{leaf}")
            local.mkdir(parents=True, exist_ok=True)
            env[variable] = str(local) + "/"
    return env


@dataclass
class LocalCustomJobs:
    """The CustomJob service: `create_custom_job` runs the job to its end on this machine."""

    task: str
    storage: CloudStorageRoot
    processes: ProcessTable
    base_env: dict[str, str]
    cwd: Path
    log_dir: Path
    created: list[str] = field(default_factory=list)

    def create_custom_job(self, parent: str, custom_job: dict) -> str:
        validate_custom_job(self.task, custom_job)
        pools = custom_job["job_spec"]["worker_pool_specs"]
        replicas = cluster_replicas(pools)
        gpu_slices = _gpu_slices(pools, replicas)
        started: dict[Replica, Started] = {}
        try:
            for replica in replicas:
                container = pools[replica.pool]["container_spec"]
                env = dict(self.base_env)
                env.update({item["name"]: str(item.get("value", "")) for item in container.get("env", [])})
                env.update(replica_environment(replica, replicas, custom_job, self.storage))
                if replica in gpu_slices:
                    env["CUDA_VISIBLE_DEVICES"] = gpu_slices[replica]
                argv = list(container.get("command", [])) + list(container.get("args", []))
                if not argv:
                    raise CustomJobError(f"task '{self.task}': worker pool {replica.pool} has no command")
                log = self.log_dir / f"workerpool{replica.pool}-{replica.index}.log"
                started[replica] = self.processes.start(replica.label, argv, env, self.cwd, log)
            self._wait(started)
        finally:
            for process in started.values():
                self.processes.kill(process)
        name = f"{parent}/customJobs/{uuid.uuid4().int % 10**19}"
        self.created.append(name)
        return name

    def _wait(self, started: dict[Replica, Started]) -> None:
        primary = next(r for r in started if r.pool == 0)
        while True:
            for replica, process in started.items():
                code = process.process.poll()
                if code is None or (code == 0 and replica != primary):
                    continue
                if code == 0:
                    return
                raise CustomJobError(
                    f"task '{self.task}': replica {replica.label} exited with {code}; the job fails and its other "
                    f"replicas are stopped. Last lines of {process.log_path}:\n{process.log_tail()}"
                )
            time.sleep(0.2)


def _gpu_slices(pools: list[dict], replicas: list[Replica]) -> dict[Replica, str]:
    """`CUDA_VISIBLE_DEVICES` per replica that asks for GPUs: consecutive devices, none shared."""
    slices, next_device = {}, 0
    for replica in replicas:
        machine = pools[replica.pool].get("machine_spec", {})
        count = int(machine.get("accelerator_count", 0)) if str(machine.get("accelerator_type", "")).startswith(
            "NVIDIA_") else 0
        if count:
            if next_device + count > local_gpu_count():
                raise CustomJobError(f"replica {replica.label} needs {count} GPU(s); none left on this machine")
            slices[replica] = ",".join(str(d) for d in range(next_device, next_device + count))
            next_device += count
        else:
            slices[replica] = ""  # a CPU pool sees no GPU, as on a machine without accelerators
    return slices


def run_launcher(task: str, call: LauncherCall, jobs: LocalCustomJobs) -> None:
    """What the launcher's `create_custom_job` does: create the job, wait for it, write `gcp_resources`."""
    job_spec = job_spec_from_payload(task, call.payload)
    parent = f"projects/{call.project}/locations/{call.location}"
    name = jobs.create_custom_job(parent, job_spec)
    resources = {"resources": [{"resourceType": "CustomJob",
                                "resourceUri": f"https://{call.location}-aiplatform.googleapis.com/v1/{name}"}]}
    Path(call.gcp_resources).parent.mkdir(parents=True, exist_ok=True)
    Path(call.gcp_resources).write_text(json.dumps(resources))
