"""`WriteExampleBlocks`: a split's transformed examples → block files (components/preprocess/block_format.py),
as a Beam transform, so it runs on Dataflow like the rest of preprocess.

    (serialized tf.Example, transformed dict) ──► rows + holdout bucket, keyed by a seeded hash of the example's
        content (`block_format.with_content_keys`) ──► file = key mod F   (F from the split's size: about `examples_per_file` per file, ≥ `min_files`)
        ──► per file: rows sorted by key ──► blocks of `block_examples` (the last one partial) ──► one file
        ──► ("block_examples", split, file) counters for the manifest

Each file is a uniform sample of the split in a seeded hash order, and its content depends only on its examples
(never on the process that serialized them): a retried bundle, or a second run of the same config and seed,
rewrites the same bytes. A file's examples are held in one worker's memory while it is written: `examples_per_file`
bounds that (at 1,000 features, 32,768 examples are ~270 MB).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems

from components.preprocess.block_format import BLOCK_FILE_SUFFIX, encode_blocks, example_matrices, with_content_keys
from components.preprocess.counters import Count
from components.preprocess.manifest import BlockLayout


def block_file(split: str, index: int, files: int) -> str:
    """A block file's path relative to the output root."""
    return f"{split}/blocks-{index:05d}-of-{files:05d}{BLOCK_FILE_SUFFIX}"


class _ExampleRows(beam.DoFn):
    """A batch of (serialized, transformed) examples → (file, (order key, int64 row, float32 row)) per example."""

    def __init__(self, layout: BlockLayout, seed: int):
        self.layout, self.seed = layout, seed

    def process(self, batch: list[tuple[bytes, dict]], files: int) -> Iterator[tuple[int, tuple[int, np.ndarray,
                                                                                                 np.ndarray]]]:
        ints, floats = example_matrices(self.layout, [values for _, values in batch], np.zeros(len(batch), np.int64))
        keys = with_content_keys(self.layout, ints, floats, self.seed).tolist()
        for row, key in enumerate(keys):
            yield key % files, (key, ints[row], floats[row])


class _WriteBlockFile(beam.DoFn):
    """One file's rows → its blocks, written to `root/<split>/blocks-…`; yields the file's example counter."""

    def __init__(self, root: str, split: str, layout: BlockLayout):
        self.root, self.split, self.layout = root.rstrip("/"), split, layout

    def process(self, keyed: tuple[int, Iterable[tuple[int, np.ndarray, np.ndarray]]],
                files: int) -> Iterator[tuple[str, int]]:
        index, rows = keyed
        ordered = sorted(rows, key=lambda row: row[0])
        ints = np.stack([row[1] for row in ordered])
        floats = np.stack([row[2] for row in ordered])
        name = block_file(self.split, index, files)
        with FileSystems.create(f"{self.root}/{name}") as handle:
            for record in encode_blocks(self.layout, ints, floats):
                handle.write(record)
        yield Count("block_examples", self.split, name).key, len(ordered)


class WriteExampleBlocks(beam.PTransform):
    """(serialized tf.Example, transformed dict) pairs of one split → block files; outputs counter pairs."""

    def __init__(self, root: str, split: str, layout: BlockLayout, seed: int, min_files: int,
                 examples_per_file: int = 32_768, label: str | None = None):
        super().__init__(label)
        if examples_per_file < layout.block_examples:
            raise ValueError(f"examples_per_file {examples_per_file} is below one block of {layout.block_examples}")
        self.root, self.split, self.layout, self.seed = root, split, layout, seed
        self.min_files, self.examples_per_file = max(1, min_files), examples_per_file

    def expand(self, examples):
        min_files, per_file = self.min_files, self.examples_per_file
        files = (
            examples
            | "CountForFiles" >> beam.combiners.Count.Globally()
            | "Files" >> beam.Map(lambda n: max(min_files, math.ceil(n / per_file)))
        )
        return (
            examples
            | "Batch" >> beam.BatchElements(min_batch_size=64, max_batch_size=1024)
            | "Rows" >> beam.ParDo(_ExampleRows(self.layout, self.seed), beam.pvalue.AsSingleton(files))
            | "GroupIntoFiles" >> beam.GroupByKey()
            | "WriteBlockFiles" >> beam.ParDo(_WriteBlockFile(self.root, self.split, self.layout),
                                              beam.pvalue.AsSingleton(files))
        )
