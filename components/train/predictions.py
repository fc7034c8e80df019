"""The model's predictions over a split: (labels, probabilities) per task, in file order, and the eval split's
mean log-loss that the loop measures after each epoch. From blocks, the model is fed packed batches (it splits
them itself, `components.train.packed_batch`), as in training."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from components.contracts.manifest import Manifest
from components.evaluate import metrics as ranking_metrics
from components.train.input import InputOptions, make_dataset
from components.train.models import RankingModel
from components.train.run_evaluation import prediction_batch_size
from configs.training import TrainingConfig


def predict_split(
    model: RankingModel, manifest: Manifest, examples_dir: str, split: str, batch_size: int,
    holdout_fraction: float = 0.0, holdout: str = "only",
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(labels, probabilities) per task over every example of `split` (with `holdout_fraction`: of its
    held-out slice only, or with `holdout="exclude"` of the rest), in file order."""
    data = make_dataset(
        examples_dir,
        manifest,
        split,
        InputOptions(batch_size=batch_size, training=False, drop_remainder=False, deterministic=True,
                     holdout_fraction=holdout_fraction, holdout=holdout, packed=True),
    )
    predict = tf.function(lambda features: model(features, training=False))
    return labels_and_probabilities(data, predict, list(manifest.tasks))


def labels_and_probabilities(data, predict, tasks: list[str]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Run `predict` over every batch of `data`: (labels, probabilities) per task, in batch order."""
    labels: dict[str, list] = {task: [] for task in tasks}
    probabilities: dict[str, list] = {task: [] for task in tasks}
    for features, batch_labels in data:
        outputs = predict(features)
        for task in tasks:
            labels[task].append(batch_labels[task].numpy().reshape(-1))
            probabilities[task].append(outputs[task].numpy().reshape(-1))
    return (
        {task: np.concatenate(v) for task, v in labels.items()},
        {task: np.concatenate(v) for task, v in probabilities.items()},
    )


class EvalSplit:
    """The eval split's mean log-loss over tasks, with one traced prediction function reused every epoch: over the
    split's first `training.eval_sample_examples` examples when set (a bounded cost per epoch), else all of it."""

    def __init__(self, model: RankingModel, manifest: Manifest, examples_dir: str, training: TrainingConfig):
        batch = prediction_batch_size(training)
        self.data = make_dataset(
            examples_dir,
            manifest,
            "eval",
            InputOptions(batch_size=batch, training=False, drop_remainder=False, deterministic=True, packed=True),
        )
        if training.eval_sample_examples is not None:
            self.data = self.data.take(-(-training.eval_sample_examples // batch))
        self.tasks = list(manifest.tasks)
        self.predict = tf.function(lambda features: model(features, training=False))

    def logloss(self) -> float:
        labels, probabilities = labels_and_probabilities(self.data, self.predict, self.tasks)
        return float(np.mean([ranking_metrics.logloss(labels[t], probabilities[t]) for t in self.tasks]))
