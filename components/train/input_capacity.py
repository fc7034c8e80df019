"""How much input a run's pipeline can deliver on this host, how fast its step runs when no input is waited for,
and how much of its training time its input cost (the input stall).

    input examples/s = batches read from a fresh iterator of the run's own train dataset, alone (before training
                       starts, nothing else on the host's cores), for `training.input_capacity_seconds`, the
                       first batches (buffer fill, tracing) excluded
    step examples/s  = global batch / t_memory
    input stall      = 1 − t_memory / t_run, clipped into [0, 1]

    t_run    = host seconds per step of the run's train-function calls (`ExecutionClock`: each call runs
               steps_per_execution steps, each taking its batch from the input iterator inside the call, so every
               wait for input is inside the timed span; callbacks, checkpoints and evaluations are outside it)
    t_memory = the same clock on the same model, after training, fed from batches of the run's own pipeline held
               in memory (`memory_feed`): nothing to wait for; the caller restores the trained state afterwards

So the stall is the share of the run's step time that a feed with no wait would have saved, whatever caused it:
waiting on an empty prefetch buffer, or (CPU training) the pipeline's threads taking cores from the step. A clock
inside the step cannot see the second, and on a CPU step of a millisecond it mostly measured itself: see
docs/input.md ("The input stall") and benchmarks/stall_meter.py, which checks this figure against a second clock.

When the step's rate is above the input's, no tuning of the step helps: the run is input-bound by that ratio. When
the input's rate is above the step's and the run still stalls, the pipeline is fast enough alone but not while
the step uses the same cores (CPU training). `components.report.findings.input_bound` says which.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import keras
import tensorflow as tf

WARM_UP_BATCHES = 2
HELD_BATCHES = 32  # distinct batches the memory feed cycles through
HELD_BYTES = 64 * 2**20  # ... unless fewer fit this
WARM_UP_EXECUTIONS = 1  # per timing: tracing, a new iterator's start and the first fill of its prefetch buffer
MIN_TIMED_EXECUTIONS = 3  # the memory-fed timing runs at least this many, whatever its time budget


def input_examples_per_second(dataset: tf.data.Dataset, batch_size: int, seconds: float,
                              held: list | None = None) -> float | None:
    """Examples/s `dataset` delivers alone over `seconds` (after `WARM_UP_BATCHES`); None when `seconds` is 0 or
    the dataset ends before the measurement does. `held`: the first batches read are appended to it (up to
    `HELD_BATCHES` and `HELD_BYTES`), for `memory_feed`."""
    if seconds <= 0:
        return None
    iterator = iter(dataset)
    try:
        for _ in range(WARM_UP_BATCHES):
            batch = next(iterator)
            if held is not None:
                held.append(batch)
        limit = 0 if held is None else held_batches(batch)
        batches, started = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - started) < seconds:
            batch = next(iterator)
            if held is not None and len(held) < limit:
                held.append(batch)
            batches += 1
    except StopIteration:
        return None
    return batches * batch_size / elapsed if elapsed > 0 else None


def held_batches(batch) -> int:
    """How many batches like `batch` the memory feed holds: `HELD_BATCHES`, fewer when they would pass `HELD_BYTES`."""
    size = sum(t.shape.num_elements() * t.dtype.size for t in tf.nest.flatten(batch))
    return max(1, min(HELD_BATCHES, HELD_BYTES // max(1, size)))


def memory_feed(batches: list) -> tf.data.Dataset:
    """`batches` served again and again from memory, prefetched: a feed with nothing to wait for (one slice per
    batch, the least tf.data can do)."""
    stacked = tf.nest.map_structure(lambda *tensors: tf.stack(tensors), *batches)
    return tf.data.Dataset.from_tensor_slices(stacked).repeat().prefetch(tf.data.AUTOTUNE)


@dataclass
class ExecutionTimes:
    """Steps and host seconds of timed train-function calls (after the warm-up calls)."""

    calls: int = 0
    steps: int = 0
    seconds: float = 0.0

    def seconds_per_step(self) -> float | None:
        return self.seconds / self.steps if self.steps > 0 and self.seconds > 0 else None


class ExecutionClock:
    """Times every call of `model.train_function` on the host (`time.perf_counter`), steps counted by the
    optimizer's step counter, whose read also waits for the call's work to finish. The first
    `WARM_UP_EXECUTIONS` calls after construction and after every `restart` are left out. Nothing is added to the
    step itself."""

    def __init__(self, model: keras.Model):
        model.make_train_function()
        self.model, self.times = model, ExecutionTimes()
        train_function: Callable = model.train_function
        self.last_step = self._step()

        def timed_train_function(iterator):
            started = time.perf_counter()
            logs = train_function(iterator)
            step = self._step()
            elapsed = time.perf_counter() - started
            self.times.calls += 1
            if self.times.calls > WARM_UP_EXECUTIONS:
                self.times.steps += step - self.last_step
                self.times.seconds += elapsed
            self.last_step = step
            return logs

        model.train_function = timed_train_function

    def restart(self) -> ExecutionTimes:
        """Start a new timing (its first calls are warm-up again); the one that ended."""
        ended, self.times, self.last_step = self.times, ExecutionTimes(), self._step()
        return ended

    def _step(self) -> int:
        return int(self.model.optimizer.iterations.numpy())


class _StopAfter(keras.callbacks.Callback):
    """Stops `fit` once `clock` has timed `steps` steps, or `seconds` of them over at least `MIN_TIMED_EXECUTIONS`
    calls."""

    def __init__(self, clock: ExecutionClock, seconds: float, steps: int):
        super().__init__()
        self.clock, self.seconds, self.steps = clock, seconds, steps

    def on_train_batch_end(self, batch, logs=None):
        times = self.clock.times
        if times.steps >= self.steps or (times.seconds >= self.seconds and times.calls >= WARM_UP_EXECUTIONS
                                         + MIN_TIMED_EXECUTIONS):
            self.model.stop_training = True


def memory_fed_times(model: keras.Model, clock: ExecutionClock, batches: list, seconds: float,
                     steps: int) -> ExecutionTimes:
    """Trains `model` from `batches` held in memory (`memory_feed`) until `clock` has timed `steps` steps or
    `seconds` (at least `MIN_TIMED_EXECUTIONS` calls after the warm-up); the timing. The model's weights and step
    counter move on: the caller restores the trained state afterwards."""
    clock.restart()
    steps_per_call = max(1, int(model.steps_per_execution))
    calls = WARM_UP_EXECUTIONS + MIN_TIMED_EXECUTIONS + -(-max(steps, 1) // steps_per_call)
    model.fit(memory_feed(batches), steps_per_epoch=calls * steps_per_call, epochs=1, verbose=0,
              callbacks=[_StopAfter(clock, seconds, steps)])
    return clock.restart()


def input_stall_fraction(run: ExecutionTimes, memory: ExecutionTimes) -> float | None:
    """1 − t_memory / t_run (seconds per step), clipped into [0, 1]; None when either was not measured."""
    run_step, memory_step = run.seconds_per_step(), memory.seconds_per_step()
    if run_step is None or memory_step is None:
        return None
    return min(1.0, max(0.0, 1.0 - memory_step / run_step))


def step_examples_per_second(steps: float, global_batch_size: int, computed_seconds: float) -> float | None:
    """The step's own rate: `steps` of `global_batch_size` in `computed_seconds`; None if unmeasured."""
    if steps <= 0 or computed_seconds <= 0 or not math.isfinite(computed_seconds):
        return None
    return steps * global_batch_size / computed_seconds
