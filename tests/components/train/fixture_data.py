"""Tiny transformed examples in the preprocess → train contract format, with a learnable signal."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from components.contracts.manifest import FeatureInfo, Manifest, SplitBlocks, SplitInfo, TransformedFeatureSpec
from components.preprocess.block_format import block_layout, encode_blocks, example_matrices, holdout_buckets

FEATURES = [
    FeatureInfo(name="user_id", kind="categorical", dtype="int64", table_rows=50),
    FeatureInfo(name="ad_id", kind="categorical", dtype="int64", table_rows=20),
    FeatureInfo(name="user_interests", kind="categorical_list", dtype="int64", length=4, table_rows=12, combiner="mean"),
    FeatureInfo(name="ad_bid", kind="numeric", dtype="float32"),
]


def _example(values: dict) -> bytes:
    feature = {}
    for name, value in values.items():
        array = np.atleast_1d(value)
        if array.dtype.kind in "iu":
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=array.tolist()))
        else:
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=array.astype(np.float32).tolist()))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def synthetic_rows(count: int, tasks: list[str], rng: np.random.Generator) -> list[dict]:
    """Rows whose click probability depends on a user×ad interaction, interests and the bid."""
    rows = []
    user_bias = rng.normal(0, 1.0, 50)
    affinity = rng.normal(0, 1.5, (5, 5))
    for _ in range(count):
        user, ad = int(rng.integers(1, 50)), int(rng.integers(1, 20))
        interests = np.zeros(4, np.int64)
        n = int(rng.integers(0, 5))
        interests[:n] = rng.integers(1, 12, n)
        bid = float(rng.normal())
        logit = -1.0 + 0.5 * user_bias[user] + affinity[user % 5, ad % 5] + 1.5 * bid + 0.5 * (interests == 3).sum()
        row = {"user_id": user, "ad_id": ad, "user_interests": interests, "ad_bid": bid}
        for i, task in enumerate(tasks):
            p = 1.0 / (1.0 + np.exp(-(logit - 1.0 * i)))
            row[f"label_{task}"] = float(rng.random() < p)
        rows.append(row)
    return rows


def write_transformed_examples(
    directory: str | Path, train: int = 2048, eval: int = 512, tasks: tuple[str, ...] = ("engagement",),
    shards: int = 2, seed: int = 0, corrupt_numeric: bool = False, calibration: int = 0, block_examples: int = 0,
) -> Manifest:
    """`corrupt_numeric`: every numeric value is NaN (to test the non-finite-loss stop). `calibration`: also write
    the last that many train rows as the calibration split, as preprocess does for its latest train days.
    `block_examples` > 0: also write every split as block files (one per shard, the same rows), as preprocess does."""
    directory = Path(directory)
    rng = np.random.default_rng(seed)
    splits = {}
    written = {}
    for split, count in (("train", train), ("eval", eval)) + ((("calibration", calibration),) if calibration else ()):
        rows = written["train"][-count:] if split == "calibration" else synthetic_rows(count, list(tasks), rng)
        written[split] = rows
        if corrupt_numeric:
            for row in rows:
                row["ad_bid"] = float("nan")
        (directory / split).mkdir(parents=True, exist_ok=True)
        for shard in range(shards):
            path = directory / split / f"part-{shard:05d}-of-{shards:05d}.tfrecord.gz"
            with tf.io.TFRecordWriter(str(path), options="GZIP") as writer:
                for row in rows[shard::shards]:
                    writer.write(_example(row))
        blocks = None
        if block_examples:
            files = {}
            for shard in range(shards):
                name = f"{split}/blocks-{shard:05d}-of-{shards:05d}.blocks"
                shard_rows = rows[shard::shards]
                ints, floats = example_matrices(layout(tasks, block_examples), shard_rows,
                                                holdout_buckets([_example(row) for row in shard_rows]))
                (directory / name).write_bytes(b"".join(encode_blocks(layout(tasks, block_examples), ints, floats, name)))
                files[name] = len(shard_rows)
            blocks = SplitBlocks(files=files, block_examples=block_examples)
        splits[split] = SplitInfo(
            examples=count,
            label_rates={t: float(np.mean([r[f"label_{t}"] for r in rows])) for t in tasks},
            file_pattern=f"{split}/part-*.tfrecord.gz",
            blocks=blocks,
        )
    manifest = Manifest(tasks=list(tasks), features=FEATURES, splits=splits,
                        block_layout=layout(tasks, block_examples) if block_examples else None)
    manifest.write(directory)
    return manifest


def layout(tasks: tuple[str, ...], block_examples: int):
    """The block layout of the fixture's transformed examples."""
    spec = {f.name: TransformedFeatureSpec(dtype=f.dtype, shape=[f.length] if f.kind == "categorical_list" else [])
            for f in FEATURES}
    spec |= {f"label_{t}": TransformedFeatureSpec(dtype="float32", shape=[]) for t in tasks}
    return block_layout(spec, block_examples)
