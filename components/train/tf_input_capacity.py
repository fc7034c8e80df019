"""The TensorFlow lane's input capacity and paired-rounds timing (what they measure: `components.train.input_capacity`):
the train dataset read alone, batches of it held in memory as a `tf.data` feed, and Keras's train function called on
each feed."""

from __future__ import annotations

import time

import keras
import tensorflow as tf

from components.train import input_capacity
from components.train.input_capacity import HELD_BATCHES, WARM_UP_BATCHES, PairedRounds, paired_rounds
from components.train.run_clock import examples_rate


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
    return examples_rate(batches, batch_size, elapsed)


def held_batches(batch) -> int:
    """How many batches like `batch` the memory feed holds: `HELD_BATCHES`, fewer when they would pass `HELD_BYTES`."""
    size = sum(t.shape.num_elements() * t.dtype.size for t in tf.nest.flatten(batch))
    return max(1, min(HELD_BATCHES, input_capacity.HELD_BYTES // max(1, size)))


def memory_feed(batches: list) -> tf.data.Dataset:
    """`batches` served again and again from memory, prefetched: a feed with nothing to wait for (one slice per
    batch, the least tf.data can do)."""
    stacked = tf.nest.map_structure(lambda *tensors: tf.stack(tensors), *batches)
    return tf.data.Dataset.from_tensor_slices(stacked).repeat().prefetch(tf.data.AUTOTUNE)


def paired_step_times(model: keras.Model, strategy: tf.distribute.Strategy, pipeline: tf.data.Dataset,
                      batches: list, seconds: float, steps_per_epoch: int) -> PairedRounds:
    """Alternating rounds of `model.train_function` calls fed from `pipeline` (a fresh iterator of the run's own
    train dataset) and from `batches` held in memory (`memory_feed`), until the memory feed has had `seconds` and
    at least `MIN_ROUNDS` rounds ran (module doc). The first round is one call on each feed; later ones an epoch
    of calls (`epoch_calls`), fewer when `MIN_ROUNDS` rounds of that many would not fit `seconds` at the rate
    measured so far. The first call on each iterator (tracing, the iterator's start, the first fill of its
    buffers) is left out. The model's weights and step counter move on: the caller restores the trained state."""
    feeds = {name: iter(strategy.experimental_distribute_dataset(dataset))
             for name, dataset in (("pipeline", pipeline), ("memory", memory_feed(batches)))}
    steps_per_call = max(1, int(model.steps_per_execution))
    model.make_train_function()  # `fit` made it, unless the run resumed at its last step and trained none
    for iterator in feeds.values():
        timed_calls(model, iterator, 1)
    return paired_rounds(lambda feed, calls: timed_calls(model, feeds[feed], calls), seconds, steps_per_call,
                         steps_per_epoch)


def timed_calls(model: keras.Model, iterator, calls: int) -> float:
    """Host seconds per step of `calls` train-function calls on `iterator`; the step counter's read waits for the
    calls' work to finish."""
    first = int(model.optimizer.iterations.numpy())
    started = time.perf_counter()
    for _ in range(calls):
        model.train_function(iterator)
    steps = int(model.optimizer.iterations.numpy()) - first
    return (time.perf_counter() - started) / max(steps, 1)
