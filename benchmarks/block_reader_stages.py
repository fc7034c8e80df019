"""Where the block reader's time goes: examples/s after each stage of a training read, at 10 and 1,000 features.

    .venv/bin/python benchmarks/block_reader_stages.py [--features 10 1000] [--seconds 2]

Each line adds one stage to the ones above it, as `components.train.input.block_dataset` chains them (uncached:
files → records → decode (with and without the fingerprint/header check) → block shuffle → window of blocks →
one permutation gather per window → full batches, by `Dataset.rebatch` (what the reader used before) and
by slices (what it does now) → one tensor per feature (what training read before) or the packed batch (what it
reads now: the two matrices, the labels cut out)), then the reader itself in both forms, uncached and cached. Elements are taken inside a `tf.function` (as a training step takes them); "per core" divides by the
cores this process may use. Same examples as `benchmarks/input_pipeline.py`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import tensorflow as tf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from input_pipeline import examples_for, write_examples

from components.contracts.manifest import BLOCK_HEADER_BYTES
from components.train import input as reader
from components.train.input import packed_labels
from components.train.run_clock import examples_rate


def examples_per_second(data: tf.data.Dataset, seconds: float, per_call: int = 8) -> float:
    """Examples/s of `data` (the first dimension of an element's first tensor) after two warm-up calls."""
    iterator = iter(data)

    @tf.function
    def take(count):
        examples = tf.constant(0, tf.int64)
        for _ in tf.range(count):
            examples += tf.cast(tf.shape(tf.nest.flatten(next(iterator))[0])[0], tf.int64)
        return examples

    take(2)
    examples, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        examples += int(take(per_call))
    return examples_rate(examples, 1, time.perf_counter() - started) or 0.0  # examples counted: steps of one


def stages(directory: Path, features: int, batch: int) -> dict[str, tf.data.Dataset]:
    manifest = write_examples(directory, features, examples_for(features), 512)
    layout, blocks = manifest.block_layout, manifest.splits["train"].blocks
    assert layout is not None and blocks is not None
    paths = [path for path, _ in reader.block_files(directory, blocks, layout)]
    options = reader.InputOptions(batch, training=True, seed=1, shuffle_buffer=examples_for(features), repeat=True)
    window = reader.window_blocks(layout, blocks.blocks, options)
    size, ints_width = layout.block_examples, layout.width("int64")

    def records_of(path):
        records = tf.data.FixedLengthRecordDataset(path, layout.record_bytes, buffer_size=2**20)
        return records.enumerate().map(lambda index, record: (path, index, record))

    records = tf.data.Dataset.from_tensor_slices(paths).repeat().interleave(
        records_of, cycle_length=len(paths), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

    def unchecked(path, index, record):
        data = tf.io.decode_raw(record, tf.uint8)[BLOCK_HEADER_BYTES:]
        ints = tf.bitcast(tf.reshape(data[:size * ints_width * 8], [-1, 8]), tf.int64)
        return tf.reshape(ints, [size, ints_width]), tf.bitcast(tf.reshape(data[size * ints_width * 8:], [-1, 4]),
                                                                tf.float32)

    decoded = records.map(lambda path, index, record: reader.decode_block(layout, path, index, record),
                          num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    shuffled = decoded.shuffle(window, seed=1)
    windows = shuffled.batch(window)

    def permute(number, element):
        ints, floats, _ = element
        ints, floats = tf.reshape(ints, [-1, ints.shape[-1]]), tf.reshape(floats, [-1, floats.shape[-1]])
        order = tf.argsort(tf.random.stateless_uniform(tf.shape(ints)[:1], seed=tf.stack([number, number])))
        return tf.gather(ints, order), tf.gather(floats, order)

    permuted = windows.enumerate().map(permute, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    rebatched = permuted.rebatch(batch, drop_remainder=True)
    batches = reader._full_batches(permuted.map(lambda ints, floats: (ints, floats, False)), batch, True)
    return {
        "records read": records.map(lambda path, index, record: tf.zeros([size])),
        "+ decode, no check": records.map(unchecked, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True),
        "+ decode and check": decoded,
        "+ block shuffle": shuffled,
        "+ window of blocks": windows.map(lambda ints, floats, rows: tf.reshape(floats, [-1])),
        "+ window permutation": permuted,
        "+ full batches (rebatch)": rebatched,
        "+ full batches (slices)": batches,
        "+ feature columns": batches.map(reader._columns_to_features(layout, manifest),
                                         num_parallel_calls=tf.data.AUTOTUNE, deterministic=True),
        "+ packed batch (labels cut)": batches.map(packed_labels(layout, list(manifest.tasks)),
                                                   num_parallel_calls=tf.data.AUTOTUNE, deterministic=True),
        "reader, per feature": reader.block_dataset(directory, manifest, "train", options),
        "reader, per feature, cached": reader.block_dataset(directory, manifest, "train", replace(options, cache=True)),
        "reader (packed)": reader.block_dataset(directory, manifest, "train", replace(options, packed=True)),
        "reader (packed), cached": reader.block_dataset(directory, manifest, "train", replace(
            options, packed=True, cache=True)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    print(f"block reader stage by stage, batch {args.batch}, {cores} cores; examples/s per core")
    for features in args.features:
        with tempfile.TemporaryDirectory() as tmp:
            for name, data in stages(Path(tmp), features, args.batch).items():
                print(f"{features:>6} features  {name:<26} {examples_per_second(data, args.seconds) / cores:>12,.0f}",
                      flush=True)


if __name__ == "__main__":
    main()
