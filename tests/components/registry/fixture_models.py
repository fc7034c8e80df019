"""Tiny real SavedModels with a raw `serving_default` signature, and raw eval examples to score them on.

Each model parses serialized tf.Examples (as the exported adrank model does) and returns {task: probability};
`probability(x)` is a TensorFlow function of the raw feature `x`, so tests know every model's log-loss exactly.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import tensorflow as tf

from components.contracts.benchmark_summary import BenchmarkSummary, BestRun, RunRow
from components.contracts.manifest import FeatureInfo, ImpressionWindow, Manifest, SplitInfo

TASK = "engagement"


def write_eval_examples(examples_dir: Path, x: np.ndarray, labels: np.ndarray, extra: dict | None = None,
                        other_tasks: dict[str, np.ndarray] | None = None, window_end: str | None = None) -> Path:
    """A preprocess output with just what promotion reads: manifest.json and raw_eval/ TFRecords. `other_tasks`:
    more tasks' labels beside the primary one's; `window_end`: the window the run read ended there (RFC 3339)."""
    (examples_dir / "raw_eval").mkdir(parents=True, exist_ok=True)
    other_tasks = other_tasks or {}
    with tf.io.TFRecordWriter(str(examples_dir / "raw_eval/part-00000-of-00001.tfrecord.gz"),
                              options=tf.io.TFRecordOptions(compression_type="GZIP")) as writer:
        for index, (value, label) in enumerate(zip(x, labels)):
            feature = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=[float(value)])),
                       f"label_{TASK}": tf.train.Feature(float_list=tf.train.FloatList(value=[float(label)]))}
            for task, task_labels in other_tasks.items():
                feature[f"label_{task}"] = tf.train.Feature(
                    float_list=tf.train.FloatList(value=[float(task_labels[index])]))
            for name, values in (extra or {}).items():
                feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[values]))
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    rates = {TASK: float(np.mean(labels)), **{task: float(np.mean(v)) for task, v in other_tasks.items()}}
    Manifest(
        tasks=[TASK, *other_tasks],
        features=[FeatureInfo(name="x", kind="numeric", dtype="float32")],
        splits={split: SplitInfo(examples=len(labels), label_rates=rates, file_pattern=f"{split}/part-*")
                for split in ("train", "eval")},
        raw_eval_pattern="raw_eval/part-*.tfrecord.gz",
        window=ImpressionWindow(start=None, end=window_end) if window_end else None,
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


def benchmark_summary(model_uri: str, logloss: float = 0.3, auc: float = 0.7, run_index: int = 0,
                      pipeline: str = "adrank-local") -> BenchmarkSummary:
    """A report summary of one cpu run that exported `model_uri`: its best run and best exported run."""
    best = BestRun(target="cpu", run_index=run_index, logloss=logloss, model_uri=model_uri)
    row = RunRow(target="cpu", run_index=run_index, seed=run_index, hardware="1 × CPU", strategy="DefaultStrategy",
                 replicas=1, global_batch_size=512, steps=100, wall_time_seconds=10.0, examples_per_second=5000.0,
                 input_stall_fraction=None, logloss={TASK: logloss}, auc={TASK: auc}, learning_rate=0.001,
                 model_uri=model_uri)
    return BenchmarkSummary(
        pipeline=pipeline, config_hash="abc", generated=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
        primary_task=TASK, baseline_target="cpu", bayes_logloss=None, constant_ctr_logloss=0.5,
        train_examples=4000, eval_examples=1000, tasks={}, targets={}, runs=[row], best_run=best,
        best_exported_run=best, dead_letter={},
    )


def summary_naming(path: Path, model_dir: Path | str, logloss: float = 0.3, pipeline: str = "adrank-local",
                   auc: float = 0.7) -> Path:
    """The report's summary.json with `model_dir` as its best exported run."""
    path.write_text(benchmark_summary(str(model_dir), logloss, auc, pipeline=pipeline).model_dump_json())
    return path


def day_of_examples(seed: int, n: int = 4000) -> tuple[np.ndarray, np.ndarray]:
    """x ~ N(0, 1), P(y = 1 | x) = sigmoid(2x − 2): the truth the `good` model knows."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n).astype(np.float32)
    y = (rng.random(n) < 1 / (1 + np.exp(-(2 * x - 2)))).astype(np.float32)
    return x, y
