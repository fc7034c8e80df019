"""Learning rates and the dense optimizer, shared by both training lanes (Keras only, no backend). Each lane updates the
embedding tables its own way (the TensorFlow lane: `embedding_optimizers`; the JAX lane:
`components.train.jax_lane.sparse_updates`) at `embedding_learning_rate`. Large-batch learning rates are scaled with
the global batch and warmed up:

    scale = 1                 (none)
            B / B_ref         (linear, Goyal et al., 2017)
            sqrt(B / B_ref)   (sqrt, Krizhevsky, 2014)
    lr(step) = lr_peak · min(1, (step + 1) / warmup_steps),   lr_peak = scale · lr_config
"""

from __future__ import annotations

import math
from typing import Any

import keras

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


EMBEDDING_OPTIMIZERS: tuple[str, ...] = ("lazy_adam", "rowwise_adagrad", "adagrad", "sgd")


def table_config_optimizer(training: TrainingConfig) -> keras.optimizers.Optimizer:
    """`training.embedding_optimizer` as the keras-rs TableConfig optimizer an embedding API applies itself (the TPU
    embedding API on the TensorFlow lane, SparseCore on the JAX lane; sparsely there too).

    The TPU embedding API has no row-wise Adagrad, so `rowwise_adagrad` maps to its full Adagrad; `lazy_adam` maps to
    Keras Adam, which keras-rs turns into the embedding API's Adam (lazy by default)."""
    kind, learning_rate = training.embedding_optimizer, embedding_learning_rate(training)
    if kind == "sgd":
        return keras.optimizers.SGD(learning_rate=learning_rate)
    if kind in ("adagrad", "rowwise_adagrad"):
        return keras.optimizers.Adagrad(learning_rate=learning_rate)
    if kind == "lazy_adam":
        return keras.optimizers.Adam(learning_rate=learning_rate)
    raise ValueError(f"training.embedding_optimizer '{kind}' is not one of {list(EMBEDDING_OPTIMIZERS)}")
