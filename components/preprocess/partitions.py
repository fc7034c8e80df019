"""Grouping record batches by a key without a Beam element per record: each batch is cut into one part per
partition of its rows' keys, the parts of a partition meet in one GroupByKey, and a stage then works on all of a
key's rows at once (the attribution join by impression id, a history feature by its id).

    batch ──► partition = SipHash(key) mod P per row ──► (partition, part) ──► GroupByKey ──► one batch per partition

The hash is pandas' `hash_array` (SipHash-2-4 with a fixed key): the same in every process, so all rows of a key
land in one partition on any runner. P (`partition_count`) grows with the input: a partition is what one worker
holds in memory, about `PARTITION_BYTES` of raw logs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import apache_beam as beam
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from components.preprocess.batch_coder import KEYED_BATCH
from components.preprocess.example_batches import concat

PARTITION_BYTES = 64 * 2**20
MAX_PARTITIONS = 4096
UNKNOWN_SIZE_PARTITIONS = 256  # a BigQuery source: its size is not known when the job is built


def partition_count(input_bytes: int | None) -> int:
    """Partitions for an input of `input_bytes` bytes of logs (None: unknown)."""
    if input_bytes is None:
        return UNKNOWN_SIZE_PARTITIONS
    return max(1, min(MAX_PARTITIONS, math.ceil(input_bytes / PARTITION_BYTES)))


def partitions_of(keys: pa.Array, partitions: int) -> np.ndarray:
    """The partition of each key (a string array; a null key is partition 0)."""
    if partitions == 1 or not len(keys):
        return np.zeros(len(keys), np.int64)
    values = np.asarray(keys.fill_null("").to_numpy(zero_copy_only=False), dtype=object)
    return (pd.util.hash_array(values, categorize=True) % np.uint64(partitions)).astype(np.int64)


def partition_parts(batch: pa.RecordBatch, keys: pa.Array, partitions: int) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(partition, the batch's rows in it) for every partition the batch has rows in: the rows put in partition
    order by one `take`, then a zero-copy slice per partition (a `take` per partition costs a call per column per
    partition, most of the keying's time on a wide batch)."""
    where = partitions_of(keys, partitions)
    if not len(where):
        return
    order = np.argsort(where, kind="stable")
    starts = np.concatenate([[0], np.flatnonzero(np.diff(where[order])) + 1])
    ends = np.append(starts[1:], len(order))
    in_order = batch.take(pa.array(order))
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        yield int(where[order[start]]), in_order.slice(start, end - start)


class GroupPartitions(beam.PTransform):
    """`(partition, batch)` pairs → `(partition, one batch of all its rows)`, the rows in an order that does not
    depend on how the parts arrived (sorted by `order_by`, then by the rest of each row's values)."""

    def __init__(self, schema: pa.Schema, order_by: list[str], label: str | None = None):
        super().__init__(label)
        self.schema, self.order_by = schema, order_by

    def expand(self, parts: beam.PCollection) -> beam.PCollection:
        schema, order_by = self.schema, self.order_by
        return (parts
                | "GroupByPartition" >> beam.GroupByKey()
                | "OnePerPartition" >> beam.MapTuple(lambda key, batches: (key, in_stable_order(
                    concat(list(batches), schema), order_by))).with_output_types(KEYED_BATCH))


def in_stable_order(batch: pa.RecordBatch, order_by: list[str]) -> pa.RecordBatch:
    """`batch` sorted by the columns `order_by` (ascending, nulls first), ties by every other column (a list as its
    items joined): the same rows give the same batch whatever order they came in."""
    if batch.num_rows < 2:
        return batch
    names = order_by + [name for name in batch.schema.names if name not in order_by]
    columns = {}
    for name in names:
        column = batch.column(name)
        if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
            column = pc.binary_join(column, "\x1f")
        columns[name] = column
    order = pc.sort_indices(pa.table(columns), sort_keys=[(name, "ascending", "at_start") for name in names])
    return batch.take(order)
