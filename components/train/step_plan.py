"""A run's steps, planned the same way by both training lanes: the epochs split into equal checkpointed chunks, each
chunk a whole number of executions (`steps_per_execution` steps per call of the train function)."""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable

from components.contracts.manifest import Manifest
from configs.training import MAX_RAISED_EPOCHS, ResolvedTarget, TrainingConfig

log = logging.getLogger(__name__)


class StepPlan:
    """Steps of a run, grouped into equal chunks; a checkpoint is written after every chunk.

    A chunk is a whole number of executions (`steps_per_execution` steps each) and an epoch a whole number
    of chunks, so a resumed run restarts at a chunk boundary, each epoch trains every full batch, and the run
    ends at exactly `total_steps`. Only when no such split is possible without collapsing to one step per
    execution are a few steps per epoch left out: `dropped_steps_per_epoch` says how many (RunSummary and
    the report show it).
    """

    def __init__(self, train_examples: int, training: TrainingConfig):
        self.steps_per_epoch = train_examples // training.global_batch_size
        if self.steps_per_epoch < 1:
            raise ValueError(
                f"{train_examples} train examples are fewer than one global batch of {training.global_batch_size}"
            )
        self.chunks_per_epoch = chunks_per_epoch_for(self.steps_per_epoch, training.checkpoints_per_epoch)
        chunk = self.steps_per_epoch // self.chunks_per_epoch
        self.steps_per_execution = steps_per_execution_for(chunk, training.steps_per_execution)
        self.chunk_steps = chunk - chunk % self.steps_per_execution
        self.epochs = training.epochs
        self.chunks = training.epochs * self.chunks_per_epoch
        self.total_steps = self.chunks * self.chunk_steps
        self.dropped_steps_per_epoch = self.steps_per_epoch - self.chunks_per_epoch * self.chunk_steps

    @classmethod
    def for_run(cls, manifest: Manifest, training: TrainingConfig) -> StepPlan:
        """The plan over the train split less the slice held out for the calibration step."""
        return cls(planned_train_examples(manifest, training), training)

    @property
    def dropped_steps(self) -> int:
        return self.dropped_steps_per_epoch * self.epochs

    def ends_epoch(self, chunk_index: int) -> bool:
        """Whether chunk `chunk_index` (0-based over the run) is an epoch's last."""
        return (chunk_index + 1) % self.chunks_per_epoch == 0


def planned_train_examples(manifest: Manifest, training: TrainingConfig) -> int:
    """The train examples a run's steps are planned over: the train split less the calibration step's slice."""
    return round(manifest.splits["train"].examples * (1 - calibration_holdout(training)))


def min_train_steps(train_examples: int, training: TrainingConfig) -> int:
    """The fewest steps a run over `train_examples` trains (`training.min_train_steps`; sqrt: ⌈√train_examples⌉)."""
    if training.min_train_steps == "sqrt":
        return math.isqrt(train_examples - 1) + 1 if train_examples > 0 else 0
    return training.min_train_steps


def epochs_for_split(train_examples: int, training: TrainingConfig) -> int:
    """`training.epochs`, raised on a small split to the fewest epochs that train `min_train_steps` steps, at most
    `MAX_RAISED_EPOCHS` (the rule never lowers the epochs set, and `training.min_train_steps: 0` turns it off)."""
    steps_per_epoch = train_examples // training.global_batch_size
    floor = min_train_steps(train_examples, training)
    if floor == 0 or steps_per_epoch < 1:
        return training.epochs
    return max(training.epochs, min(-(-floor // steps_per_epoch), MAX_RAISED_EPOCHS))


def sized_to_split(resolved: ResolvedTarget, manifest: Manifest) -> ResolvedTarget:
    """`resolved` with its epochs raised by the small-split rule (`epochs_for_split`), saying so in the log; the
    epochs as set are kept in `configured_epochs` for the run summary and the report."""
    training = resolved.training
    train_examples = planned_train_examples(manifest, training)
    epochs = epochs_for_split(train_examples, training)
    if epochs == training.epochs:
        return resolved
    steps_per_epoch = train_examples // training.global_batch_size
    log.info("training %d epochs, not %d: %s train examples at batch %s are %d steps an epoch, and "
             "training.min_train_steps (%s) asks for %s steps (at most %d epochs; 0 turns the rule off)", epochs,
             training.epochs, f"{train_examples:,}", f"{training.global_batch_size:,}", steps_per_epoch,
             training.min_train_steps, f"{min_train_steps(train_examples, training):,}", MAX_RAISED_EPOCHS)
    return dataclasses.replace(resolved, training=training.model_copy(update={"epochs": epochs}),
                               configured_epochs=training.epochs)


def chunks_per_epoch_for(steps_per_epoch: int, checkpoints_per_epoch: int) -> int:
    """The fewest chunks ≥ `checkpoints_per_epoch` (and ≤ twice that) that split the epoch evenly; else
    `checkpoints_per_epoch` itself (the remainder steps are then dropped and reported)."""
    wanted = min(checkpoints_per_epoch, steps_per_epoch)
    for chunks in range(wanted, min(2 * wanted, steps_per_epoch) + 1):
        if steps_per_epoch % chunks == 0:
            return chunks
    return wanted


def steps_per_execution_for(chunk: int, configured: int, max_waste: float = 0.05) -> int:
    """The largest steps-per-execution ≤ `configured` that divides a chunk, so no step is dropped (chunk 279,
    configured 8 → 3, not 8, which would drop 7 steps every epoch). Only when that divisor is below a quarter
    of `configured` (a prime chunk: it would be 1) does speed win: the largest value that drops at most
    `max_waste` of the chunk."""
    limit = min(configured, chunk)
    divisor = max(d for d in range(1, limit + 1) if chunk % d == 0)
    if 4 * divisor >= configured:
        return divisor
    return max(d for d in range(1, limit + 1) if chunk % d <= max_waste * chunk)


def calibration_holdout(training: TrainingConfig) -> float:
    """The share of train examples held out of training for the calibration step (0 without one): with
    `holdout` it is fitted there, with `latest_train_days` the held-out part of those days is what decides whether
    it is kept (the model never trained on it)."""
    if training.calibration == "none":
        return 0.0
    return training.calibration_holdout_fraction


class CheckpointCadence:
    """Whether a chunk's end writes a checkpoint: every chunk, or (`training.checkpoint_every_minutes`) the first
    chunk end at least that many minutes after the last checkpoint; the run's last chunk always. Both lanes ask it."""

    def __init__(self, every_minutes: float | None, clock: Callable[[], float] = time.monotonic):
        self.every_seconds = None if every_minutes is None else every_minutes * 60.0
        self.clock = clock
        self.last = clock()

    def due(self, last_chunk: bool) -> bool:
        now = self.clock()
        if last_chunk or self.every_seconds is None or now - self.last >= self.every_seconds:
            self.last = now
            return True
        return False
