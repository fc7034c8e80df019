"""Cutting a batch into its parts per partition of a key."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from components.preprocess.partitions import partition_parts, partitions_of


def test_each_part_holds_its_partitions_rows_in_their_order():
    keys = pa.array([f"id{i % 37}" if i % 11 else None for i in range(500)])
    batch = pa.RecordBatch.from_pydict({"key": keys, "row": pa.array(range(500)),
                                        "values": pa.array([[str(i)] * (i % 3) for i in range(500)])})
    where = partitions_of(keys, 5)
    parts = list(partition_parts(batch, keys, 5))
    assert [p for p, _ in parts] == sorted(set(where.tolist()))  # one part per partition that has rows, ascending
    for partition, part in parts:
        rows = np.flatnonzero(where == partition)
        assert part.to_pydict() == batch.take(pa.array(rows)).to_pydict()


def test_an_empty_batch_has_no_parts_and_one_partition_is_the_batch():
    batch = pa.RecordBatch.from_pydict({"key": pa.array(["a", "b", None])})
    assert list(partition_parts(batch.slice(0, 0), batch.column("key").slice(0, 0), 4)) == []
    [(partition, part)] = partition_parts(batch, batch.column("key"), 1)
    assert partition == 0 and part.equals(batch)
