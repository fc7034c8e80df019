"""The Google Cloud list prices a run's cost estimate uses beside the config's own `targets[].price_per_hour`.

On-demand list prices in USD for us-central1, transcribed 2026-11-27 from the pages below as published (not fetched
when a run is priced: re-check them, and override with `vertex.cost` where your prices differ, e.g. another region
or a committed-use discount):
- Dataflow batch workers, https://cloud.google.com/dataflow/pricing: per vCPU-hour, per GB-hour of memory, per
  GB-hour of standard persistent disk; a worker's disk is `preprocess.dataflow.disk_size_gb`, else 25 GB (Dataflow's
  default for a batch job with Dataflow Shuffle, the default service-based shuffle). Shuffle data processed is billed
  on top and not priced here.
- Vertex AI Pipelines, https://cloud.google.com/vertex-ai/pricing#pipelines: a fee per pipeline run, and each step
  billed as the machine it runs on; a step runs on e2-standard-4 unless it asks for more CPU or memory
  (https://cloud.google.com/vertex-ai/docs/pipelines/machine-types), priced here as the smallest e2-standard machine
  holding its request, at Vertex AI custom training's e2-standard rate per vCPU
  (https://cloud.google.com/vertex-ai/pricing#custom-trained_models).
"""

from __future__ import annotations

PRICES_AS_OF = "2026-11-27"
DATAFLOW_VCPU_HOUR = 0.056
DATAFLOW_MEMORY_GB_HOUR = 0.003557
DATAFLOW_PD_GB_HOUR = 0.000054
DATAFLOW_DEFAULT_DISK_GB = 25
PIPELINE_RUN_FEE = 0.03
STEP_E2_STANDARD_VCPU_HOUR = 0.0385275  # e2-standard-4 on Vertex training: 0.15411 per hour
STEP_DEFAULT_MACHINE = (4, 16.0)  # e2-standard-4: vCPUs, GB
E2_STANDARD_VCPUS = (4, 8, 16, 32)
E2_STANDARD_GB_PER_VCPU = 4.0


def dataflow_worker_price(vcpus: int, memory_gb: float, disk_gb: int | None) -> float:
    """USD per hour of one Dataflow batch worker of this shape."""
    disk = disk_gb if disk_gb is not None else DATAFLOW_DEFAULT_DISK_GB
    return vcpus * DATAFLOW_VCPU_HOUR + memory_gb * DATAFLOW_MEMORY_GB_HOUR + disk * DATAFLOW_PD_GB_HOUR


def step_machine(cpus: float, memory_gb: float) -> tuple[str, float]:
    """(machine type, USD per hour) a pipeline step asking for `cpus` and `memory_gb` is priced as."""
    for vcpus in E2_STANDARD_VCPUS:
        if vcpus >= max(cpus, STEP_DEFAULT_MACHINE[0]) and vcpus * E2_STANDARD_GB_PER_VCPU >= memory_gb:
            return f"e2-standard-{vcpus}", vcpus * STEP_E2_STANDARD_VCPU_HOUR
    vcpus = E2_STANDARD_VCPUS[-1]
    return f"e2-standard-{vcpus}", vcpus * STEP_E2_STANDARD_VCPU_HOUR
