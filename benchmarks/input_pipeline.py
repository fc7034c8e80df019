"""Input per host core at 10, 100 and 1,000 features, and the default model's training examples/s fed by each
input path, in one run.

    .venv/bin/python benchmarks/input_pipeline.py [--features 10 100 1000] [--seconds 3] [--batch 512]
                                                  [--train-steps 20] [--candidates]

**Input alone** (no training), examples/s per host core, every path over the same examples (int64 scalar features
+ one float label) in training form (shuffled, static batches, repeated), batches taken inside a `tf.function`
as a training step takes them:

    tf.Example            the per-example path: one vectorized `parse_example` per batch
    blocks                the block reader as training reads it now: packed batches (two matrices), files every epoch
    blocks, cached        the same with the split cached in memory after the first epoch (`training.cache`)
    blocks, per feature   the block reader handing one tensor per feature (what training read before)
    cached                one packed batch served again: the ceiling of a tf.data element stream
    (--candidates: TensorFlow's `tf.data` save format and Parquet through pyarrow, the formats not chosen)

**Training** (`--train-steps` > 0): the default model (configs/local.yaml's `model`, one embedding table per
feature) trained by Keras `fit` on this host's CPU, fed by each path, examples/s after a warm-up (a fresh model
per path). "in memory" is 8 batches of the path held in memory and served again (the ceiling for that form of
batch): packed (the model splits the matrices in its step) and per feature (it does not), so their ratio is what
the split inside the model costs the CPU step. On an accelerator the split runs on the device; not measured here.

"per core" divides by the cores this process may use (`os.sched_getaffinity`): tf.data uses all of them.
Goal: blocks ≥ 20x tf.Example per core at 1,000 features.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import keras
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import tensorflow as tf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from components.contracts.manifest import (
    FeatureInfo,
    Manifest,
    SplitBlocks,
    SplitInfo,
    TransformedFeatureSpec,
)
from components.preprocess.block_format import (
    block_layout,
    encode_blocks,
    example_matrices,
    holdout_buckets,
)
from components.train.input import InputOptions, block_dataset, example_dataset
from components.train.run_clock import examples_rate

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
        (directory / name).write_bytes(b"".join(encode_blocks(layout, ints, floats, name)))
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
    return examples_rate(calls * per_call, batch, time.perf_counter() - started) or 0.0


def per_feature_ceiling(batches: list) -> tf.data.Dataset:
    """`batches` (held in memory) served again in turn: what a step can take when input costs nothing."""
    index = tf.data.Dataset.range(len(batches)).repeat()
    stacked = tf.nest.map_structure(lambda *t: tf.stack(t), *batches)
    return index.map(lambda i: tf.nest.map_structure(lambda t: tf.gather(t, i), stacked)).prefetch(tf.data.AUTOTUNE)


def input_rates(directory: Path, manifest: Manifest, args, cores: int) -> dict[str, float]:
    """Examples/s per core of each input path alone."""
    shuffle = examples_for(len(manifest.features))
    training = InputOptions(args.batch, training=True, seed=1, shuffle_buffer=shuffle, repeat=True, packed=True)
    blocks = block_dataset(directory, manifest, "train", training)
    paths = {
        "tf.Example": example_dataset(directory, manifest, "train", training),
        "blocks": blocks,
        "blocks, cached": block_dataset(directory, manifest, "train", replace(training, cache=True)),
        "blocks, per feature": block_dataset(directory, manifest, "train", replace(training, packed=False)),
        "cached": tf.data.Dataset.from_tensors(next(iter(blocks))).repeat(),
    }
    if args.candidates:
        paths["tf.data save"] = saved_dataset(directory, manifest, args.batch)
        paths["parquet"] = parquet_dataset(directory, manifest, args.batch)
    return {name: rate(data, args.batch, args.seconds) / cores for name, data in paths.items()}


class _SecondEpochClock(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.started = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds = time.perf_counter() - self.started


def trained_examples_per_second(model, data: tf.data.Dataset, steps: int, batch: int) -> float:
    """Examples/s of the second of two `fit` epochs of `steps` steps over one iterator of `data` (the first traces
    the step and fills the reader's buffers; a second `fit` call would start a new iterator and fill them again)."""
    clock = _SecondEpochClock()
    model.fit(data, steps_per_epoch=steps, epochs=2, verbose=0, callbacks=[clock])
    return examples_rate(steps, batch, clock.seconds) or 0.0


def training_rates(directory: Path, manifest: Manifest, args) -> dict[str, float]:
    """The default model's training examples/s fed by each path (a fresh model each), on this host's CPU."""
    from components.train.loop import compiled_model
    from components.train.strategy import runtime_for
    from configs import load_config
    from configs.training import resolve_target

    config = load_config(None)
    values = config.training.model_dump() | {"global_batch_size": args.batch}
    resolved = resolve_target(config.model, type(config.training).model_validate(values), config.target("cpu"))
    runtime = runtime_for("cpu")
    training = InputOptions(args.batch, training=True, seed=1, shuffle_buffer=examples_for(len(manifest.features)),
                            repeat=True, packed=True)
    blocks = block_dataset(directory, manifest, "train", training)
    per_feature = block_dataset(directory, manifest, "train", replace(training, packed=False))
    paths = {
        "in memory, packed": per_feature_ceiling(list(blocks.take(8))),
        "in memory, per feature": per_feature_ceiling(list(per_feature.take(8))),
        "blocks, cached": block_dataset(directory, manifest, "train", replace(training, cache=True)),
        "blocks": blocks,
        "blocks, per feature": per_feature,
        "tf.Example": example_dataset(directory, manifest, "train", training),
    }
    sample = next(iter(per_feature))[0]
    rates = {}
    for name, data in paths.items():
        model = compiled_model(resolved, runtime, manifest, sample, 1)
        rates[name] = trained_examples_per_second(model, data, args.train_steps, args.batch)
        del model
        gc.collect()
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--block-examples", type=int, default=512)
    parser.add_argument("--train-steps", type=int, default=20, help="timed training steps per path; 0: no training")
    parser.add_argument("--candidates", action="store_true", help="also the formats not chosen (tf.data save, Parquet)")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    print(f"batch {args.batch}, {cores} cores, load average {_load()} at the start", flush=True)
    for features in args.features:
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp)
            manifest = write_examples(directory, features, examples_for(features), args.block_examples)
            alone = input_rates(directory, manifest, args, cores)
            print(f"\n{features:,} features, input alone, examples/s per core (ratio to tf.Example):", flush=True)
            for name, value in alone.items():
                print(f"  {name:>22}: {value:>12,.0f}  ({value / alone['tf.Example']:.1f}x)", flush=True)
            if args.train_steps > 0:
                trained = training_rates(directory, manifest, args)
                print(f"{features:,} features, default model training on this CPU, examples/s "
                      f"(ratio to its in-memory ceiling; to tf.Example):", flush=True)
                for name, value in trained.items():
                    ceiling = trained["in memory, per feature" if "per feature" in name or name == "tf.Example"
                                      else "in memory, packed"]
                    print(f"  {name:>22}: {value:>12,.0f}  ({value / ceiling:.2f} of in memory; "
                          f"{value / trained['tf.Example']:.1f}x tf.Example)", flush=True)
                split = trained["in memory, packed"] / trained["in memory, per feature"]
                print(f"  the split inside the model, CPU step from memory: packed {split:.2f}x per feature", flush=True)
    print(f"\nload average {_load()} at the end")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
