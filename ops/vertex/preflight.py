"""Would Vertex AI and Dataflow accept what this config asks for? Checked before any request is sent.

`adrank compile --backend vertex`, `adrank submit` and `adrank schedule create|update` call `check_config`
first: a machine request or a region Vertex refuses fails here, naming the config field and the rule, instead of
at CustomJob creation hours later, after the Dataflow preprocessing has been paid.

Each rule names where it comes from. *Documented* rules cite the page; *API* rules read the installed
`google.cloud.aiplatform_v1` types at check time (never a copied list); *adrank* rules are adrank's own choice,
said so in the message.

- Accelerator names (API): `MachineSpec.accelerator_type` is an `aiplatform_v1.AcceleratorType` enum label; the
  REST API answers any other name with `unknown enum label` (reference:
  https://cloud.google.com/vertex-ai/docs/reference/rest/v1/MachineSpec).
- GPUs per machine family (documented, "Configure compute resources for custom training", GPU table:
  https://cloud.google.com/vertex-ai/docs/training/configure-compute#gpu-compatibility-table, and Compute
  Engine's accelerator-optimized machines, https://cloud.google.com/compute/docs/accelerator-optimized-machines):
  an accelerator-optimized machine comes with a fixed GPU model and count (a2-highgpu-Ng: N × NVIDIA_TESLA_A100;
  a2-megagpu-16g: 16; a2-ultragpu-Ng: N × NVIDIA_A100_80GB; a3-highgpu-Ng: N × NVIDIA_H100_80GB; a3-megagpu-8g:
  8 × NVIDIA_H100_MEGA_80GB; a3-ultragpu-8g: 8 × NVIDIA_H200_141GB; a4-highgpu-8g: 8 × NVIDIA_B200; g2-standard-
  4/8/12/16/32: 1 × NVIDIA_L4, -24: 2, -48: 4, -96: 8). Other GPUs attach only to N1 machines, in the counts the
  table lists (T4, P100, P4: 1, 2 or 4; V100: 1, 2, 4 or 8). K80 is past its end of support (enum comment).
- TPUs (documented, "Training with TPU accelerators", https://cloud.google.com/vertex-ai/docs/training/training-
  with-tpu-vm, and the configure-compute page's TPU section): TPU v2/v3 are `machine_type: cloud-tpu` with
  `TPU_V2`/`TPU_V3` × 8; TPU v5e is `ct5lp-hightpu-1t` (1x1), `-4t` (2x2) or `-8t` (2x4) on one VM, and a
  larger slice (4x4, 4x8, 8x8, 8x16, 16x16: the slices of Cloud TPU's v5e and v6e pages, `configs.vertex_catalog`)
  is made of 4-chip VMs (`ct5lp-hightpu-4t`, `ct6e-standard-4t`), each a replica of worker pool 0 (replica_count =
  chips / 4, which adrank compiles from the topology: `pipelines.placement.worker_pool_specs`); every VM runs the
  trainer (docs/scaling.md). A multi-VM slice of a 1- or 8-chip machine, and a TPU v2/v3 pod (Vertex trains TPU v2/v3
  only as the 8-core cloud-tpu device), are refused, saying so; a topology the generation does not have fails when
  the config loads (`configs.vertex.MachineSpec`).
- Several GPU or CPU machines (`vertex.replica_count` > 1, a sweep point's machines) are accepted on both lanes (the
  TensorFlow lane trains them under MultiWorkerMirroredStrategy in adrank's own loop, `components.train.multi_worker`);
  each machine is checked by the rules above, and what cannot run over several machines is refused when the config
  loads, naming the field (`configs.vertex.VertexTargetSpec`: replica_count with parameter-server pools, or on a TPU,
  whose slice's hosts follow from its topology).
- Frameworks per TPU generation (documented, same TPU page: "TPU v5e supports JAX 0.4.6+, TensorFlow 2.15+, and
  PyTorch 2.1+. TPU v6e supports Python 3.10+, JAX 0.4.37+, and PyTorch 2.1+"): TPU v6e (`ct6e-standard-1t` 1x1,
  `-4t` 2x2, `-8t` 2x4 on one host) is accepted only for a target on the JAX lane (`backend: jax`, docs/backends.md)
  and refused on the TensorFlow lane, naming `backend`.
- Regions: a CMEK key must be in the location of the resource it encrypts (documented, Vertex AI CMEK,
  https://cloud.google.com/vertex-ai/docs/general/cmek, and Dataflow CMEK, https://cloud.google.com/dataflow/docs/
  guides/customer-managed-encryption-keys: "the location of the Cloud KMS key must match the region of the
  Dataflow job"); a CustomJob writes only to a TensorBoard instance in its own region (documented, "Use Vertex AI
  TensorBoard with custom training", https://cloud.google.com/vertex-ai/docs/experiments/tensorboard-training);
  a Dataflow subnetwork is in the job's region (documented, "Specify a network and subnetwork",
  https://cloud.google.com/dataflow/docs/guides/specifying-networks). Without a CMEK key the Dataflow region must
  still be `vertex.region` (adrank: the examples it writes are read by the training jobs in that region, and a
  compiled pipeline runs in one region).
- Job ids (SDK: the pattern `google.cloud.aiplatform.constants.pipeline` enforces) and labels (documented, see
  `configs.vertex_names`): the job id and every label set adrank sends are checked with the same functions the
  config loader uses.
- Machine types and regions (documented, a table kept in the project with its source and date:
  `configs.vertex_catalog`): a training machine type Vertex training does not list (`n1-standard-7`, `e2-micro`),
  a Dataflow worker type that is no predefined Compute Engine machine, and a `vertex.region` Vertex AI does not run
  in (`us-central2`) are refused naming the field. TPU v4 and v5p: Vertex training documents no machine type for
  them and `aiplatform_v1.AcceleratorType` has no v5p label (TPU_V4_POD, TPU_V5_LITEPOD only), so a `ct5p-*` or
  `ct4p-*` machine is refused saying that, with the TPU machines it does offer.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from dataclasses import dataclass

from configs import AdrankConfig
from configs.scaling import configured_field
from configs.vertex import MachineSpec, VertexConfig
from configs.vertex_catalog import (
    LOCATIONS_PAGE,
    MACHINE_SHAPES_PAGE,
    SOURCE_DATE,
    TPU_MACHINES,
    TPU_VM_TOPOLOGY,
    TRAINING_CPU_MACHINES,
    TRAINING_MACHINES_PAGE,
    UNOFFERED_TPU_MACHINE,
    VERTEX_REGIONS,
    chips_per_vm,
    close_names,
    compute_engine_shape,
    tpu_generation,
    tpu_slice_refusal,
)
from configs.vertex_names import label_key_problem, label_value_problem
from ops.vertex.jobs import job_id, job_labels
from pipelines.placement import custom_job_labels

GPU_TABLE = "https://cloud.google.com/vertex-ai/docs/training/configure-compute#gpu-compatibility-table"
TPU_PAGE = "https://cloud.google.com/vertex-ai/docs/training/training-with-tpu-vm"
MACHINE_SPEC_REFERENCE = "https://cloud.google.com/vertex-ai/docs/reference/rest/v1/MachineSpec"
VERTEX_CMEK = "https://cloud.google.com/vertex-ai/docs/general/cmek"
DATAFLOW_CMEK = "https://cloud.google.com/dataflow/docs/guides/customer-managed-encryption-keys"
TENSORBOARD_TRAINING = "https://cloud.google.com/vertex-ai/docs/experiments/tensorboard-training"
DATAFLOW_NETWORKS = "https://cloud.google.com/dataflow/docs/guides/specifying-networks"
LABELS_PAGE = "https://cloud.google.com/resource-manager/docs/labels-overview#requirements"
# The pipeline job id pattern google-cloud-aiplatform enforces before it sends a job
# (`google.cloud.aiplatform.constants.pipeline`), as configs.vertex_names describes it.
JOB_ID = re.compile(r"^[a-z][-a-z0-9]{0,127}$")
JOB_ID_RULE = "google-cloud-aiplatform's pipeline job id pattern (SDK)"
ADRANK_RULE = "adrank"

# Accelerator-optimized machine types: the GPU model and count each comes with.
FIXED_GPUS: dict[str, tuple[str, int]] = {
    **{f"a2-highgpu-{n}g": ("NVIDIA_TESLA_A100", n) for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": ("NVIDIA_TESLA_A100", 16),
    **{f"a2-ultragpu-{n}g": ("NVIDIA_A100_80GB", n) for n in (1, 2, 4, 8)},
    **{f"a3-highgpu-{n}g": ("NVIDIA_H100_80GB", n) for n in (1, 2, 4, 8)},
    "a3-megagpu-8g": ("NVIDIA_H100_MEGA_80GB", 8),
    "a3-ultragpu-8g": ("NVIDIA_H200_141GB", 8),
    "a4-highgpu-8g": ("NVIDIA_B200", 8),
    **{f"g2-standard-{n}": ("NVIDIA_L4", 1) for n in (4, 8, 12, 16, 32)},
    "g2-standard-24": ("NVIDIA_L4", 2),
    "g2-standard-48": ("NVIDIA_L4", 4),
    "g2-standard-96": ("NVIDIA_L4", 8),
}
ACCELERATOR_OPTIMIZED = re.compile(r"^(a2|a3|a4|a4x|g2|g4)-")
# GPUs that attach to N1 machines, with the counts the GPU table lists.
N1_GPU_COUNTS: dict[str, tuple[int, ...]] = {
    "NVIDIA_TESLA_T4": (1, 2, 4),
    "NVIDIA_TESLA_P100": (1, 2, 4),
    "NVIDIA_TESLA_P4": (1, 2, 4),
    "NVIDIA_TESLA_V100": (1, 2, 4, 8),
}
LEGACY_TPU_MACHINE = "cloud-tpu"
LEGACY_TPU_ACCELERATORS = ("TPU_V2", "TPU_V3")
LEGACY_TPU_COUNT = 8
V5E_MACHINE = re.compile(r"^ct5lp-hightpu-(?P<chips>\d+)t$")
V5E_ACCELERATOR = "TPU_V5_LITEPOD"
V6E_MACHINE = re.compile(r"^ct6e-")
MACHINE_TABLE = f"{TRAINING_MACHINES_PAGE} (configs/vertex_catalog.py, as of {SOURCE_DATE})"
REGION_TABLE = f"{LOCATIONS_PAGE} (configs/vertex_catalog.py, as of {SOURCE_DATE})"
SHAPE_TABLE = f"{MACHINE_SHAPES_PAGE} (configs/vertex_catalog.py, as of {SOURCE_DATE})"


@dataclass(frozen=True)
class Problem:
    """One thing Vertex or Dataflow would refuse: the config field, what is wrong, and where the rule is written."""

    field: str
    message: str
    source: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message} [rule: {self.source}]"


class PreflightError(ValueError):
    """The config asks Vertex or Dataflow for something they refuse; the message lists every problem."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("Vertex would refuse this config (nothing was sent):\n"
                         + "\n".join(f"  {problem}" for problem in problems))


def check_config(config: AdrankConfig) -> None:
    """Raise `PreflightError` naming every problem; return quietly when there is none."""
    problems = config_problems(config)
    if problems:
        raise PreflightError(problems)


def config_problems(config: AdrankConfig) -> list[Problem]:
    """Every rule broken by the config's vertex section, its targets' machines and its Dataflow options."""
    vertex = config.vertex
    if vertex is None:
        return [Problem("vertex", "the vertex backend needs a 'vertex' section (project, region, pipeline_root)",
                        ADRANK_RULE)]
    problems: list[Problem] = []
    for index, target in enumerate(config.targets):
        if target.vertex is None:
            continue  # pipelines.placement names the missing spec when the DAG is built
        where = f"{configured_field(config.targets, index)}.vertex"
        problems += machine_problems(target.vertex.machine, f"{where}.machine", chief=True, backend=target.backend)
        for pool in ("workers", "parameter_servers"):
            replicas = getattr(target.vertex, pool)
            if replicas is not None:
                problems += machine_problems(replicas.machine, f"{where}.{pool}.machine", chief=False)
    problems += region_problems(config, vertex)
    problems += name_problems(config)
    return problems


def accelerator_names() -> list[str]:
    """The accelerator enum labels of the installed `aiplatform_v1` (read now, never copied)."""
    from google.cloud.aiplatform_v1.types import AcceleratorType

    return [name for name in AcceleratorType.__members__ if name != "ACCELERATOR_TYPE_UNSPECIFIED"]


def machine_problems(machine: MachineSpec, field: str, chief: bool, backend: str = "tensorflow") -> list[Problem]:
    """What Vertex refuses in one `MachineSpec` (`chief`: worker pool 0, the chief or a TPU slice's VMs) for a
    target of training lane `backend`."""
    accelerator = machine.accelerator_type
    if accelerator is not None:
        known = accelerator_names()
        if accelerator not in known:
            close = difflib.get_close_matches(accelerator, known, n=3, cutoff=0.5)
            hint = f"; did you mean {' or '.join(close)}?" if close else f"; known: {', '.join(known)}"
            return [Problem(f"{field}.accelerator_type",
                            f"'{accelerator}' is not an aiplatform_v1 AcceleratorType{hint}", MACHINE_SPEC_REFERENCE)]
    machine_type = machine.machine_type
    unoffered = UNOFFERED_TPU_MACHINE.match(machine_type)
    if unoffered or accelerator == "TPU_V4_POD":
        generation = {"4p": "v4", "5p": "v5p"}[unoffered["generation"] if unoffered else "4p"]
        return [Problem(f"{field}.machine_type", f"'{machine_type}'{' with TPU_V4_POD' if accelerator else ''} is "
                        f"TPU {generation}: Vertex AI training documents TPU v2/v3 (cloud-tpu), v5e (ct5lp-hightpu-*) "
                        "and v6e (ct6e-standard-*) machines and no v4 or v5p machine type, and aiplatform_v1's "
                        "AcceleratorType has no v5p label; train on TPU v5e (ct5lp-hightpu-4t, topology 2x2)",
                        TPU_PAGE)]
    if machine_type in TPU_MACHINES or V5E_MACHINE.match(machine_type) or V6E_MACHINE.match(machine_type) \
            or accelerator and accelerator.startswith("TPU_"):
        return _tpu_problems(machine, field, chief, backend)
    if machine.tpu_topology:
        return [Problem(f"{field}.tpu_topology", f"'{machine_type}' is not a TPU machine type; a topology goes with "
                        "ct5lp-hightpu-* (TPU v5e)", TPU_PAGE)]
    return _gpu_problems(machine, field) or _machine_type_problems(machine_type, field)


def _machine_type_problems(machine_type: str, field: str) -> list[Problem]:
    """A machine type Vertex training does not list (GPU and TPU machines are checked by their own rules)."""
    if machine_type in TRAINING_CPU_MACHINES or machine_type in FIXED_GPUS:
        return []
    close = close_names(machine_type, TRAINING_CPU_MACHINES | set(FIXED_GPUS))
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return [Problem(f"{field}.machine_type", f"'{machine_type}' is not a machine type Vertex AI training offers{hint}",
                    MACHINE_TABLE)]


def _gpu_problems(machine: MachineSpec, field: str) -> list[Problem]:
    machine_type, accelerator, count = machine.machine_type, machine.accelerator_type, machine.accelerator_count
    fixed = FIXED_GPUS.get(machine_type)
    if fixed is not None:
        gpu, gpus = fixed
        if accelerator != gpu:
            return [Problem(f"{field}.accelerator_type", f"{machine_type} comes with {gpus} x {gpu}; set "
                            f"accelerator_type: {gpu} (asked: {accelerator or 'none'})", GPU_TABLE)]
        if count != gpus:
            return [Problem(f"{field}.accelerator_count", f"{machine_type} comes with exactly {gpus} x {gpu} "
                            f"(asked: {count}); for {count} GPUs pick the machine type with that many", GPU_TABLE)]
        return []
    if ACCELERATOR_OPTIMIZED.match(machine_type):
        return [Problem(f"{field}.machine_type", f"'{machine_type}' is not an accelerator-optimized machine type "
                        f"Vertex training lists (known: {', '.join(sorted(FIXED_GPUS))})", GPU_TABLE)]
    if accelerator is None:
        return []
    if accelerator == "NVIDIA_TESLA_K80":
        return [Problem(f"{field}.accelerator_type", "NVIDIA_TESLA_K80 has reached its end of support; use "
                        "NVIDIA_TESLA_T4 on n1 or NVIDIA_L4 on g2", MACHINE_SPEC_REFERENCE)]
    if accelerator not in N1_GPU_COUNTS:
        machines = sorted({m for m, (gpu, _) in FIXED_GPUS.items() if gpu == accelerator})
        where = f"it comes only with {', '.join(machines)}" if machines else "Vertex training lists no machine for it"
        return [Problem(f"{field}.machine_type", f"{accelerator} does not attach to '{machine_type}': {where}",
                        GPU_TABLE)]
    if not machine_type.startswith("n1-"):
        return [Problem(f"{field}.machine_type", f"{accelerator} attaches only to N1 machine types (n1-standard-*, "
                        f"n1-highmem-*, ...), not '{machine_type}'", GPU_TABLE)]
    counts = N1_GPU_COUNTS[accelerator]
    if count not in counts:
        return [Problem(f"{field}.accelerator_count", f"{count} x {accelerator}: an N1 machine takes "
                        f"{', '.join(map(str, counts))}", GPU_TABLE)]
    return []


def _tpu_problems(machine: MachineSpec, field: str, chief: bool, backend: str = "tensorflow") -> list[Problem]:
    machine_type, accelerator, count = machine.machine_type, machine.accelerator_type, machine.accelerator_count
    if not chief:
        return [Problem(f"{field}.machine_type", f"'{machine_type}' in a worker or parameter-server pool: adrank "
                        "trains on TPUs from the chief pool only (parameter-server pools are CPU machines)",
                        ADRANK_RULE)]
    if V6E_MACHINE.match(machine_type):
        if backend != "jax":
            backend_field = field.rsplit(".", 2)[0] + ".backend" if field.count(".") >= 2 else "backend"
            return [Problem(backend_field, f"'{machine_type}' is TPU v6e (Trillium), for which Vertex documents JAX "
                            "and PyTorch training but not TensorFlow: set backend: jax (adrank's JAX lane), or train "
                            "this target on TPU v5e (ct5lp-hightpu-4t, topology 2x2)", TPU_PAGE)]
        return _tpu_vm_slice_problems(machine, field, None, "v6e")
    if machine_type == LEGACY_TPU_MACHINE:
        if accelerator not in LEGACY_TPU_ACCELERATORS:
            return [Problem(f"{field}.accelerator_type", f"cloud-tpu takes {' or '.join(LEGACY_TPU_ACCELERATORS)} "
                            f"(asked: {accelerator or 'none'}); TPU v5e is machine_type ct5lp-hightpu-*", TPU_PAGE)]
        if count != LEGACY_TPU_COUNT:
            return [Problem(f"{field}.accelerator_count", f"cloud-tpu takes {accelerator} x {LEGACY_TPU_COUNT} "
                            f"(a v2-8/v3-8 device; asked: {count}); a larger slice is not a cloud-tpu machine",
                            TPU_PAGE)]
        if machine.tpu_topology:
            return [Problem(f"{field}.tpu_topology", "cloud-tpu (TPU v2/v3) takes no topology", TPU_PAGE)]
        return []
    if V5E_MACHINE.match(machine_type) is None:
        return [Problem(f"{field}.machine_type", f"'{machine_type}' with {accelerator}: Vertex TPU training takes "
                        "cloud-tpu (TPU_V2/TPU_V3 x 8), ct5lp-hightpu-1t/4t/8t (TPU v5e) or ct6e-standard-1t/4t/8t "
                        "(TPU v6e, JAX lane)", TPU_PAGE)]
    return _tpu_vm_slice_problems(machine, field, V5E_ACCELERATOR, "v5e")


def _tpu_vm_slice_problems(machine: MachineSpec, field: str, accelerator_label: str | None,
                           generation: str) -> list[Problem]:
    """A TPU VM slice of `generation` (v5e, v6e): a known machine type; its own topology on one VM, or a larger slice
    of the generation made of its 4-chip VMs (one worker pool 0 replica each); the accelerator left unset or (where
    aiplatform_v1 has a label for the generation) its label x one VM's chips."""
    machine_type, accelerator, count = machine.machine_type, machine.accelerator_type, machine.accelerator_count
    machines = [name for name in TPU_VM_TOPOLOGY if tpu_generation(name) == generation]
    if machine_type not in machines:
        return [Problem(f"{field}.machine_type", f"'{machine_type}' is not a TPU {generation} training machine (known: "
                        f"{', '.join(machines)})", TPU_PAGE)]
    per_vm = chips_per_vm(machine_type)
    if accelerator is not None and (accelerator != accelerator_label or count != per_vm):
        allowed = f"unset (or {accelerator_label} x {per_vm})" if accelerator_label else \
            "unset (aiplatform_v1 has no accelerator label for it)"
        return [Problem(f"{field}.accelerator_type", f"{machine_type} carries {per_vm} TPU {generation} chips: "
                        f"leave accelerator_type {allowed}; asked {accelerator} x {count}", TPU_PAGE)]
    own = TPU_VM_TOPOLOGY[machine_type]
    topology = machine.tpu_topology
    if topology is None:
        return [Problem(f"{field}.tpu_topology", f"{machine_type} needs tpu_topology: {own}", TPU_PAGE)]
    refusal = tpu_slice_refusal(machine_type, topology)
    if refusal is None:
        return []
    subfield, reason = refusal
    return [Problem(f"{field}.{subfield}", reason, TPU_PAGE)]


LOCATION = re.compile(r"^projects/[^/]+/locations/(?P<location>[^/]+)/")
SUBNETWORK_REGION = re.compile(r"(?:^|/)regions/(?P<region>[^/]+)/subnetworks/")


def region_problems(config: AdrankConfig, vertex: VertexConfig) -> list[Problem]:
    """The region must be one Vertex AI runs in; the CMEK key, the TensorBoard, the Dataflow job and its
    subnetwork must be where the pipeline runs; the Dataflow workers a machine type Compute Engine has."""
    region = vertex.region
    problems: list[Problem] = []
    if region not in VERTEX_REGIONS:
        close = close_names(region, VERTEX_REGIONS)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        problems.append(Problem("vertex.region", f"'{region}' is not a region Vertex AI runs in{hint}", REGION_TABLE))
    flow_config = config.preprocess.dataflow
    if config.preprocess.runner == "DataflowRunner" and flow_config is not None \
            and compute_engine_shape(flow_config.machine_type) is None:
        problems.append(Problem("preprocess.dataflow.machine_type", f"'{flow_config.machine_type}' is not a "
                                "predefined Compute Engine machine type adrank knows (family-class-vCPUs, e.g. "
                                "n2-standard-8)", SHAPE_TABLE))
    key = vertex.encryption_spec_key_name
    key_location = _location(key)
    if key and key_location != region:
        problems.append(Problem("vertex.encryption_spec_key_name", f"the key is in '{key_location}' but vertex.region "
                                f"is '{region}': Vertex needs a key in the region of the resources it encrypts",
                                VERTEX_CMEK))
    board_location = _location(vertex.tensorboard)
    if vertex.tensorboard and board_location != region:
        problems.append(Problem("vertex.tensorboard", f"the TensorBoard instance is in '{board_location}' but the "
                                f"training CustomJobs run in vertex.region '{region}'", TENSORBOARD_TRAINING))
    flow = config.preprocess.dataflow
    if config.preprocess.runner == "DataflowRunner" and flow is not None:
        if flow.region != region:
            why, source = ((f"the CMEK key (vertex.encryption_spec_key_name, in '{key_location}') encrypts the "
                            "Dataflow job too, and must be in the job's region", DATAFLOW_CMEK) if key else
                           ("the examples it writes feed the training jobs in vertex.region", ADRANK_RULE))
            problems.append(Problem("preprocess.dataflow.region", f"'{flow.region}' is not vertex.region '{region}': "
                                    + why, source))
        subnet = SUBNETWORK_REGION.search(flow.subnetwork or "")
        if subnet and subnet["region"] != flow.region:
            problems.append(Problem("preprocess.dataflow.subnetwork", f"the subnetwork is in '{subnet['region']}' but "
                                    f"the Dataflow job runs in '{flow.region}'", DATAFLOW_NETWORKS))
    return problems


def _location(resource_name: str | None) -> str | None:
    match = LOCATION.match(resource_name or "")
    return match["location"] if match else None


def name_problems(config: AdrankConfig) -> list[Problem]:
    """The pipeline job id adrank builds and every label set it sends (job and training CustomJobs)."""
    problems: list[Problem] = []
    example_id = job_id(config, dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
    if not JOB_ID.match(example_id):
        problems.append(Problem("name", f"the pipeline job id '{example_id}' does not match {JOB_ID.pattern}",
                                JOB_ID_RULE))
    label_sets = {"vertex.labels (pipeline job labels)": job_labels(config, "unknown", "retraining", "20260101")}
    label_sets.update({f"{configured_field(config.targets, i)} (training job labels)":
                       custom_job_labels(config, target) for i, target in enumerate(config.targets)})
    for field, labels in label_sets.items():
        for key, value in labels.items():
            problem = label_key_problem(key) or label_value_problem(value, f"label '{key}' value")
            if problem:
                problems.append(Problem(field, problem, LABELS_PAGE))
    return problems
