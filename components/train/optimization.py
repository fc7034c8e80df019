"""Optimizers: a dense one for every dense weight, a sparse one for the embedding tables (see
`embedding_optimizers`). Large-batch learning rates are scaled with the global batch and warmed up:

    scale = 1                 (none)
            B / B_ref         (linear, Goyal et al., 2017)
            sqrt(B / B_ref)   (sqrt, Krizhevsky, 2014)
    lr(step) = lr_peak · min(1, (step + 1) / warmup_steps),   lr_peak = scale · lr_config
"""

from __future__ import annotations

import math
from typing import Any

import keras

from components.train.embedding_optimizers import SparseEmbeddingOptimizer, tpu_table_optimizer
from configs.training import TrainingConfig


def batch_scale(training: TrainingConfig) -> float:
    ratio = training.global_batch_size / training.reference_batch_size
    return {"none": 1.0, "linear": ratio, "sqrt": math.sqrt(ratio)}[training.learning_rate_scaling]


def scaled_learning_rate(training: TrainingConfig) -> float:
    return training.learning_rate * batch_scale(training)


def scaled_embedding_learning_rate(training: TrainingConfig) -> float | None:
    if training.embedding_learning_rate is None:
        return None
    return training.embedding_learning_rate * batch_scale(training)


@keras.saving.register_keras_serializable(package="adrank")
class LinearWarmup(keras.optimizers.schedules.LearningRateSchedule):
    """Rises linearly from peak/warmup_steps to `peak` over `warmup_steps`, then stays at `peak`."""

    def __init__(self, peak: float, warmup_steps: int):
        self.peak = float(peak)
        self.warmup_steps = int(warmup_steps)

    def __call__(self, step):
        if self.warmup_steps <= 0:
            return keras.ops.convert_to_tensor(self.peak, "float32")
        fraction = (keras.ops.cast(step, "float32") + 1.0) / float(self.warmup_steps)
        return self.peak * keras.ops.minimum(1.0, fraction)

    def get_config(self) -> dict[str, Any]:
        return {"peak": self.peak, "warmup_steps": self.warmup_steps}


def make_optimizer(training: TrainingConfig, learning_rate: float) -> keras.optimizers.Optimizer:
    schedule = LinearWarmup(learning_rate, training.warmup_steps)
    kwargs: dict[str, Any] = {"learning_rate": schedule}
    if training.gradient_clip_norm is not None:
        kwargs["global_clipnorm"] = training.gradient_clip_norm
    if training.optimizer == "adagrad":
        return keras.optimizers.Adagrad(**kwargs)
    return keras.optimizers.Adam(**kwargs)


def embedding_learning_rate(training: TrainingConfig) -> float:
    """The tables' rate: `embedding_learning_rate` when set, else the dense rate (both batch-scaled)."""
    rate = scaled_embedding_learning_rate(training)
    return scaled_learning_rate(training) if rate is None else rate


def make_embedding_optimizer(training: TrainingConfig) -> SparseEmbeddingOptimizer:
    kwargs: dict[str, Any] = {"learning_rate": LinearWarmup(embedding_learning_rate(training), training.warmup_steps)}
    if training.gradient_clip_norm is not None:
        kwargs["global_clipnorm"] = training.gradient_clip_norm
    return SparseEmbeddingOptimizer(training.embedding_optimizer, **kwargs)


def make_optimizers(training: TrainingConfig) -> tuple[keras.optimizers.Optimizer, SparseEmbeddingOptimizer]:
    """(dense optimizer, sparse embedding-table optimizer `training.embedding_optimizer`)."""
    return make_optimizer(training, scaled_learning_rate(training)), make_embedding_optimizer(training)


def tpu_embedding_optimizer(training: TrainingConfig) -> keras.optimizers.Optimizer:
    """`training.embedding_optimizer` as the keras-rs TableConfig optimizer the TPU embedding API applies."""
    return tpu_table_optimizer(training.embedding_optimizer, embedding_learning_rate(training))
