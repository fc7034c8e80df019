"""The block writer's memory-saving steps keep the bytes: `narrowed` int64 matrices come back as the same values,
`byte_slices` cuts a batch without losing or reordering rows, and `WriteExampleBlocks` writes the same block files
whether the transformed rows come as one batch or as many slices."""

from __future__ import annotations

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pytest
from apache_beam.testing.test_pipeline import TestPipeline

from components.contracts.manifest import TransformedFeatureSpec
from components.preprocess import blocks
from components.preprocess.block_format import block_layout
from components.preprocess.blocks import WriteExampleBlocks, narrowed
from components.preprocess.example_batches import byte_slices

IN_MEMORY = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]


@pytest.mark.parametrize(("low", "high", "dtype"), [(0, 63, np.int8), (-1, 9_999, np.int16),
                                                     (-(2**31), 2**31 - 1, np.int32), (0, 2**31, np.int64),
                                                     (-(2**63), 0, np.int64)])
def test_narrowed_ints_are_the_same_values_in_the_smallest_type_that_holds_them(low, high, dtype):
    ints = np.array([[low, high], [0, 1]], np.int64)
    small = narrowed(ints)
    assert small.dtype == dtype
    np.testing.assert_array_equal(small.astype(np.int64), ints)


def test_byte_slices_keep_every_row_in_order_and_a_small_batch_whole():
    batch = pa.RecordBatch.from_pydict({"x": pa.array(np.arange(1_000, dtype=np.int64)),
                                        "s": pa.array([f"v{i}" for i in range(1_000)])})
    assert byte_slices(batch, batch.nbytes) == [batch]
    cut = byte_slices(batch, batch.nbytes // 7)
    assert len(cut) >= 7 and all(part.num_rows for part in cut)
    assert pa.Table.from_batches(cut).equals(pa.Table.from_batches([batch]))
    assert [part.num_rows for part in byte_slices(batch, 1)] == [1] * 1_000  # at least one row a slice


def _transformed(rows: int) -> pa.RecordBatch:
    ids = np.arange(rows, dtype=np.int64)
    return pa.RecordBatch.from_pydict({
        "a": pa.array([[int(i % 50)] for i in ids], pa.large_list(pa.int64())),
        "big": pa.array([[int(i) * 2**33] for i in ids], pa.large_list(pa.int64())),  # not narrowed
        "y": pa.array([[float(i % 2)] for i in ids], pa.large_list(pa.float32())),
    })


def _written(tmp_path, batches) -> dict[str, bytes]:
    spec = {"a": TransformedFeatureSpec(dtype="int64", shape=[]), "big": TransformedFeatureSpec(dtype="int64", shape=[]),
            "y": TransformedFeatureSpec(dtype="float32", shape=[])}
    layout = block_layout(spec, block_examples=8)
    with TestPipeline(argv=IN_MEMORY) as p:
        _ = p | beam.Create(batches) | WriteExampleBlocks(str(tmp_path), "train", layout, seed=7, min_files=3,
                                                          examples_per_file=8)
    return {path.name: path.read_bytes() for path in sorted((tmp_path / "train").glob("*.blocks"))}


def test_block_files_do_not_depend_on_how_the_transformed_rows_were_batched_nor_on_narrowing(tmp_path, monkeypatch):
    whole = _written(tmp_path / "whole", [_transformed(45)])
    sliced = _written(tmp_path / "sliced", byte_slices(_transformed(45), 200))
    assert len(whole) == 6 and whole == sliced  # ceil(45 / 8) files
    monkeypatch.setattr(blocks, "narrowed", lambda ints: ints)  # the rows kept as int64 all the way
    assert _written(tmp_path / "int64", [_transformed(45)]) == whole
