"""Where a stacked embedding table lives: on the host for large tables of GPU runs, in row ranges over the parameter
servers of a ps cluster."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import tensorflow as tf
from tensorflow.python.ops.resource_variable_ops import default_variable_creator_v2


@contextlib.contextmanager
def host_variables(device: str | None):
    """Variables created inside live on `device` alone: one copy, outside a mirrored strategy's replication
    (which ignores `tf.device`). Optimizers apply their gradients once, summed over replicas."""
    if device is None:
        yield
        return

    def create_on_device(next_creator, **kwargs):
        with tf.device(device):
            return default_variable_creator_v2(None, **kwargs)  # skips the strategy's creator

    with tf.variable_creator_scope(create_on_device):
        yield


@dataclass(frozen=True)
class TablePlacement:
    """Where a stacked table lives: on the host when it is above `host_table_bytes` (GPU runs), and split into
    `shards` row ranges when it is above `shard_bytes` (parameter-server runs: one range per ps task)."""

    host_table_bytes: int | None = None
    shards: int = 1
    shard_bytes: int | None = None

    def device_for(self, table_bytes: int) -> str | None:
        if self.host_table_bytes is not None and table_bytes > self.host_table_bytes:
            return "/CPU:0"
        return None

    def shards_for(self, table_bytes: int, rows: int) -> int:
        if self.shards > 1 and self.shard_bytes is not None and table_bytes > self.shard_bytes:
            return min(self.shards, rows)
        return 1

    def get_config(self) -> dict[str, Any]:
        return {"host_table_bytes": self.host_table_bytes, "shards": self.shards, "shard_bytes": self.shard_bytes}


def shard_rows(rows: int, shards: int) -> list[int]:
    """Row counts of `shards` contiguous ranges, as `tf.nn.embedding_lookup` splits ids over a list of tables
    (the first `rows % shards` ranges hold one row more)."""
    return [rows // shards + (1 if s < rows % shards else 0) for s in range(shards)]
