"""Where a stacked embedding table lives: on the host for large tables of GPU runs, in row ranges over the parameter
servers of a ps cluster.

The row ranges are TensorFlow's own: the parameter-server strategy is built with `table_partitioner` as its
`variable_partitioner`, which splits a table created inside `partitioned_table` into a `ShardedVariable` (one
contiguous row range per shard, the first `rows % shards` one row longer; looked up with `tf.nn.embedding_lookup`,
which routes each id to its shard); every other variable (dense weights, optimizer slots) stays whole.
"""

from __future__ import annotations

import contextlib
import contextvars
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


# (placement, table bytes) of the table being created now, if any: what `table_partitioner` splits
_table_being_created: contextvars.ContextVar[tuple[TablePlacement, int] | None] = contextvars.ContextVar(
    "table_being_created", default=None
)


@contextlib.contextmanager
def partitioned_table(placement: TablePlacement, table_bytes: int):
    """The variable created inside is a stacked table of `table_bytes`, split as `placement` says when the
    strategy has `table_partitioner` (parameter servers); elsewhere nothing changes."""
    token = _table_being_created.set((placement, table_bytes))
    try:
        yield
    finally:
        _table_being_created.reset(token)


def table_partitioner(shape: tf.TensorShape, dtype: tf.DType) -> list[int]:
    """`variable_partitioner` of the parameter-server strategy: shards per axis, rows split only for a table
    created inside `partitioned_table`."""
    whole = [1] * len(shape)
    being_created = _table_being_created.get()
    if being_created is None or not whole:
        return whole
    placement, table_bytes = being_created
    return [placement.shards_for(table_bytes, int(shape[0]))] + whole[1:]


def table_shards(variable) -> list:
    """The variables holding a table: its shards when the strategy split it, else the table itself."""
    value = getattr(variable, "value", variable)
    shards = getattr(value, "variables", None)  # a ShardedVariable's row ranges
    return list(shards) if shards is not None and not callable(shards) and len(shards) > 1 else [variable]
