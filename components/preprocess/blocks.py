"""`WriteExampleBlocks`: a split's transformed record batches → block files (components/preprocess/block_format.py),
as a Beam transform, so it runs on Dataflow like the rest of preprocess.

    transformed record batch ──► int64 and float32 matrices (one column slice per feature, no per-row step)
        ──► holdout bucket and order key of each row, from a fingerprint of its content (`with_content_keys`)
        ──► the int64 matrix in the narrowest integer type that holds its values (`narrowed`)
        ──► file = key mod F   (F from the split's size: about `examples_per_file` per file, ≥ `min_files`)
        ──► per file: rows sorted by key, back to int64 ──► blocks of `block_examples` (the last one partial)
        ──► one file ──► ("block_examples", split, file) counters for the manifest

The matrices are made where tf.Transform makes its batches, so what the runner holds until the split's count (and so
F) is known, and what crosses to the per-file grouping, is the matrices, not the transformed record batches: a
transformed value is an int64 in a list column (8 bytes and an 8-byte offset) there; a hashed or vocabulary id
narrowed is 1–4 bytes (ids below 2^7 / 2^15 / 2^31; the holdout bucket, below 10,000, makes it at least 2). The
values are the same: the file gets the same bytes.

Each file is a uniform sample of the split in a seeded hash order, and its content depends only on its examples
(never on the process that computed them, nor on how they were batched): a retried bundle, or a second run of the
same config and seed, rewrites the same bytes. A file's examples are held in one worker's memory while it is
written: `examples_per_file` bounds that (at 1,000 features, 32,768 examples are ~270 MB).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from components.contracts.manifest import BlockLayout
from components.preprocess.block_format import BLOCK_FILE_SUFFIX, HOLDOUT_COLUMN, encode_blocks, with_content_keys
from components.preprocess.counters import Count


def block_file(split: str, index: int, files: int) -> str:
    """A block file's path relative to the output root."""
    return f"{split}/blocks-{index:05d}-of-{files:05d}{BLOCK_FILE_SUFFIX}"


def transformed_matrices(layout: BlockLayout, batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray]:
    """(int64 [n, W_int], float32 [n, W_float]) of a transformed record batch (each column a list of `width` values
    per row, as tf.Transform writes its output record batches); the holdout column left 0."""
    n = batch.num_rows
    matrices: dict[str, np.ndarray] = {"int64": np.zeros([n, layout.width("int64")], np.int64),
                                       "float32": np.zeros([n, layout.width("float32")], np.float32)}
    for dtype, matrix in matrices.items():
        offset = 0
        for column in layout.of_dtype(dtype):
            if column.name != HOLDOUT_COLUMN:
                values = np.asarray(batch.column(column.name).flatten().to_numpy(zero_copy_only=False), dtype)
                if values.size != n * column.width:
                    raise ValueError(f"'{column.name}' has {values.size} values for {n} examples, the layout "
                                     f"{column.width} each")
                matrix[:, offset:offset + column.width] = values.reshape(n, column.width)
            offset += column.width
    return matrices["int64"], matrices["float32"]


NARROW_INTS = (np.int8, np.int16, np.int32)


def narrowed(ints: np.ndarray) -> np.ndarray:
    """`ints` (int64) in the narrowest of int8, int16, int32 that holds every value (itself when none does): the same
    values in fewer bytes while the rows wait for their file (`np.int64` of it is `ints` again)."""
    if not ints.size:
        return ints
    low, high = int(ints.min()), int(ints.max())
    for dtype in NARROW_INTS:
        limits = np.iinfo(dtype)
        if limits.min <= low and high <= limits.max:
            return ints.astype(dtype)
    return ints


FileRows = tuple[np.ndarray, np.ndarray, np.ndarray]  # (order keys, narrowed int64 rows, float32 rows)


class _Matrices(beam.DoFn):
    """A transformed record batch → its rows as (order keys, narrowed int64 matrix, float32 matrix), the holdout
    column filled (`with_content_keys`)."""

    def __init__(self, layout: BlockLayout, seed: int):
        self.layout, self.seed = layout, seed

    def process(self, batch: pa.RecordBatch) -> Iterator[FileRows]:
        if not batch.num_rows:
            return
        ints, floats = transformed_matrices(self.layout, batch)
        keys = with_content_keys(self.layout, ints, floats, self.seed)
        yield keys, narrowed(ints), floats


def _file_parts(rows: FileRows, files: int) -> Iterator[tuple[int, FileRows]]:
    """(file, its part of `rows`) for each file the rows have rows in (file = order key mod `files`)."""
    keys, ints, floats = rows
    where = (keys % np.uint64(files)).astype(np.int64)
    for index in np.unique(where).tolist():
        taken = np.flatnonzero(where == index)
        yield index, (keys[taken], ints[taken], floats[taken])


class _WriteBlockFile(beam.DoFn):
    """One file's rows → its blocks, written to `root/<split>/blocks-…`; yields the file's example counter."""

    def __init__(self, root: str, split: str, layout: BlockLayout):
        self.root, self.split, self.layout = root.rstrip("/"), split, layout

    def process(self, keyed: tuple[int, Iterable[FileRows]], files: int) -> Iterator[tuple[str, int]]:
        index, parts = keyed
        parts = list(parts)
        keys = np.concatenate([part[0] for part in parts])
        order = np.argsort(keys, kind="stable")  # equal keys: equal content (a 64-bit fingerprint's collision aside)
        ints = np.concatenate([part[1].astype(np.int64, copy=False) for part in parts])[order]
        floats = np.concatenate([part[2] for part in parts])[order]
        name = block_file(self.split, index, files)
        with FileSystems.create(f"{self.root}/{name}") as handle:
            for record in encode_blocks(self.layout, ints, floats, name):
                handle.write(record)
        yield Count("block_examples", self.split, name).key, len(keys)


class WriteExampleBlocks(beam.PTransform):
    """Transformed record batches of one split → block files; outputs counter pairs.

    The number of files follows from the split's examples, counted on `counted` when given: batches holding as many
    rows in all as the transformed ones (the split before tf.Transform, which maps rows one to one). Counted there,
    the count is known before the transformed batches are made, so they are cut into file parts as they come out
    of tf.Transform instead of being held until all of them have been counted."""

    def __init__(self, root: str, split: str, layout: BlockLayout, seed: int, min_files: int,
                 examples_per_file: int = 32_768, label: str | None = None, counted: Any = None):
        super().__init__(label)
        self.counted = counted
        if examples_per_file < layout.block_examples:
            raise ValueError(f"examples_per_file {examples_per_file} is below one block of {layout.block_examples}")
        self.root, self.split, self.layout, self.seed = root, split, layout, seed
        self.min_files, self.examples_per_file = max(1, min_files), examples_per_file

    def expand(self, batches):
        min_files, per_file = self.min_files, self.examples_per_file
        files = (
            (batches if self.counted is None else self.counted)
            | "Rows" >> beam.Map(lambda batch: batch.num_rows)
            | "CountForFiles" >> beam.CombineGlobally(sum).without_defaults()
            | "Files" >> beam.Map(lambda n: max(min_files, math.ceil(n / per_file)))
        )
        # no rows: `min_files` (the side input's default, where a global combine's default would cost a stage)
        file_count = beam.pvalue.AsSingleton(files, default_value=min_files)
        return (
            batches
            | "Matrices" >> beam.ParDo(_Matrices(self.layout, self.seed))
            | "FileParts" >> beam.FlatMap(_file_parts, file_count)
            | "GroupIntoFiles" >> beam.GroupByKey()
            | "WriteBlockFiles" >> beam.ParDo(_WriteBlockFile(self.root, self.split, self.layout), file_count)
        )
