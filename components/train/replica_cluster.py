"""Which replicas of a CustomJob train one run together, from the environment Vertex gives every replica (and the
local engine, `ops.spec_executor.custom_job`, gives it as Vertex does):

    CLUSTER_SPEC  {"cluster": {"workerpool0": ["host:port", ...], "workerpool1": [...], ...},
                   "task": {"type": "workerpool<i>", "index": j}, ...}

The replicas in pool order (pool 0's first, then pool 1's, ...) are the processes of the run: process 0 is pool 0's
first replica (the chief, the coordinator of JAX's distributed runtime), and a replica's process index is its place in
that order. Lane-neutral (no TensorFlow, no JAX): the JAX lane joins `jax.distributed` with it
(`components.train.jax_lane.distributed`), and both lanes ask how many processes a run has
(`components.train.simulated_devices`). The TensorFlow lane reads TF_CONFIG, its own view of the same cluster.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

CLUSTER_SPEC_ENV = "CLUSTER_SPEC"
POOL = re.compile(r"^workerpool(?P<index>\d+)$")


class ClusterSpecError(ValueError):
    """CLUSTER_SPEC is not what Vertex documents (or names a replica it does not list)."""


@dataclass(frozen=True)
class ReplicaCluster:
    """The run's processes: `addresses` in process order, this replica's `process_index`, and the pools' sizes."""

    addresses: tuple[str, ...]
    process_index: int
    pool_sizes: tuple[int, ...]

    @property
    def processes(self) -> int:
        return len(self.addresses)

    @property
    def coordinator(self) -> str:
        """The chief's address (`host:port`): where process 0 serves JAX's coordination service."""
        return self.addresses[0]

    @property
    def is_chief(self) -> bool:
        return self.process_index == 0


def replica_cluster(environ: Mapping[str, str] = os.environ) -> ReplicaCluster | None:
    """The cluster CLUSTER_SPEC describes, None without one (a process started by hand, the local backend's step)."""
    text = environ.get(CLUSTER_SPEC_ENV)
    if not text:
        return None
    try:
        spec = json.loads(text)
        pools = {int(POOL.match(name)["index"]): [str(address) for address in addresses]  # type: ignore[index]
                 for name, addresses in spec["cluster"].items()}
        task = spec["task"]
        pool, index = int(POOL.match(task["type"])["index"]), int(task["index"])  # type: ignore[index]
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ClusterSpecError(f"{CLUSTER_SPEC_ENV} is not Vertex's cluster description ({error!r}): "
                               f"{text[:300]}") from None
    ordered = sorted(pools)
    if pool not in pools or not 0 <= index < len(pools[pool]):
        raise ClusterSpecError(f"{CLUSTER_SPEC_ENV} names this replica workerpool{pool} {index}, which its cluster "
                               f"({ {f'workerpool{p}': len(pools[p]) for p in ordered} }) does not hold")
    offset = sum(len(pools[p]) for p in ordered if p < pool)
    addresses = tuple(address for p in ordered for address in pools[p])
    return ReplicaCluster(addresses, offset + index, tuple(len(pools[p]) for p in ordered))


def process_count(environ: Mapping[str, str] = os.environ) -> int:
    """How many processes (replicas) train the run: 1 without a cluster."""
    cluster = replica_cluster(environ)
    return 1 if cluster is None else cluster.processes
