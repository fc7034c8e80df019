"""What Vertex AI training and Dataflow offer: the machine types a training job may ask for, the Compute Engine
machine shapes Dataflow workers come in, and the regions Vertex AI runs in. A table kept in the project, with its
source and the date it was transcribed; `ops.vertex.preflight` refuses what is not in it (naming the config field)
and `pipelines.run_cost` prices machines by their shape.

Sources (transcribed 2026-11-27 from the pages as published; re-check them when Vertex adds machines or regions,
and extend the tables here):
- machine types for custom training: https://cloud.google.com/vertex-ai/docs/training/configure-compute
  (section "Machine types"; the GPU machines and their fixed GPUs are `ops.vertex.preflight.FIXED_GPUS`, the TPU
  machines `TPU_MACHINES` below);
- Compute Engine machine shapes (vCPUs, memory per vCPU of each family and class):
  https://cloud.google.com/compute/docs/general-purpose-machines and .../compute-optimized-machines;
- Vertex AI regions: https://cloud.google.com/vertex-ai/docs/general/locations (section "Vertex AI locations").

To add a machine: a CPU machine type goes in `TRAINING_CPU_MACHINES` (its family and class must be in
`MEMORY_PER_VCPU`); a TPU machine in `TPU_MACHINES` with its generation (the preflight decides what each
generation accepts, `ops.vertex.preflight`); a region in `VERTEX_REGIONS`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

SOURCE_DATE = "2026-11-27"
TRAINING_MACHINES_PAGE = "https://cloud.google.com/vertex-ai/docs/training/configure-compute"
LOCATIONS_PAGE = "https://cloud.google.com/vertex-ai/docs/general/locations"
MACHINE_SHAPES_PAGE = "https://cloud.google.com/compute/docs/general-purpose-machines"

# GB of memory per vCPU, by family and class (Compute Engine's predefined machine types).
MEMORY_PER_VCPU: dict[tuple[str, str], float] = {
    ("n1", "standard"): 3.75, ("n1", "highmem"): 6.5, ("n1", "highcpu"): 0.9,
    ("n2", "standard"): 4.0, ("n2", "highmem"): 8.0, ("n2", "highcpu"): 1.0,
    ("n2d", "standard"): 4.0, ("n2d", "highmem"): 8.0, ("n2d", "highcpu"): 1.0,
    ("e2", "standard"): 4.0, ("e2", "highmem"): 8.0, ("e2", "highcpu"): 1.0,
    ("c2", "standard"): 4.0,
    ("c2d", "standard"): 4.0, ("c2d", "highmem"): 8.0, ("c2d", "highcpu"): 2.0,
    ("c3", "standard"): 4.0, ("c3", "highmem"): 8.0, ("c3", "highcpu"): 2.0,
}
# vCPU counts of each Compute Engine family and class (what Dataflow workers may be).
COMPUTE_ENGINE_VCPUS: dict[tuple[str, str], tuple[int, ...]] = {
    ("n1", "standard"): (1, 2, 4, 8, 16, 32, 64, 96), ("n1", "highmem"): (2, 4, 8, 16, 32, 64, 96),
    ("n1", "highcpu"): (2, 4, 8, 16, 32, 64, 96),
    **{(family, kind): (2, 4, 8, 16, 32, 48, 64, 80, 96, 128) for family in ("n2", "n2d")
       for kind in ("standard", "highmem", "highcpu")},
    **{("e2", kind): (2, 4, 8, 16, 32) for kind in ("standard", "highmem", "highcpu")},
    ("c2", "standard"): (4, 8, 16, 30, 60),
    **{("c2d", kind): (2, 4, 8, 16, 32, 56, 112) for kind in ("standard", "highmem", "highcpu")},
    **{("c3", kind): (4, 8, 22, 44, 88, 176) for kind in ("standard", "highmem", "highcpu")},
}

# The CPU machine types Vertex AI custom training lists.
TRAINING_CPU_MACHINES: frozenset[str] = frozenset(
    [f"e2-standard-{n}" for n in (4, 8, 16, 32)] + [f"e2-highmem-{n}" for n in (2, 4, 8, 16)]
    + [f"e2-highcpu-{n}" for n in (16, 32)]
    + [f"n2-standard-{n}" for n in (4, 8, 16, 32, 48, 64, 80)]
    + [f"n2-highmem-{n}" for n in (2, 4, 8, 16, 32, 48, 64, 80)]
    + [f"n2-highcpu-{n}" for n in (16, 32, 48, 64, 80)]
    + [f"n1-standard-{n}" for n in (4, 8, 16, 32, 64, 96)]
    + [f"n1-highmem-{n}" for n in (2, 4, 8, 16, 32, 64, 96)]
    + [f"n1-highcpu-{n}" for n in (16, 32, 64, 96)]
    + [f"c2-standard-{n}" for n in (4, 8, 16, 30, 60)]
    + [f"c2d-{kind}-{n}" for kind in ("standard", "highmem", "highcpu") for n in (2, 4, 8, 16, 32, 56, 112)]
    + ["m1-ultramem-40", "m1-ultramem-80", "m1-ultramem-160", "m1-megamem-96"]
)

# TPU machine types and their generation: v2/v3 (a TPU node, `cloud-tpu`), v5e (`ct5lp-hightpu-*`), v6e
# (`ct6e-standard-*`, Trillium). Vertex training documents no TPU v4 or v5p machine (and the API's
# AcceleratorType has no v5p label): `ops.vertex.preflight` says so when asked for one.
TPU_MACHINES: dict[str, str] = {
    "cloud-tpu": "v2/v3",
    **{f"ct5lp-hightpu-{n}t": "v5e" for n in (1, 4, 8)},
    **{f"ct6e-standard-{n}t": "v6e" for n in (1, 4, 8)},
}
UNOFFERED_TPU_MACHINE = re.compile(r"^ct(?P<generation>4p|5p)-")

# The slices of TPU v5e and v6e (2D shapes, topology → chips): Cloud TPU's "TPU v5e" and "TPU v6e" pages, section
# "Supported configurations" (https://cloud.google.com/tpu/docs/v5e, https://cloud.google.com/tpu/docs/v6e). A slice of
# up to 8 chips fits one host; a larger one spans several hosts and is made of 4-chip VMs (ct5lp-hightpu-4t,
# ct6e-standard-4t: the v6e table's "VMs" column, 16x16 = 64 VMs), each a replica of the CustomJob's worker pool 0.
TPU_VM_CONFIGURATIONS_PAGES = ("https://cloud.google.com/tpu/docs/v5e", "https://cloud.google.com/tpu/docs/v6e")
TPU_SLICE_TOPOLOGIES: dict[str, dict[str, int]] = {
    generation: {"1x1": 1, "2x2": 4, "2x4": 8, "4x4": 16, "4x8": 32, "8x8": 64, "8x16": 128, "16x16": 256}
    for generation in ("v5e", "v6e")
}
# each TPU VM machine type's own (single-VM) topology
TPU_VM_TOPOLOGY: dict[str, str] = {
    **{f"ct5lp-hightpu-{n}t": topology for n, topology in ((1, "1x1"), (4, "2x2"), (8, "2x4"))},
    **{f"ct6e-standard-{n}t": topology for n, topology in ((1, "1x1"), (4, "2x2"), (8, "2x4"))},
}
# the VM a slice over several VMs is made of, per generation
MULTI_VM_TPU_MACHINE: dict[str, str] = {"v5e": "ct5lp-hightpu-4t", "v6e": "ct6e-standard-4t"}

VERTEX_REGIONS: frozenset[str] = frozenset({
    # Americas
    "us-central1", "us-east1", "us-east4", "us-east5", "us-south1", "us-west1", "us-west2", "us-west3", "us-west4",
    "northamerica-northeast1", "northamerica-northeast2", "southamerica-east1", "southamerica-west1",
    # Europe
    "europe-central2", "europe-north1", "europe-southwest1", "europe-west1", "europe-west2", "europe-west3",
    "europe-west4", "europe-west6", "europe-west8", "europe-west9", "europe-west12",
    # Asia Pacific
    "asia-east1", "asia-east2", "asia-northeast1", "asia-northeast2", "asia-northeast3", "asia-south1",
    "asia-southeast1", "asia-southeast2", "australia-southeast1", "australia-southeast2",
    # Middle East, Africa
    "me-central1", "me-central2", "me-west1", "africa-south1",
})

MACHINE_NAME = re.compile(r"^(?P<family>[a-z0-9]+)-(?P<kind>[a-z]+)-(?P<vcpus>\d+)$")


@dataclass(frozen=True)
class MachineShape:
    vcpus: int
    memory_gb: float


def compute_engine_shape(machine_type: str) -> MachineShape | None:
    """vCPUs and memory of a predefined Compute Engine machine type (`n2-standard-8`: 8, 32 GB); None when the
    table does not know it (e.g. `n1-standard-7`, a shared-core `e2-micro`, a custom type)."""
    match = MACHINE_NAME.match(machine_type)
    if match is None:
        return None
    key = (match["family"], match["kind"])
    vcpus = int(match["vcpus"])
    if key not in MEMORY_PER_VCPU or vcpus not in COMPUTE_ENGINE_VCPUS.get(key, ()):
        return None
    return MachineShape(vcpus, round(MEMORY_PER_VCPU[key] * vcpus, 2))


def close_names(name: str, known: frozenset[str] | set[str], count: int = 3) -> list[str]:
    """The known names closest to `name` (for a "did you mean" hint)."""
    return difflib.get_close_matches(name, sorted(known), n=count, cutoff=0.6)


def tpu_generation(machine_type: str) -> str | None:
    """'v2/v3', 'v5e' or 'v6e' for a TPU machine type Vertex training offers; None for any other machine."""
    return TPU_MACHINES.get(machine_type)


def slice_chips(topology: str) -> int | None:
    """The chips of a topology (`4x4`: 16); None when it is not `AxB` or `AxBxC` of whole numbers."""
    try:
        sides = [int(side) for side in topology.split("x")]
    except ValueError:
        return None
    chips = 1
    for side in sides:
        chips *= side
    return chips


def chips_per_vm(machine_type: str) -> int:
    """The chips of one TPU VM machine (`ct5lp-hightpu-4t`: 4)."""
    return int(machine_type.rsplit("-", 1)[1].rstrip("t"))


def tpu_vm_count(machine_type: str, topology: str) -> int | None:
    """How many VMs (worker pool 0 replicas) a slice of `topology` made of `machine_type` takes: 1 for the machine's
    own topology, chips / 4 for a larger slice of the multi-VM machine; None when Vertex offers no such slice (an
    unknown topology, or a multi-VM slice of a 1- or 8-chip machine)."""
    generation = tpu_generation(machine_type)
    if generation not in TPU_SLICE_TOPOLOGIES or topology not in TPU_SLICE_TOPOLOGIES[generation]:
        return None
    if topology == TPU_VM_TOPOLOGY[machine_type]:
        return 1
    chips, per_vm = TPU_SLICE_TOPOLOGIES[generation][topology], chips_per_vm(machine_type)
    if machine_type != MULTI_VM_TPU_MACHINE[generation] or chips <= per_vm:
        return None
    return chips // per_vm


def tpu_slice_refusal(machine_type: str, topology: str) -> tuple[str, str] | None:
    """Why Vertex offers no slice of `topology` on `machine_type` (a TPU VM machine of v5e or v6e, the topology one
    of the generation's slices): (the `MachineSpec` field to change, the reason); None when it does. The one rule the
    config (at load) and the preflight both apply."""
    generation = tpu_generation(machine_type)
    if machine_type not in TPU_VM_TOPOLOGY or generation is None or tpu_vm_count(machine_type, topology) is not None:
        return None
    own, per_vm, multi_vm = TPU_VM_TOPOLOGY[machine_type], chips_per_vm(machine_type), MULTI_VM_TPU_MACHINE[generation]
    chips = slice_chips(topology) or 0
    if topology in TPU_SLICE_TOPOLOGIES[generation] and chips > per_vm:
        vms = chips // chips_per_vm(multi_vm)
        return "machine_type", (f"topology {topology} is a {chips}-chip TPU {generation} slice, which Vertex builds of "
                                f"{vms} × {multi_vm} (one worker pool 0 replica each), not of {machine_type} ({own} on "
                                f"one VM): set machine_type: {multi_vm}")
    larger = ", ".join(t for t, c in TPU_SLICE_TOPOLOGIES[generation].items() if c > 4)
    return "tpu_topology", (f"{machine_type} takes topology {own}, or as {multi_vm} VMs a slice of {larger} "
                            f"(asked: {topology})")


def tpu_slice_of(generation: str, chips: int) -> tuple[str, str] | None:
    """(machine type, topology) of the `generation` slice of `chips` chips: the single VM of that size where there is
    one, else the multi-VM machine; None when the generation has no slice of that size."""
    topologies = {count: topology for topology, count in TPU_SLICE_TOPOLOGIES.get(generation, {}).items()}
    topology = topologies.get(chips)
    if topology is None:
        return None
    single = [machine for machine, own in TPU_VM_TOPOLOGY.items()
              if own == topology and tpu_generation(machine) == generation]
    return (single[0] if single else MULTI_VM_TPU_MACHINE[generation]), topology
