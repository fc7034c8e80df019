"""Which Vertex machines this one can stand in for: any CPU machine type, GPUs only as many as are present,
TPUs never. A worker pool that asks for what is absent makes its task skipped, with the reason.

GPUs are counted with `nvidia-smi -L` (no TensorFlow import in the executor); each replica that asks for
`accelerator_count` GPUs gets its own slice through `CUDA_VISIBLE_DEVICES`.
"""

from __future__ import annotations

import shutil
import subprocess
from functools import lru_cache

TPU_MACHINE_PREFIXES = ("cloud-tpu", "ct")


@lru_cache(maxsize=1)
def local_gpu_count() -> int:
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listing.stdout.splitlines() if line.startswith("GPU "))


def local_device_kinds() -> set[str]:
    """The device kinds a local run can use: 'CPU', and 'GPU' when `nvidia-smi` lists one. What `adrank run` and a
    local compile check targets against (`pipelines.ranking.targets_for(local_devices=...)`), so the command's own
    process never imports an accelerator library (whose start-up lines would reach the console)."""
    return {"CPU"} | ({"GPU"} if local_gpu_count() else set())


def is_tpu(machine_spec: dict) -> bool:
    accelerator = str(machine_spec.get("accelerator_type", ""))
    machine_type = str(machine_spec.get("machine_type", ""))
    return accelerator.startswith("TPU_") or bool(machine_spec.get("tpu_topology")) or \
        machine_type.startswith(TPU_MACHINE_PREFIXES)


def describe(machine_spec: dict) -> str:
    parts = [str(machine_spec.get("machine_type", "?"))]
    if machine_spec.get("accelerator_type"):
        parts.append(f"{int(machine_spec.get('accelerator_count', 0))} x {machine_spec['accelerator_type']}")
    if machine_spec.get("tpu_topology"):
        parts.append(f"topology {machine_spec['tpu_topology']}")
    return ", ".join(parts)


def why_not_here(pools: list[dict]) -> str | None:
    """None when every replica of every pool can run on this machine, else the reason it cannot."""
    gpus_needed = 0
    for index, pool in enumerate(pools):
        machine = pool.get("machine_spec", {})
        if is_tpu(machine):
            return f"worker pool {index} asks for a TPU ({describe(machine)}); this machine has none"
        if str(machine.get("accelerator_type", "")).startswith("NVIDIA_"):
            gpus_needed += int(machine.get("accelerator_count", 0)) * int(pool.get("replica_count", 1))
    if gpus_needed > local_gpu_count():
        return f"the job asks for {gpus_needed} GPU(s) over its replicas; this machine has {local_gpu_count()}"
    return None
