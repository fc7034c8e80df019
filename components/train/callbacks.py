"""Keras callbacks of a TensorFlow-lane training run: checkpoints, a NaN stop, the loss curve with per-epoch evaluation,
TensorBoard scalars and the step clock, each timing its work into the run's clock. Keras's 'epoch' here is a chunk of
the run (see `StepPlan`). None implements `on_train_batch_end`: Keras then hands batch ends to a thread, without
waiting for the device after every execution."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

import keras
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from components.train.failures import NonFiniteLossError
from components.train.run_clock import RunClock
from components.train.step_plan import CheckpointCadence

log = logging.getLogger(__name__)

# TensorBoard's scalar plugin reads float32 rank-0 tensors tagged with this plugin name; writing them with
# the core `tf.summary.write` op needs no tensorboard package in the training image.
SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
)


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Raises (not just stops) so the run fails with a clear error instead of saving a broken model; checked at the
    end of each chunk, before its checkpoint (the chunk's mean loss is NaN when any of its steps' was), so no
    execution waits for the host."""

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        loss, gradient_norm = logs.get("loss"), logs.get("gradient_norm")
        loss_finite = loss is None or math.isfinite(float(loss))
        if not loss_finite or (gradient_norm is not None and not math.isfinite(float(gradient_norm))):
            step = int(self.model.optimizer.iterations.numpy())
            what = f"training loss is {float(loss)}" if not loss_finite else f"gradient norm is {float(gradient_norm)}"
            raise NonFiniteLossError(
                f"{what} by step {step} (non-finite loss); lower the learning rate, enable "
                "gradient_clip_norm, or check the input features"
            )


class SaveCheckpoint(keras.callbacks.Callback):
    """Saves model and optimizer state at the end of a chunk ('epoch' of fit) when the cadence says so, numbered by
    step (timed as the run's checkpoints)."""

    def __init__(self, manager: tf.train.CheckpointManager, clock: RunClock, cadence: CheckpointCadence,
                 last_chunk: int):
        super().__init__()
        self.manager, self.clock, self.cadence, self.last_chunk = manager, clock, cadence, last_chunk

    def on_epoch_end(self, epoch, logs=None):
        if self.cadence.due(epoch == self.last_chunk):
            with self.clock.phase("checkpoints"):
                self.manager.save(checkpoint_number=int(self.model.optimizer.iterations.numpy()))


class EpochEvaluation(keras.callbacks.Callback):
    """After each chunk that ends a training epoch (`ends_epoch(chunk)`), puts its 1-based epoch number into the
    chunk's logs as `epoch` and, every `every_epochs` epochs but the run's last (the final evaluation measures that
    one), the eval log-loss as `eval_logloss`, so over- and underfitting are visible epoch by epoch."""

    def __init__(self, ends_epoch: Callable[[int], bool], chunks_per_epoch: int, last_chunk: int,
                 eval_logloss: Callable[[], float], clock: RunClock, every_epochs: int = 1):
        super().__init__()
        self.ends_epoch = ends_epoch
        self.chunks_per_epoch = chunks_per_epoch
        self.last_chunk = last_chunk
        self.eval_logloss = eval_logloss
        self.clock = clock
        self.every_epochs = every_epochs

    def on_epoch_end(self, epoch, logs=None):
        if logs is None or not self.ends_epoch(epoch):
            return
        logs["epoch"] = (epoch + 1) // self.chunks_per_epoch
        if epoch != self.last_chunk and logs["epoch"] % self.every_epochs == 0:
            with self.clock.phase("evaluation"):
                logs["eval_logloss"] = float(self.eval_logloss())


class LossCurve(keras.callbacks.Callback):
    """(step, mean training loss of the chunk, epoch or None, eval log-loss or None) at the end of every chunk."""

    def __init__(self):
        super().__init__()
        self.points: list[tuple[int, float, int | None, float | None]] = []

    def on_epoch_end(self, epoch, logs=None):
        if logs and "loss" in logs:
            step = int(self.model.optimizer.iterations.numpy())
            self.points.append((step, float(logs["loss"]), logs.get("epoch"), logs.get("eval_logloss")))


class TensorBoardScalars(keras.callbacks.Callback):
    """Writes `train/loss` after every chunk and `eval/logloss` after every evaluated epoch, by global step,
    to `log_dir` (Vertex sets `AIP_TENSORBOARD_LOG_DIR` when a TensorBoard instance is attached)."""

    def __init__(self, log_dir: str):
        super().__init__()
        self.writer = tf.summary.create_file_writer(log_dir)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        step = int(self.model.optimizer.iterations.numpy())
        if "loss" in logs:
            self.write("train/loss", step, float(logs["loss"]))
        if logs.get("eval_logloss") is not None:
            self.write("eval/logloss", step, float(logs["eval_logloss"]))

    def write(self, tag: str, step: int, value: float) -> None:
        with self.writer.as_default():
            tf.summary.write(tag, tf.constant(value, tf.float32), step=step, metadata=SCALAR_METADATA)
        self.writer.flush()

    def write_eval(self, step: int, logloss: float) -> None:
        """The final evaluation, after training."""
        self.write("eval/logloss", step, logloss)


class StepClock(keras.callbacks.Callback):
    """The steady training time of a Keras `fit`, into the run's clock (`components.train.run_clock`): per chunk,
    from its start (from the run's second execution in the chunk that holds the first: tracing and compilation are
    start-up) to its end, read when the chunk's last execution has finished. Put it first in the callbacks, so its
    `on_epoch_end` runs before the checkpoint and the evaluation. It reads the host clock at execution starts
    (`on_train_batch_begin`, which Keras calls without waiting for the device) and the step counter at chunk
    boundaries only: no callback here implements `on_train_batch_end`, so Keras dispatches batch ends without a
    host sync per execution."""

    def __init__(self, clock: RunClock):
        super().__init__()
        self.clock = clock
        self.executions = 0
        self.chunk_started = 0.0
        self.chunk_step = 0
        self.steady_from: tuple[float, int] | None = None  # (time, step) where the second execution began

    def on_epoch_begin(self, epoch, logs=None):
        self.chunk_started = time.perf_counter()
        self.chunk_step = int(self.model.optimizer.iterations.numpy())

    def on_train_batch_begin(self, batch, logs=None):
        self.executions += 1
        if self.executions == 2:
            self.steady_from = (time.perf_counter(), self.chunk_step + int(batch))

    def on_epoch_end(self, epoch, logs=None):
        ended, step = time.perf_counter(), int(self.model.optimizer.iterations.numpy())
        started, first_step = self.chunk_started, self.chunk_step
        if self.steady_from is None:  # the run's first execution was this chunk's only one: all start-up
            self.clock.add("startup", ended - started)
            return
        if self.steady_from[0] > started:  # this chunk held the first execution
            self.clock.add("startup", self.steady_from[0] - started)
            started, first_step = self.steady_from
        self.clock.training_steps(step - first_step, ended - started, 0.0)


def stall_fraction(waited_seconds: float, computed_seconds: float) -> float | None:
    """waits / (waits + compute), clipped into [0, 1]; None when nothing was measured. (The parameter-server loop's
    stall, stamped by the workers around `next(iterator)`; the synchronous loop's is
    `components.train.input_capacity.input_stall_fraction`.)"""
    total = waited_seconds + computed_seconds
    if total <= 0 or not math.isfinite(total):
        return None
    return min(1.0, max(0.0, waited_seconds / total))
