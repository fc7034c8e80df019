"""The JAX lane's predictions over a split (eval metrics, the per-epoch eval log-loss, the calibration step's data):
one jitted stateless call of the model per batch, batches of one shape (the last one padded and its padding cut)."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np

from components.contracts.manifest import Manifest
from components.evaluate import metrics as ranking_metrics
from components.train.jax_lane.block_reader import BlockSplit, Holdout, sequential_batches
from components.train.jax_lane.step import LabelColumns, TrainState
from components.train.models.base import RankingModel
from components.train.packed_batch import PACKED_FLOAT32, PACKED_INT64


class SplitPredictor:
    """Predicts any split of one examples directory with the model's current state."""

    def __init__(self, model: RankingModel, manifest: Manifest, examples_dir: str | Path, labels: LabelColumns):
        self.model, self.manifest, self.examples_dir, self.labels = model, manifest, examples_dir, labels
        self.tasks = list(manifest.tasks)

        def predict(trainable, non_trainable, ints, floats):
            outputs, _ = model.stateless_call(trainable, non_trainable,
                                              {PACKED_INT64: ints, PACKED_FLOAT32: floats}, training=False)
            return {task: outputs[task].reshape(-1).astype("float32") for task in self.tasks}

        self._predict = jax.jit(predict)
        self.state: TrainState | None = None

    def predict_split(self, split: str, batch_size: int, holdout_fraction: float = 0.0, holdout: str = "only",
                      limit: int | None = None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(labels, probabilities) per task over `split` (its held-out slice, or the rest), in file order; with
        `limit`, over its first whole batches holding at least that many examples."""
        if self.state is None:
            raise RuntimeError("the predictor has no state: set `state` to the trained state first")
        reader = BlockSplit(self.examples_dir, self.manifest, split, Holdout(holdout_fraction, holdout == "only"))
        labels: dict[str, list] = {task: [] for task in self.tasks}
        probabilities: dict[str, list] = {task: [] for task in self.tasks}
        read = 0
        for ints, floats, rows in sequential_batches(reader, batch_size):
            if limit is not None and read >= limit:
                break
            read += rows
            outputs = self._predict(self.state.trainable, self.state.non_trainable, ints, floats)
            batch_labels = self.labels.labels(ints, floats)
            for task in self.tasks:
                labels[task].append(np.asarray(batch_labels[task]).reshape(-1)[:rows])
                probabilities[task].append(np.asarray(outputs[task])[:rows])
        return ({task: np.concatenate(v) if v else np.zeros(0, np.float32) for task, v in labels.items()},
                {task: np.concatenate(v) if v else np.zeros(0, np.float32) for task, v in probabilities.items()})

    def eval_logloss(self, batch_size: int, limit: int | None = None) -> float:
        """The eval split's log-loss (over its first `limit` examples, in whole batches, when given), the mean over
        tasks."""
        labels, probabilities = self.predict_split("eval", batch_size, limit=limit)
        return float(np.mean([ranking_metrics.logloss(labels[t], probabilities[t]) for t in self.tasks]))
