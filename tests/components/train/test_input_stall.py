"""The input-stall share is measured inside the train function: high when every batch waits on a slow
input pipeline, low when batches come from memory, and always a share in [0, 1]."""

import time

import keras
import numpy as np
import tensorflow as tf

from components.train.callbacks import InputStallMeter, stall_fraction


def stall_of(dataset: tf.data.Dataset) -> float:
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
    meter = InputStallMeter()
    model.train_step = meter.wrap(model.train_step, model)
    model.fit(dataset, steps_per_epoch=12, epochs=1, callbacks=[meter], verbose=0)
    fraction = meter.input_stall_fraction()
    assert fraction is not None and 0.0 <= fraction <= 1.0
    return fraction


def batches() -> tf.data.Dataset:
    x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(4).repeat()


def slow(x, y):
    def wait(value):
        time.sleep(0.05)  # an input pipeline far slower than this tiny model's step
        return value

    return tf.py_function(wait, [x], tf.float32), y


def test_a_slow_input_pipeline_shows_as_stall_and_a_cached_one_does_not():
    slow_input = stall_of(batches().map(lambda x, y: slow(x, y)).map(lambda x, y: (tf.ensure_shape(x, [4, 4]), y)))
    cached_input = stall_of(batches().take(16).cache().repeat().prefetch(8))
    assert slow_input > 0.5
    assert slow_input > cached_input


def test_stall_fraction_is_a_share_or_none():
    assert stall_fraction(1.0, 3.0) == 0.25
    assert stall_fraction(0.0, 0.0) is None
    assert stall_fraction(-1e-9, 1.0) == 0.0
