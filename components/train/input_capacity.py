"""How much input a run's pipeline can deliver on this host, next to how much its training step consumes.

    input examples/s = batches read from a fresh iterator of the run's own train dataset, alone (before training
                       starts, nothing else on the host's cores), for `training.input_capacity_seconds`, the
                       first batches (buffer fill, tracing) excluded
    step examples/s  = global batch x measured steps / seconds of step compute (the stall meter's clock: the
                       rate the step would run at if the next batch were always ready)

When the step's rate is above the input's, no tuning of the step helps: the run is input-bound by that ratio. When
the input's rate is above the step's and the run still waits, the pipeline is fast enough alone but not while
the step uses the same cores (CPU training). `components.report.findings.input_bound` says which.
"""

from __future__ import annotations

import math
import time

import tensorflow as tf

WARM_UP_BATCHES = 2


def input_examples_per_second(dataset: tf.data.Dataset, batch_size: int, seconds: float) -> float | None:
    """Examples/s `dataset` delivers alone over `seconds` (after `WARM_UP_BATCHES`); None when `seconds` is 0 or
    the dataset ends before the measurement does."""
    if seconds <= 0:
        return None
    iterator = iter(dataset)
    try:
        for _ in range(WARM_UP_BATCHES):
            next(iterator)
        batches, started = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - started) < seconds:
            next(iterator)
            batches += 1
    except StopIteration:
        return None
    return batches * batch_size / elapsed if elapsed > 0 else None


def step_examples_per_second(steps: float, global_batch_size: int, computed_seconds: float) -> float | None:
    """The step's own rate: `steps` of `global_batch_size` in `computed_seconds` of step compute; None if unmeasured."""
    if steps <= 0 or computed_seconds <= 0 or not math.isfinite(computed_seconds):
        return None
    return steps * global_batch_size / computed_seconds
