"""A run's steps, planned the same way by both training lanes: the epochs split into equal checkpointed chunks, each
chunk a whole number of executions (`steps_per_execution` steps per call of the train function)."""

from __future__ import annotations

import time
from collections.abc import Callable

from components.contracts.manifest import Manifest
from configs.training import TrainingConfig


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
        return cls(round(manifest.splits["train"].examples * (1 - calibration_holdout(training))), training)

    @property
    def dropped_steps(self) -> int:
        return self.dropped_steps_per_epoch * self.epochs

    def ends_epoch(self, chunk_index: int) -> bool:
        """Whether chunk `chunk_index` (0-based over the run) is an epoch's last."""
        return (chunk_index + 1) % self.chunks_per_epoch == 0


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
