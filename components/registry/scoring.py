"""Champion and challenger on the same examples: per-example log-loss through each model's raw serving signature.

    raw eval tf.Examples (as logged, written by preprocess) ──► model A `serving_default` ──► ℓ_A(i)
                                                          └──► model B `serving_default` ──► ℓ_B(i)
    d_i = ℓ_challenger(i) − ℓ_champion(i);   mean d̄,   95% CI  d̄ ± t(0.975, n−1) · s_d / √n
                                                 (`components.evaluate.stats.paired_difference`)

Scoring goes through `serving_default`, the signature the prediction server calls, so each model applies its
own tf.Transform graph (its own vocabularies) to today's raw fields. Pairing by example removes the day's
noise (click rate, traffic mix) that both models see alike: the interval is about the models, not the day.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from components.preprocess.join import label_key
from components.preprocess.manifest import Manifest

SERVING_SIGNATURE = "serving_default"
SCORING_BATCH = 4096
EPSILON = 1e-7


class ChampionUnscorable(RuntimeError):
    """The current default model cannot be loaded, or cannot read today's raw features (schema changed)."""


@dataclass(frozen=True)
class EvalExamples:
    """Today's eval split as logged: serialized raw tf.Examples and the primary task's labels, in file order."""

    serialized: np.ndarray
    labels: np.ndarray
    task: str

    @classmethod
    def read(cls, examples_dir: str | Path, task: str) -> EvalExamples:
        manifest = Manifest.read(examples_dir)
        if manifest.raw_eval_pattern is None:
            raise FileNotFoundError(f"{examples_dir}: the manifest names no raw eval examples (preprocessed by an "
                                    "older adrank); re-run preprocess")
        files = sorted(glob.glob(str(Path(examples_dir) / manifest.raw_eval_pattern)))
        if not files:
            raise FileNotFoundError(f"no raw eval examples match {Path(examples_dir) / manifest.raw_eval_pattern}")
        records = [r.numpy() for r in tf.data.TFRecordDataset(files, compression_type="GZIP")]
        serialized = np.array(records, dtype=object)
        label_spec = {label_key(task): tf.io.FixedLenFeature([], tf.float32)}
        labels = tf.io.parse_example(serialized, label_spec)[label_key(task)].numpy() if len(records) else np.zeros(0)
        return cls(serialized, labels.astype(np.float64), task)

    @property
    def size(self) -> int:
        return int(self.labels.size)

    @property
    def positives(self) -> int:
        return int(self.labels.sum())


def load_serving_model(model_dir: str) -> tuple[Any, Callable[..., dict[str, tf.Tensor]]]:
    """(the loaded SavedModel, its raw serving function); `ChampionUnscorable` when it cannot be loaded. The
    function runs only while the loaded object is alive."""
    try:
        loaded = tf.saved_model.load(model_dir)
        return loaded, loaded.signatures[SERVING_SIGNATURE]
    except (OSError, KeyError, ValueError, tf.errors.OpError) as error:
        raise ChampionUnscorable(f"cannot load the model at {model_dir}: {_first_line(error)}") from error


def predicted_probabilities(model_dir: str, examples: EvalExamples) -> np.ndarray:
    """P(label) for every example, through the model's `serving_default` on the raw tf.Examples."""
    _loaded, serve = load_serving_model(model_dir)  # keep the loaded object alive while its signature runs
    outputs = []
    try:
        for start in range(0, examples.size, SCORING_BATCH):
            batch = tf.constant(list(examples.serialized[start:start + SCORING_BATCH]), dtype=tf.string)
            result = serve(examples=batch)
            if examples.task not in result:
                raise ChampionUnscorable(
                    f"the model at {model_dir} predicts {sorted(result)}, not task '{examples.task}'"
                )
            outputs.append(result[examples.task].numpy().reshape(-1))
    except (tf.errors.InvalidArgumentError, ValueError, TypeError) as error:
        raise ChampionUnscorable(
            f"the model at {model_dir} cannot read today's raw features (schema changed?): {_first_line(error)}"
        ) from error
    return np.concatenate(outputs) if outputs else np.zeros(0)


def per_example_logloss(labels: np.ndarray, probabilities: np.ndarray) -> np.ndarray:
    p = np.clip(probabilities.astype(np.float64), EPSILON, 1.0 - EPSILON)
    return -(labels * np.log(p) + (1.0 - labels) * np.log(1.0 - p))


def _first_line(error: BaseException) -> str:
    """The line that says what went wrong: TensorFlow's graph errors open with "Graph execution error:" and name
    the cause (e.g. "Feature: campaign_id (data type: string) is required but could not be found.") further down."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    meaningful = [line for line in lines if not line.startswith(("[[", "Graph execution error", "Detected at node"))
                  and not line.startswith("File ")]
    causes = [line for line in meaningful if "Feature:" in line or "Key:" in line]
    text = (causes or meaningful[-1:] or lines[:1] or [""])[0]
    return f"{type(error).__name__}: {text}".rstrip(": ")
