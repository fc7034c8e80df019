"""Keras callbacks of a training run: checkpoints, a NaN stop, the loss curve and the step clock."""

from __future__ import annotations

import math
import time

import keras
import tensorflow as tf


class NonFiniteLossError(RuntimeError):
    """The training loss became NaN or infinite."""


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Raises (not just stops) so the run fails with a clear error instead of saving a broken model."""

    def on_train_batch_end(self, batch, logs=None):
        logs = logs or {}
        loss, gradient_norm = logs.get("loss"), logs.get("gradient_norm")
        loss_finite = loss is None or math.isfinite(float(loss))
        if not loss_finite or (gradient_norm is not None and not math.isfinite(float(gradient_norm))):
            step = int(self.model.optimizer.iterations.numpy())
            what = f"training loss is {float(loss)}" if not loss_finite else f"gradient norm is {float(gradient_norm)}"
            raise NonFiniteLossError(
                f"{what} at step {step} (non-finite loss); lower the learning rate, enable "
                "gradient_clip_norm, or check the input features"
            )


class SaveCheckpoint(keras.callbacks.Callback):
    """Saves model and optimizer state at the end of each chunk ('epoch' of fit), numbered by step."""

    def __init__(self, manager: tf.train.CheckpointManager):
        super().__init__()
        self.manager = manager

    def on_epoch_end(self, epoch, logs=None):
        self.manager.save(checkpoint_number=int(self.model.optimizer.iterations.numpy()))


class LossCurve(keras.callbacks.Callback):
    """(step, mean training loss of the chunk) at the end of every chunk."""

    def __init__(self):
        super().__init__()
        self.points: list[tuple[int, float]] = []

    def on_epoch_end(self, epoch, logs=None):
        if logs and "loss" in logs:
            self.points.append((int(self.model.optimizer.iterations.numpy()), float(logs["loss"])))


class StepClock(keras.callbacks.Callback):
    """Steady-state step time: starts after the first execution (tracing, warm-up), stops at the end."""

    def __init__(self):
        super().__init__()
        self.first_step: int | None = None
        self.started: float | None = None
        self.last_step = 0
        self.stopped: float | None = None

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if self.started is None:
            self.started, self.first_step = time.perf_counter(), step
        self.last_step, self.stopped = step, time.perf_counter()

    def steady_steps_per_second(self) -> float | None:
        if self.started is None or self.stopped is None or self.last_step <= (self.first_step or 0):
            return None
        return (self.last_step - self.first_step) / (self.stopped - self.started)
