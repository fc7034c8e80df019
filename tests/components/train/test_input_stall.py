"""The input stall is 1 − the median over alternating rounds of t_memory / t_pipeline, from the host's clock around
the train function: high when every batch waits on a slow input pipeline, near zero on a feed with nothing to wait
for, and always a share in [0, 1]. (That the paired timing leaves the trained model as it was is checked by the loop
itself on every run: loop.py.)"""

import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from components.train.callbacks import stall_fraction
from components.train.input_capacity import MIN_ROUNDS, PairedRounds, epoch_calls, input_stall_fraction
from components.train.tf_input_capacity import input_examples_per_second, paired_step_times


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


def stall_of(dataset: tf.data.Dataset, seconds: float = 0.0) -> tuple[float, PairedRounds]:
    """The stall of `dataset` against the same model fed from its batches held in memory, in paired rounds."""
    held: list = []
    assert input_examples_per_second(dataset, 4, 0.01, held) is not None and held
    model = tiny_model()
    model.fit(dataset, steps_per_epoch=4, epochs=1, verbose=0)  # trained, as the loop's model is
    rounds = paired_step_times(model, tf.distribute.get_strategy(), dataset, held, seconds, steps_per_epoch=12)
    assert len(rounds.pipeline) == len(rounds.memory) >= MIN_ROUNDS
    fraction = input_stall_fraction(rounds)
    assert fraction is not None and 0.0 <= fraction <= 1.0
    return fraction, rounds


def test_a_slow_input_pipeline_shows_as_stall_and_a_memory_fed_one_does_not():
    slow_input, _ = stall_of(batches().map(slow))
    cached_input, _ = stall_of(batches().take(16).cache().repeat().prefetch(8))
    assert slow_input > 0.5  # 50 ms a batch against a step of about a millisecond
    assert slow_input > cached_input


def test_rounds_run_until_the_memory_feed_had_its_seconds():
    _, rounds = stall_of(batches().take(16).cache().repeat().prefetch(8), seconds=0.3)
    steps_per_round = 2 * epoch_calls(12, 2)  # after the first round of one call: an epoch of calls, 2 steps each
    assert sum(rounds.memory[1:]) * steps_per_round + rounds.memory[0] * 2 >= 0.3
    # each memory round's steps are kept for the step's own rate: one call first, then up to an epoch of calls
    assert len(rounds.memory_steps) == len(rounds.memory) and rounds.memory_steps[0] == 2
    assert all(steps % 2 == 0 and 2 <= steps <= steps_per_round for steps in rounds.memory_steps[1:])


def test_the_stall_is_the_median_share_a_feed_without_waits_would_save():
    # per round t_memory / t_pipeline: 0.5, 0.25, 1.0 -> median 0.5
    assert input_stall_fraction(PairedRounds(pipeline=[2.0, 4.0, 1.0], memory=[1.0, 1.0, 1.0])) == 0.5
    # one round slowed by a neighbour's job (the memory feed's 5.0) moves the median, not the mean, little
    assert input_stall_fraction(PairedRounds(pipeline=[1.0, 1.0, 1.0], memory=[0.9, 5.0, 0.9])) == pytest.approx(0.1)
    assert input_stall_fraction(PairedRounds(pipeline=[1.0], memory=[1.2])) == 0.0  # noise: clipped
    assert input_stall_fraction(PairedRounds()) is None  # nothing timed
    # the step's own rate is the memory rounds' throughput, as the headline is taken: their seconds over their steps
    assert PairedRounds(memory=[3.0, 1.0, 2.0], memory_steps=[1, 2, 1]).memory_seconds_per_step() == 7.0 / 4
    assert PairedRounds(memory=[3.0, 1.0, 2.0], memory_steps=[1, 1, 1]).memory_seconds_per_step() == 2.0
    assert PairedRounds().memory_seconds_per_step() is None
    with pytest.raises(ValueError, match="3 memory rounds but steps for 2"):
        PairedRounds(memory=[3.0, 1.0, 2.0], memory_steps=[1, 2]).memory_seconds_per_step()
    with pytest.raises(ValueError, match="1 memory rounds but steps for 0"):  # rounds must say their steps
        PairedRounds(memory=[3.0]).memory_seconds_per_step()
    assert epoch_calls(87, 8) == 11 and epoch_calls(10**6, 8) == 32 and epoch_calls(0, 8) == 1


def test_the_held_batches_stay_within_their_byte_budget(monkeypatch):
    monkeypatch.setattr("components.train.input_capacity.HELD_BYTES", 3 * 4 * 5 * 4)  # three batches of 4x(4+1) floats
    held: list = []
    input_examples_per_second(batches(), 4, 0.05, held)
    assert len(held) == 3


def test_stall_fraction_is_a_share_or_none():  # the parameter-server loop's waits and compute
    assert stall_fraction(1.0, 3.0) == 0.25
    assert stall_fraction(0.0, 0.0) is None
    assert stall_fraction(-1e-9, 1.0) == 0.0
