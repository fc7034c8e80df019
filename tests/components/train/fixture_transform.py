"""Raw examples → a real tf.Transform run (Beam DirectRunner, in memory) → transformed shards + manifest.

A tiny stand-in for the preprocess step, in the same contract, so the serving signature (raw features
through the transform layer) can be tested against the evaluation path.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf

from components.contracts.manifest import FeatureInfo, Manifest, SplitInfo

MAX_INTERESTS = 3
RAW_SPEC = {
    "user_id": tf.io.FixedLenFeature([], tf.string),
    "ad_id": tf.io.FixedLenFeature([], tf.string),
    "user_interests": tf.io.VarLenFeature(tf.string),
    "ad_bid": tf.io.FixedLenFeature([], tf.float32),
    "label_engagement": tf.io.FixedLenFeature([], tf.float32),
}


def preprocessing_fn(inputs):
    import tensorflow_transform as tft

    tokens = tf.RaggedTensor.from_sparse(inputs["user_interests"])
    interests = tokens.with_flat_values(
        tft.compute_and_apply_vocabulary(tokens.flat_values, num_oov_buckets=1, vocab_filename="interests") + 1
    )
    return {
        "user_id": tf.strings.to_hash_bucket_fast(inputs["user_id"], 30),
        "ad_id": tft.compute_and_apply_vocabulary(inputs["ad_id"], num_oov_buckets=1, vocab_filename="ads"),
        "user_interests": interests.to_tensor(default_value=0, shape=[None, MAX_INTERESTS]),
        "ad_bid": tft.scale_to_z_score(inputs["ad_bid"]),
        "label_engagement": tf.identity(inputs["label_engagement"]),
    }


def raw_rows(count: int, rng: np.random.Generator) -> list[dict]:
    rows = []
    for _ in range(count):
        user, ad = int(rng.integers(0, 40)), int(rng.integers(0, 8))
        interests = [f"i{int(k)}" for k in rng.integers(0, 6, int(rng.integers(0, MAX_INTERESTS + 1)))]
        bid = float(rng.gamma(2.0, 1.0))
        logit = -1.0 + 0.8 * (bid - 2.0) + (1.0 if (user + ad) % 3 == 0 else -0.5) + 0.5 * ("i2" in interests)
        rows.append({
            "user_id": f"u{user}", "ad_id": f"a{ad}", "user_interests": interests, "ad_bid": bid,
            "label_engagement": float(rng.random() < 1 / (1 + np.exp(-logit))),
        })
    return rows


def raw_example(row: dict) -> bytes:
    def strings(values):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode() for v in values]))

    feature = {
        "user_id": strings([row["user_id"]]),
        "ad_id": strings([row["ad_id"]]),
        "user_interests": strings(row["user_interests"]),
        "ad_bid": tf.train.Feature(float_list=tf.train.FloatList(value=[row["ad_bid"]])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_transformed_with_tft(directory: str | Path, train: int = 1024, eval: int = 256, seed: int = 0,
                               force_tf_compat_v1: bool = False) -> list[dict]:
    """Writes the contract into `directory`; returns the raw eval rows in the order of the eval shard.
    `force_tf_compat_v1`: a TF1 transform graph with the raw metadata beside it, as the preprocess step writes today;
    else a TF2 graph without it, as the step wrote before (`export.raw_feature_spec` reads its graph's inputs)."""
    import apache_beam as beam
    import tensorflow_transform as tft
    import tensorflow_transform.beam as tft_beam
    from tensorflow_transform.tf_metadata import dataset_metadata, metadata_io, schema_utils

    directory = Path(directory)
    rng = np.random.default_rng(seed)
    rows = {"train": raw_rows(train, rng), "eval": raw_rows(eval, rng)}
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(RAW_SPEC))
    # tf.Transform's scratch space is gone when the job ends, as in the step: a TF1 graph names its vocabularies
    # there, and loading it must find them under transform_fn/assets instead
    with tempfile.TemporaryDirectory() as temp, beam.Pipeline(runner="DirectRunner") as pipeline, tft_beam.Context(
        temp_dir=temp, force_tf_compat_v1=force_tf_compat_v1
    ):
        train_rows = pipeline | "Train" >> beam.Create(rows["train"], reshuffle=False)
        eval_rows = pipeline | "Eval" >> beam.Create(rows["eval"], reshuffle=False)
        transform_fn = (train_rows, metadata) | tft_beam.AnalyzeDataset(preprocessing_fn)
        for split, collection in (("train", train_rows), ("eval", eval_rows)):
            (transformed, transformed_metadata) = ((collection, metadata), transform_fn) | (
                f"Transform{split}" >> tft_beam.TransformDataset()
            )
            _ = (
                transformed
                | f"Encode{split}" >> beam.Map(tft.coders.ExampleProtoCoder(transformed_metadata.schema).encode)
                | f"Write{split}" >> beam.io.WriteToTFRecord(
                    str(directory / split / "part"), file_name_suffix=".tfrecord.gz", num_shards=1,
                    compression_type=beam.io.filesystem.CompressionTypes.GZIP,
                )
            )
        _ = transform_fn | tft_beam.WriteTransformFn(str(directory))
    if force_tf_compat_v1:
        metadata_io.write_metadata(metadata, str(directory / tft.TFTransformOutput.RAW_METADATA_DIR))
    output = tft.TFTransformOutput(str(directory))
    features = [
        FeatureInfo(name="user_id", kind="categorical", dtype="int64", table_rows=30),
        FeatureInfo(name="ad_id", kind="categorical", dtype="int64", table_rows=output.vocabulary_size_by_name("ads") + 1),
        FeatureInfo(
            name="user_interests", kind="categorical_list", dtype="int64", length=MAX_INTERESTS,
            table_rows=output.vocabulary_size_by_name("interests") + 2, combiner="mean",
        ),
        FeatureInfo(name="ad_bid", kind="numeric", dtype="float32"),
    ]
    splits = {
        split: SplitInfo(
            examples=len(rows[split]),
            label_rates={"engagement": float(np.mean([r["label_engagement"] for r in rows[split]]))},
            file_pattern=f"{split}/part-*.tfrecord.gz",
        )
        for split in rows
    }
    Manifest(tasks=["engagement"], features=features, splits=splits, transform_fn_dir="transform_fn").write(directory)
    return rows["eval"]
