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
