"""Where the pipeline runs on Google Cloud. Only the vertex backend reads this section.

Two parts: `VertexConfig` (the project-wide settings under `vertex:`) and `VertexTargetSpec` (the
machines one training target asks for, under `targets[i].vertex`). Credentials never appear here:
jobs run as `service_account`, and the CLI authenticates with Application Default Credentials.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from configs.base import StrictModel
from configs.bounds import at_most
from configs.vertex_catalog import TPU_SLICE_TOPOLOGIES, tpu_generation, tpu_slice_refusal, tpu_vm_count
from configs.vertex_names import (
    display_name_problem,
    experiment_name_problem,
    model_id_from_name,
    model_id_problem,
    network_problem,
    user_labels_problem,
)

ImageKind = Literal["cpu", "gpu", "tpu", "jax_gpu", "jax_tpu"]
IMAGE_KINDS: tuple[str, ...] = ("cpu", "gpu", "tpu", "jax_gpu", "jax_tpu")
# An address Vertex can send to: one '@', a local part without spaces, a dotted domain with a top-level part.
EMAIL_ADDRESS = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                           r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}$")
# Vertex's e-mail notification takes up to three recipients (cloud.google.com/vertex-ai/docs/pipelines/email-notifications).
MAX_NOTIFY_EMAILS = 3


class MachineSpec(StrictModel):
    """One Vertex `MachineSpec`: a machine type, optionally with accelerators or a TPU topology.

    TPU v2/v3 (TPU node): `machine_type: cloud-tpu`, `accelerator_type: TPU_V3`, `accelerator_count: 8`.
    TPU v5e and later (TPU VM): `machine_type: ct5lp-hightpu-4t`, `tpu_topology: 2x2`.
    GPU: `machine_type: a2-highgpu-4g`, `accelerator_type: NVIDIA_TESLA_A100`, `accelerator_count: 4`.
    """

    machine_type: str = Field("n1-standard-8", pattern=r"^[a-z0-9-]+$")
    accelerator_type: str | None = Field(None, pattern=r"^[A-Z][A-Z0-9_]+$")
    accelerator_count: Annotated[int, at_most(
        1_024, "accelerators of one replica (a machine has at most 16 GPUs; a TPU slice a few hundred chips)")] = Field(
        0, ge=0)
    tpu_topology: str | None = Field(None, pattern=r"^\d+x\d+(x\d+)?$")
    boot_disk_type: Literal["pd-ssd", "pd-standard", "hyperdisk-balanced"] = "pd-ssd"
    boot_disk_size_gb: Annotated[int, at_most(65_536, "a persistent disk holds at most 64 TB")] = Field(100, ge=10)

    @model_validator(mode="after")
    def _accelerators_come_with_a_count(self) -> MachineSpec:
        if self.accelerator_type and self.accelerator_count < 1:
            raise ValueError(f"accelerator_type {self.accelerator_type} needs accelerator_count >= 1")
        if self.accelerator_count and not self.accelerator_type:
            raise ValueError("accelerator_count is set but accelerator_type is not")
        return self

    @model_validator(mode="after")
    def _a_slice_the_generation_has(self) -> MachineSpec:
        """A TPU v5e or v6e topology must be one of the generation's slices (`configs.vertex_catalog`), and one Vertex
        builds of this machine type (a slice over several VMs only of the 4-chip VM); the preflight applies the same
        rule (`tpu_slice_refusal`) to a spec it is given."""
        generation = tpu_generation(self.machine_type)
        slices = TPU_SLICE_TOPOLOGIES.get(generation or "")
        if slices and self.tpu_topology is not None and self.tpu_topology not in slices:
            raise ValueError(f"tpu_topology: '{self.tpu_topology}' is not a TPU {generation} slice (slices: "
                             f"{', '.join(slices)}; Cloud TPU's TPU {generation} page, configs/vertex_catalog.py)")
        refusal = tpu_slice_refusal(self.machine_type, self.tpu_topology) if self.tpu_topology else None
        if refusal is not None:
            raise ValueError(f"{refusal[0]}: {refusal[1]}")
        return self

    @property
    def is_tpu(self) -> bool:
        return bool(self.tpu_topology) or (self.accelerator_type or "").startswith("TPU_")

    @property
    def is_gpu(self) -> bool:
        return (self.accelerator_type or "").startswith("NVIDIA_")

    @property
    def tpu_vms(self) -> int:
        """The VMs of a TPU VM slice (a multi-host slice: each a replica of worker pool 0); 1 for any other machine
        and for a slice Vertex does not offer (the preflight refuses it)."""
        if self.tpu_topology is None or tpu_generation(self.machine_type) not in TPU_SLICE_TOPOLOGIES:
            return 1
        return tpu_vm_count(self.machine_type, self.tpu_topology) or 1

    def to_vertex(self) -> dict:
        """The REST `MachineSpec` (snake_case, as GCPC's custom-job component passes it on)."""
        spec: dict = {"machine_type": self.machine_type}
        if self.accelerator_type:
            spec["accelerator_type"] = self.accelerator_type
            spec["accelerator_count"] = self.accelerator_count
        if self.tpu_topology:
            spec["tpu_topology"] = self.tpu_topology
        return spec


class ReplicaPool(StrictModel):
    """Extra replicas beside the chief: parameter-server workers or parameter servers."""

    replica_count: Annotated[int, at_most(
        10_000, "machines in one worker pool of a Vertex CustomJob")] = Field(ge=1)
    machine: MachineSpec = MachineSpec()


class VertexTargetSpec(StrictModel):
    """The CustomJob a training target becomes: chief machine, optional worker and parameter-server pools."""

    machine: MachineSpec = MachineSpec()
    replica_count: Annotated[int, at_most(
        10_000, "machines of one CustomJob training synchronously")] = Field(
        1, ge=1, description="machines of `machine` training synchronously together (multi-node GPU or CPU: worker "
        "pool 0 holds the first, the chief, pool 1 the others, as Vertex asks); a TPU slice's hosts follow from its "
        "topology instead (`machine.tpu_topology`)")
    workers: ReplicaPool | None = Field(None, description="worker pool (parameter-server training)")
    parameter_servers: ReplicaPool | None = Field(None, description="parameter-server pool")
    image: ImageKind | None = Field(None, description="which `vertex.images` entry; default follows the target kind "
                                    "and training lane (`default_image_kind`)")
    timeout: str = Field("86400s", pattern=r"^\d+s$")
    restart_job_on_worker_restart: bool = False
    expected_hours: float = Field(
        1.0, gt=0, le=720, description="how long one training run of this target is expected to take on these "
        "machines (from a past run's wall time); `adrank compile` and `schedule create` price a run with it",
    )

    @model_validator(mode="after")
    def _ps_pools_come_together(self) -> VertexTargetSpec:
        if (self.workers is None) != (self.parameter_servers is None):
            raise ValueError("parameter-server training needs both 'workers' and 'parameter_servers' pools")
        if self.replica_count > 1 and self.workers is not None:
            raise ValueError("replica_count: synchronous replicas and parameter-server pools do not mix (the worker "
                             "pool is the parameter-server workers); scale 'workers.replica_count' instead")
        if self.replica_count > 1 and self.machine.is_tpu:
            raise ValueError(f"replica_count: a TPU slice's hosts follow from its topology (machine.tpu_topology "
                             f"{self.machine.tpu_topology}), not replica_count; leave it 1")
        return self

    @property
    def machines(self) -> int:
        """The machines one run of this target trains on: a TPU slice's VMs or the synchronous replicas (parameter-
        server pools apart)."""
        return self.machine.tpu_vms if self.machine.is_tpu else self.replica_count


def check_target_machine(kind: str, spec: VertexTargetSpec) -> None:
    """The machine a target asks for must match its kind (a `tpu` target on a GPU box is a typo)."""
    machine = spec.machine
    if kind == "tpu" and not machine.is_tpu:
        raise ValueError("a 'tpu' target needs a TPU accelerator_type (e.g. TPU_V3) or a tpu_topology")
    if kind == "gpu" and not machine.is_gpu:
        raise ValueError("a 'gpu' target needs an NVIDIA_* accelerator_type")
    if kind in ("cpu", "cpu-ps") and (machine.is_tpu or machine.is_gpu):
        raise ValueError(f"a '{kind}' target must not ask for accelerators")
    if kind == "cpu-ps" and spec.parameter_servers is None:
        raise ValueError("a 'cpu-ps' target needs 'workers' and 'parameter_servers' pools")
    if kind != "cpu-ps" and spec.parameter_servers is not None:
        raise ValueError(f"only 'cpu-ps' targets take parameter-server pools, not '{kind}'")


def default_image_kind(kind: str, backend: str = "tensorflow") -> ImageKind:
    """The image a target trains in: the TensorFlow lane's gpu / tpu / cpu images; the JAX lane's jax_gpu / jax_tpu
    images (Python 3.12, no TensorFlow), and on a CPU machine the cpu image, which holds JAX for the CPU too."""
    if kind == "gpu":
        return "jax_gpu" if backend == "jax" else "gpu"
    if kind == "tpu":
        return "jax_tpu" if backend == "jax" else "tpu"
    return "cpu"


class ImagesConfig(StrictModel):
    """Container images, one per hardware kind (built by `adrank images build`)."""

    cpu: str = "python:3.11-slim"
    gpu: str | None = None
    tpu: str | None = None
    jax_gpu: str | None = Field(None, description="the JAX lane on GPUs (requirements-jax-gpu.lock)")
    jax_tpu: str | None = Field(None, description="the JAX lane on TPUs, SparseCore included (requirements-jax-tpu.lock)")

    def for_kind(self, kind: ImageKind) -> str:
        image = getattr(self, kind)
        if not image:
            raise ValueError(f"vertex.images.{kind} is not set but a target needs the {kind} image")
        return image


def _checked_display_name(name: str | None) -> str | None:
    problem = name is not None and display_name_problem(name)
    if problem:
        raise ValueError(problem)
    return name


class ScheduleConfig(StrictModel):
    """Daily retraining: a native Vertex `PipelineJobSchedule`."""

    display_name: str | None = Field(None, description="default: '<name>-daily'")
    cron: str = Field("0 3 * * *", description="five-field cron, evaluated in `time_zone`")
    time_zone: str = "Etc/UTC"
    max_concurrent_runs: Annotated[int, at_most(
        100, "Vertex schedules allow at most 100 concurrent runs")] = Field(1, ge=1)
    max_runs: Annotated[int | None, at_most(
        10**6, "runs of one schedule (a daily one: 2,700 years)")] = Field(None, ge=1)
    start_time: dt.datetime | None = Field(
        None, description="no run before this time; a time already past is refused by `schedule create|update` "
        "(or moved to now with --start-now-if-past), never caught up",
    )
    end_time: dt.datetime | None = None
    allow_queueing: bool = False

    @field_validator("cron")
    @classmethod
    def _five_fields(cls, value: str) -> str:
        if len(value.split()) != 5 or value.startswith(("TZ=", "CRON_TZ=")):
            raise ValueError("cron must have five fields; put the time zone in 'time_zone'")
        return value

    @field_validator("time_zone")
    @classmethod
    def _known_time_zone(cls, value: str) -> str:
        import zoneinfo

        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown IANA time zone '{value}'") from None
        return value

    @field_validator("display_name")
    @classmethod
    def _filterable_name(cls, name: str | None) -> str | None:
        return _checked_display_name(name)

    @model_validator(mode="after")
    def _ordered(self) -> ScheduleConfig:
        for name in ("start_time", "end_time"):
            value = getattr(self, name)
            if value is not None and value.tzinfo is None:
                raise ValueError(f"{name} needs a UTC offset, e.g. 2026-03-01T00:00:00Z")
        if self.start_time and self.end_time and self.end_time <= self.start_time:
            raise ValueError("end_time must be after start_time")
        return self

    @property
    def vertex_cron(self) -> str:
        return f"TZ={self.time_zone} {self.cron}"


class ModelRegistryConfig(StrictModel):
    """The Vertex Model Registry entry daily runs upload new versions to.

    adrank finds the model by its resource name, `projects/P/locations/L/models/<model_id>`, which it sets itself
    when it uploads the first version, never by display name (display names are not unique)."""

    model_display_name: str | None = Field(None, description="default: the pipeline name")
    model_id: str | None = Field(
        None, description="the model's id in its resource name; default: the display name in the id alphabet. "
        "A model registered before adrank set ids has a number Vertex chose: name it here to keep promoting into it",
    )
    serving_image: str = "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-15:latest"

    @field_validator("model_display_name")
    @classmethod
    def _filterable_model_name(cls, name: str | None) -> str | None:
        return _checked_display_name(name)

    @field_validator("model_id")
    @classmethod
    def _valid_model_id(cls, model_id: str | None) -> str | None:
        problem = model_id is not None and model_id_problem(model_id)
        if problem:
            raise ValueError(problem)
        return model_id

    def display_name(self, pipeline_name: str) -> str:
        return self.model_display_name or pipeline_name

    def resolved_model_id(self, pipeline_name: str) -> str:
        return self.model_id or model_id_from_name(self.display_name(pipeline_name))


class RunCostConfig(StrictModel):
    """What the estimate of a run's cost assumes beyond training (`adrank compile`, `submit`, `schedule
    create|update`; `pipelines.run_cost`). Each figure left unset is a default, and the estimate says so."""

    preprocess_expected_hours: float = Field(
        1.0, gt=0, le=720, description="how long the preprocess step runs: the Dataflow job (priced at "
        "preprocess.dataflow.max_workers workers for all of it, an upper bound) or the DirectRunner pod",
    )
    step_expected_hours: float = Field(
        0.1, gt=0, le=720, description="how long each other CPU step runs (resolve window, report, promotion, ...)",
    )
    dataflow_worker_price_per_hour: float | None = Field(
        None, ge=0, le=1000, description="USD per Dataflow worker hour; default: list prices for "
        "preprocess.dataflow.machine_type (pipelines/list_prices.py)",
    )


class VertexConfig(StrictModel):
    project: str = Field(pattern=r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
    region: str = "us-central1"
    pipeline_root: str = Field(pattern=r"^gs://")
    service_account: str | None = Field(
        None, pattern=r"^[a-z0-9-]+@[a-z0-9.-]+\.iam\.gserviceaccount\.com$",
        description="the run-as service account; required to submit",
    )
    network: str | None = Field(
        None, description="VPC to peer with: projects/<project-number>/global/networks/<name> (the project number)"
    )
    encryption_spec_key_name: str | None = Field(
        None, pattern=r"^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$",
        description="CMEK key for pipeline jobs, custom jobs, Dataflow and models (optional)",
    )
    labels: dict[str, str] = Field(default_factory=dict)
    tensorboard: str | None = Field(
        None, pattern=r"^projects/[^/]+/locations/[^/]+/tensorboards/[^/]+$",
        description="Vertex TensorBoard instance the training CustomJobs write to",
    )
    base_output_directory: str | None = Field(
        None, pattern=r"^gs://", description="CustomJob output directory; default: <pipeline_root>/custom-jobs"
    )
    experiment: str | None = Field(None, description="Vertex Experiment that submitted runs join")
    images: ImagesConfig = ImagesConfig()
    artifact_registry: str | None = Field(
        None, description="REGION-docker.pkg.dev/PROJECT/REPO that Cloud Build pushes images to"
    )
    schedule: ScheduleConfig = ScheduleConfig()
    model_registry: ModelRegistryConfig = ModelRegistryConfig()
    cost: RunCostConfig = RunCostConfig()
    notify_emails: list[str] = Field(
        default_factory=list, max_length=MAX_NOTIFY_EMAILS,
        description="who is e-mailed when a pipeline run ends (GCPC's VertexNotificationEmailOp in an exit handler "
        "around the whole pipeline); Vertex sends to at most three addresses",
    )

    @field_validator("notify_emails")
    @classmethod
    def _email_addresses(cls, addresses: list[str]) -> list[str]:
        for index, address in enumerate(addresses):
            if not EMAIL_ADDRESS.match(address):
                raise ValueError(f"item {index}: '{address}' is not an e-mail address (name@domain.tld)")
        if len(set(addresses)) != len(addresses):
            raise ValueError(f"an address is listed twice: {addresses}")
        return addresses

    @field_validator("labels")
    @classmethod
    def _valid_labels(cls, labels: dict[str, str]) -> dict[str, str]:
        problem = user_labels_problem(labels)
        if problem:
            raise ValueError(problem)
        return labels

    @field_validator("network")
    @classmethod
    def _peering_network(cls, network: str | None) -> str | None:
        problem = network and network_problem(network)
        if problem:
            raise ValueError(problem)
        return network

    @field_validator("experiment")
    @classmethod
    def _experiment_name(cls, experiment: str | None) -> str | None:
        problem = experiment and experiment_name_problem(experiment)
        if problem:
            raise ValueError(problem)
        return experiment

    @property
    def custom_job_output_directory(self) -> str:
        return self.base_output_directory or self.pipeline_root.rstrip("/") + "/custom-jobs"

