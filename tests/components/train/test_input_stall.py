"""The input stall is 1 − t_memory / t_run from the host's clock around the train function: high when every batch
waits on a slow input pipeline, near zero on a feed with nothing to wait for, and always a share in [0, 1]. (That the
memory-fed timing leaves the trained model as it was is checked by the loop itself on every run: loop.py.)"""

import time

import keras
import numpy as np
import tensorflow as tf

from components.train.callbacks import stall_fraction
from components.train.input_capacity import (
    WARM_UP_EXECUTIONS,
    ExecutionClock,
    ExecutionTimes,
    input_examples_per_second,
    input_stall_fraction,
    memory_fed_times,
)


def tiny_model() -> keras.Model:
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
    return model


def batches() -> tf.data.Dataset:
    x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(4).repeat()


def slow(x, y):
    def wait(value):
        time.sleep(0.05)  # an input pipeline far slower than this tiny model's step
        return value

    return tf.ensure_shape(tf.py_function(wait, [x], tf.float32), [4, 4]), y


def stall_of(dataset: tf.data.Dataset) -> float:
    """The stall of 12 steps trained from `dataset`, against the same model fed from its batches held in memory."""
    held: list = []
    assert input_examples_per_second(dataset, 4, 0.01, held) is not None and held
    model = tiny_model()
    clock = ExecutionClock(model)
    model.fit(dataset, steps_per_epoch=12, epochs=1, verbose=0)
    run = clock.times
    assert run.calls == 6 and run.steps == 12 - 2 * WARM_UP_EXECUTIONS  # the first call (tracing) left out
    memory = memory_fed_times(model, clock, held, seconds=0.0, steps=run.steps)
    assert memory.steps >= 6  # at least MIN_TIMED_EXECUTIONS calls of 2 steps
    fraction = input_stall_fraction(run, memory)
    assert fraction is not None and 0.0 <= fraction <= 1.0
    return fraction


def test_a_slow_input_pipeline_shows_as_stall_and_a_memory_fed_one_does_not():
    slow_input = stall_of(batches().map(slow))
    cached_input = stall_of(batches().take(16).cache().repeat().prefetch(8))
    assert slow_input > 0.5  # 50 ms a batch against a step of about a millisecond
    assert slow_input > cached_input


def test_the_stall_is_the_share_a_feed_without_waits_would_save():
    assert input_stall_fraction(ExecutionTimes(5, 100, 2.0), ExecutionTimes(5, 50, 0.5)) == 0.5
    assert input_stall_fraction(ExecutionTimes(5, 100, 1.0), ExecutionTimes(5, 100, 1.2)) == 0.0  # noise: clipped
    assert input_stall_fraction(ExecutionTimes(), ExecutionTimes(5, 100, 1.0)) is None  # nothing timed
    assert ExecutionTimes(3, 0, 0.0).seconds_per_step() is None


def test_the_held_batches_stay_within_their_byte_budget(monkeypatch):
    monkeypatch.setattr("components.train.input_capacity.HELD_BYTES", 3 * 4 * 5 * 4)  # three batches of 4x(4+1) floats
    held: list = []
    input_examples_per_second(batches(), 4, 0.05, held)
    assert len(held) == 3


def test_stall_fraction_is_a_share_or_none():  # the parameter-server loop's waits and compute
    assert stall_fraction(1.0, 3.0) == 0.25
    assert stall_fraction(0.0, 0.0) is None
    assert stall_fraction(-1e-9, 1.0) == 0.0
