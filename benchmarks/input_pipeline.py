"""The input pipeline alone (no training): examples/s per host core at 10, 100 and 1,000 features for today's
per-example tf.Example path, the block format the trainer reads (from the files every epoch, and cached in memory
after the first as `training.cache` does when the split fits), the other candidates (TensorFlow's own
`tf.data` save format, Parquet through pyarrow), and the cached-in-memory ceiling, with the ratios to today's path.

    .venv/bin/python benchmarks/input_pipeline.py [--features 10 100 1000] [--seconds 4] [--batch 512]

Every path reads the same examples (int64 scalar features + one float label) in training form: shuffled, batched
to static shapes, repeated; batches are taken inside a `tf.function`, as a training step takes them. "per core" divides by the cores this process may use (`os.sched_getaffinity`): tf.data
uses all of them. Goal on this machine: blocks ≥ 20x tf.Example per core at 1,000 features.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import tensorflow as tf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from components.preprocess.block_format import (
    block_layout,
    encode_blocks,
    example_matrices,
    holdout_buckets,
)
from components.preprocess.manifest import (
    FeatureInfo,
    Manifest,
    SplitBlocks,
    SplitInfo,
    TransformedFeatureSpec,
)
from components.train.input import InputOptions, block_dataset, example_dataset

TASK = "engagement"
LABEL = f"label_{TASK}"
FILES = 4


def examples_for(features: int) -> int:
    """Enough examples that reading them is not all start-up, few enough to write quickly at 1,000 features."""
    return max(4096, 400_000 // features)


def write_examples(directory: Path, features: int, examples: int, block_examples: int) -> Manifest:
    """The same examples as gzip tf.Example shards and as block files, with their manifest."""
    rng = np.random.default_rng(features)
    names = [f"f{j:04d}" for j in range(features)]
    ids = rng.integers(0, 1000, size=(examples, features))
    labels = (rng.random(examples) < 0.2).astype(np.float32)
    rows = [{**{name: int(ids[i, j]) for j, name in enumerate(names)}, LABEL: float(labels[i])} for i in range(examples)]
    serialized = [tf.train.Example(features=tf.train.Features(feature={
        **{name: tf.train.Feature(int64_list=tf.train.Int64List(value=[value])) for name, value in row.items()
           if name != LABEL},
        LABEL: tf.train.Feature(float_list=tf.train.FloatList(value=[row[LABEL]])),
    })).SerializeToString() for row in rows]
    spec = {name: TransformedFeatureSpec(dtype="int64", shape=[]) for name in names}
    spec[LABEL] = TransformedFeatureSpec(dtype="float32", shape=[])
    layout = block_layout(spec, block_examples)
    (directory / "train").mkdir(parents=True, exist_ok=True)
    files = {}
    for shard in range(FILES):
        part = slice(shard, None, FILES)
        with tf.io.TFRecordWriter(str(directory / f"train/part-{shard:05d}.tfrecord.gz"), options="GZIP") as writer:
            for record in serialized[part]:
                writer.write(record)
        ints, floats = example_matrices(layout, rows[part], holdout_buckets(serialized[part]))
        name = f"train/blocks-{shard:05d}-of-{FILES:05d}.blocks"
        (directory / name).write_bytes(b"".join(encode_blocks(layout, ints, floats)))
        files[name] = len(rows[part])
    manifest = Manifest(
        tasks=[TASK],
        features=[FeatureInfo(name=n, kind="categorical", dtype="int64", table_rows=1000) for n in names],
        splits={"train": SplitInfo(examples=examples, label_rates={TASK: float(labels.mean())},
                                   file_pattern="train/part-*.tfrecord.gz",
                                   blocks=SplitBlocks(files=files, block_examples=block_examples))},
        block_layout=layout,
    )
    manifest.write(directory)
    return manifest


def parquet_dataset(directory: Path, manifest: Manifest, batch: int) -> tf.data.Dataset:
    """Parquet (one column per feature) read by pyarrow in record batches, handed to tf.data as numpy."""
    names = [f.name for f in manifest.features]
    path = directory / "train.parquet"
    if not path.exists():
        columns = {name: [] for name in names + [LABEL]}
        for features, labels in example_dataset(directory, manifest, "train", InputOptions(4096, training=False,
                                                                                             drop_remainder=False)):
            for name in names:
                columns[name].append(features[name].numpy())
            columns[LABEL].append(labels[TASK].numpy().reshape(-1))
        pq.write_table(pa.table({n: np.concatenate(v) for n, v in columns.items()}), path)

    def batches():
        while True:
            for record_batch in pq.ParquetFile(path).iter_batches(batch_size=batch):
                if record_batch.num_rows == batch:
                    data = {n: record_batch.column(n).to_numpy() for n in names}
                    yield data, {TASK: record_batch.column(LABEL).to_numpy().reshape(-1, 1)}

    signature = ({n: tf.TensorSpec([batch], tf.int64) for n in names}, {TASK: tf.TensorSpec([batch, 1], tf.float32)})
    return tf.data.Dataset.from_generator(batches, output_signature=signature).prefetch(tf.data.AUTOTUNE)


def saved_dataset(directory: Path, manifest: Manifest, batch: int) -> tf.data.Dataset:
    """TensorFlow's `tf.data` save format of parsed batches (fixed batches: no per-run order across them)."""
    path = directory / "saved"
    if not path.exists():
        parsed = example_dataset(directory, manifest, "train", InputOptions(batch, training=False))
        parsed.save(str(path))
    return tf.data.Dataset.load(str(path)).shuffle(64, seed=1, reshuffle_each_iteration=True).repeat().prefetch(
        tf.data.AUTOTUNE)


def rate(data: tf.data.Dataset, batch: int, seconds: float, per_call: int = 8) -> float:
    """Examples/s over `seconds` after the first calls (buffers filled, functions traced). Batches are taken inside
    a `tf.function`, as a training step takes them: a Python `next()` would time the wrapping of every feature
    tensor into a Python object (~0.1 ms each), not the pipeline."""
    iterator = iter(data)

    @tf.function
    def take(count):
        for _ in tf.range(count):
            features, _labels = next(iterator)
        return tf.shape(next(iter(features.values())))[0]

    for _ in range(2):
        take(per_call)
    calls, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        take(per_call)
        calls += 1
    return calls * per_call * batch / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--block-examples", type=int, default=512)
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    print(f"input pipeline alone, batch {args.batch}, {cores} cores; examples/s per core (ratio to tf.Example)")
    header = ("features", "tf.Example", "blocks", "blocks, cached", "tf.data save", "parquet", "cached",
              "blocks/tf.Example", "cached blocks/tf.Ex")
    print("  ".join(f"{h:>16}" for h in header), flush=True)
    for features in args.features:
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp)
            manifest = write_examples(directory, features, examples_for(features), args.block_examples)
            shuffle = examples_for(features)
            training = InputOptions(args.batch, training=True, seed=1, shuffle_buffer=shuffle, repeat=True)
            blocks = block_dataset(directory, manifest, "train", training)
            cached = tf.data.Dataset.from_tensors(next(iter(blocks))).repeat()
            paths = {
                "tf.Example": example_dataset(directory, manifest, "train", training),
                "blocks": blocks,
                "blocks, cached": block_dataset(directory, manifest, "train", InputOptions(
                    args.batch, training=True, seed=1, shuffle_buffer=shuffle, repeat=True, cache=True)),
                "tf.data save": saved_dataset(directory, manifest, args.batch),
                "parquet": parquet_dataset(directory, manifest, args.batch),
                "cached": cached,
            }
            per_core = {name: rate(data, args.batch, args.seconds) / cores for name, data in paths.items()}
        cells = [f"{per_core[name]:>16,.0f}" for name in header[1:-2]]
        print(f"{features:>16}  " + "  ".join(cells)
              + f"  {per_core['blocks'] / per_core['tf.Example']:>15.1f}x"
              + f"  {per_core['blocks, cached'] / per_core['tf.Example']:>15.1f}x", flush=True)


if __name__ == "__main__":
    main()
