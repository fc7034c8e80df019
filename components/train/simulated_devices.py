"""How many devices a training process simulates on its host's CPU: a scaling sweep's point of factor N on a CPU
target, trained by one process (the local backend's train step), trains on N simulated devices, so `adrank run` can
sweep a target over 1, 2, 4, ... devices on a laptop (`targets[].scale`, docs/scaling.md).

    a CPU sweep point of factor N, one process        → N devices: JAX's forced host-platform devices
                                                        (`jax_num_cpu_devices`), TensorFlow's logical CPUs
    the same point on N replicas (CLUSTER_SPEC)       → 1 per process: the N processes are the devices
    a GPU or TPU target, or no sweep                  → none simulated: the devices the runtime finds

Simulated devices share the host's cores: their throughput says how the trainer's data parallelism behaves (its
collectives, its sharded input), never what N accelerators would deliver. The run records that its devices were
simulated (`HardwareSeen.simulated`, read from the runtime) and the report says so beside every figure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from components.train.replica_cluster import process_count
from configs.training import TargetConfig


def simulated_device_count(target: TargetConfig, environ: Mapping[str, str] = os.environ) -> int:
    """The devices `target`'s run simulates in this process (1: none simulated; see the module docstring)."""
    point = target.scale_point
    if point is None or point.factor == 1 or target.kind != "cpu":
        return 1
    processes = process_count(environ)
    if processes > 1:
        return 1
    return point.factor
