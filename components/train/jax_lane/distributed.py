"""The JAX lane over several processes (multi-host): every replica of the CustomJob runs the same trainer, joined by
`jax.distributed`, and the batch is sharded over every process's devices (one mesh over `jax.devices()`).

    CLUSTER_SPEC with several replicas (`components.train.replica_cluster`; Vertex, and the local engine on
    127.0.0.1), a CPU or GPU target   → jax.distributed.initialize(the chief's address, processes, this one's
                                        index); CPU collectives through gloo
    the same on a TPU target          → jax.distributed.initialize() with JAX's own detection of the TPU slice (the
                                        Cloud TPU VM's metadata; untested here: this machine has no TPU)
    one replica, or none              → nothing: one process, its local devices

Every process reads its own share of the train blocks (`block_reader.TrainingRows`: one input stream per device);
process 0, the chief, evaluates and writes checkpoints, the trained weights and the run summary. The processes end
together: each waits at JAX's shutdown barrier until the chief is done (`SHUTDOWN_TIMEOUT_S`).

Start this before anything asks JAX for its devices (JAX builds its backends once per process).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import jax

from components.train.replica_cluster import ReplicaCluster, replica_cluster

log = logging.getLogger(__name__)

INITIALIZATION_TIMEOUT_S = 600  # every replica must start (import JAX, reach this call) within it
SHUTDOWN_TIMEOUT_S = 6 * 3600  # the other processes wait this long at exit for the chief's evaluation and writes


def join_replicas(target_kind: str, environ: Mapping[str, str]) -> ReplicaCluster | None:
    """Join this process to the run's other replicas (see the module docstring); the cluster joined, None alone."""
    cluster = replica_cluster(environ)
    if cluster is None or cluster.processes == 1:
        return None
    if jax.distributed.is_initialized():
        return cluster
    if target_kind == "tpu":
        log.info("joining the TPU slice's %d hosts (JAX detects the slice)", cluster.processes)
        jax.distributed.initialize(initialization_timeout=INITIALIZATION_TIMEOUT_S,
                                   shutdown_timeout_seconds=SHUTDOWN_TIMEOUT_S)
        return cluster
    if target_kind == "cpu":
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    log.info("process %d of %d, coordinator %s", cluster.process_index, cluster.processes, cluster.coordinator)
    jax.distributed.initialize(coordinator_address=cluster.coordinator, num_processes=cluster.processes,
                               process_id=cluster.process_index, initialization_timeout=INITIALIZATION_TIMEOUT_S,
                               shutdown_timeout_seconds=SHUTDOWN_TIMEOUT_S)
    return cluster


def simulate_host_devices(count: int) -> None:
    """`count` CPU devices in this process (JAX's forced host-platform devices): before JAX builds its CPU backend."""
    if count <= 1:
        return
    jax.config.update("jax_num_cpu_devices", count)
    seen = len(jax.devices("cpu"))
    if seen != count:
        raise RuntimeError(f"a sweep point of {count} simulated devices found JAX's CPU backend built with {seen} "
                           "device(s) already: it trains in a process of its own (the train step's)")
