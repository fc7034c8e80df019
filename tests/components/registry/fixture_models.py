"""Tiny real SavedModels with a raw `serving_default` signature, and raw eval examples to score them on.

Each model parses serialized tf.Examples (as the exported adrank model does) and returns {task: probability};
`probability(x)` is a TensorFlow function of the raw feature `x`, so tests know every model's log-loss exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import tensorflow as tf

from components.preprocess.manifest import FeatureInfo, Manifest, SplitInfo

TASK = "engagement"


def write_eval_examples(examples_dir: Path, x: np.ndarray, labels: np.ndarray, extra: dict | None = None) -> Path:
    """A preprocess output with just what promotion reads: manifest.json and raw_eval/ TFRecords."""
    (examples_dir / "raw_eval").mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(examples_dir / "raw_eval/part-00000-of-00001.tfrecord.gz"),
                              options=tf.io.TFRecordOptions(compression_type="GZIP")) as writer:
        for value, label in zip(x, labels):
            feature = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=[float(value)])),
                       f"label_{TASK}": tf.train.Feature(float_list=tf.train.FloatList(value=[float(label)]))}
            for name, values in (extra or {}).items():
                feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[values]))
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    rate = float(np.mean(labels))
    Manifest(
        tasks=[TASK],
        features=[FeatureInfo(name="x", kind="numeric", dtype="float32")],
        splits={split: SplitInfo(examples=len(labels), label_rates={TASK: rate}, file_pattern=f"{split}/part-*")
                for split in ("train", "eval")},
        raw_eval_pattern="raw_eval/part-*.tfrecord.gz",
    ).write(examples_dir)
    return examples_dir


class _Scorer(tf.Module):
    def __init__(self, slope: float, bias: float, required: str | None):
        super().__init__()
        self.slope = tf.Variable(slope)
        self.bias = tf.Variable(bias)
        self.spec = {"x": tf.io.FixedLenFeature([], tf.float32)}
        if required:
            self.spec[required] = tf.io.FixedLenFeature([], tf.string)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def serve(self, examples):
        raw = tf.io.parse_example(examples, self.spec)
        return {TASK: tf.sigmoid(self.slope * raw["x"] + self.bias)}


def save_model(model_dir: Path, slope: float, bias: float, required_feature: str | None = None) -> Path:
    """P(click | x) = sigmoid(slope · x + bias); `required_feature`: a raw feature the model cannot serve without."""
    module = _Scorer(slope, bias, required_feature)
    tf.saved_model.save(module, str(model_dir), signatures={"serving_default": module.serve})
    return model_dir


def summary_naming(path: Path, model_dir: Path, logloss: float = 0.3) -> Path:
    """The report's summary.json with `model_dir` as its best exported run."""
    path.write_text(json.dumps({
        "pipeline": "adrank-local", "config_hash": "abc", "primary_task": TASK,
        "runs": [{"target": "cpu", "run_index": 0, "auc": {TASK: 0.7}}],
        "best_exported_run": {"target": "cpu", "run_index": 0, "model_uri": str(model_dir), "logloss": logloss},
    }))
    return path


def day_of_examples(seed: int, n: int = 4000) -> tuple[np.ndarray, np.ndarray]:
    """x ~ N(0, 1), P(y = 1 | x) = sigmoid(2x − 2): the truth the `good` model knows."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n).astype(np.float32)
    y = (rng.random(n) < 1 / (1 + np.exp(-(2 * x - 2)))).astype(np.float32)
    return x, y
