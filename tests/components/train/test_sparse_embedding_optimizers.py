"""Sparse embedding optimizers against dense Keras references on a tiny table."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras_rs.src.layers.embedding.tensorflow.config_conversion import to_tf_tpu_optimizer

from components.train.embedding_optimizers import (
    SparseEmbeddingOptimizer,
    gradient_norm,
    sum_duplicate_rows,
)
from components.train.optimization import table_config_optimizer
from configs.training import TrainingConfig

ROWS, DIM = 10, 4
# rows 7, 8, 9 are in no batch; ids repeat inside a batch
BATCHES = [[0, 1, 1, 3], [2, 2, 2, 0], [4, 5, 6, 1], [3, 0, 6, 6], [5, 5, 4, 2]]


def _train(optimizer, dense_gradients: bool, batches=BATCHES, rows: int = ROWS) -> np.ndarray:
    rng = np.random.default_rng(0)
    initial = rng.normal(size=(ROWS, DIM)).astype("float32")
    if rows > ROWS:  # the same first rows, then rows no batch looks up
        initial = np.concatenate([initial, np.random.default_rng(5).normal(size=(rows - ROWS, DIM)).astype("float32")])
    table = keras.Variable(initial, name="table")
    optimizer.build([table])
    weights = tf.constant(rng.normal(size=(4, DIM)).astype("float32"))
    for ids in batches:
        with tf.GradientTape() as tape:
            vectors = tf.gather(table.value, tf.constant(ids))
            loss = tf.reduce_sum(tf.square(vectors * weights - 0.5))
        (gradient,) = tape.gradient(loss, [table])
        assert isinstance(gradient, tf.IndexedSlices)
        optimizer.apply_gradients([(tf.convert_to_tensor(gradient) if dense_gradients else gradient, table)])
    return table.numpy()


def _initial() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(ROWS, DIM)).astype("float32")


@pytest.mark.parametrize("rows", [ROWS, 100])  # 10 rows <= 4 x 4 ids: one dense fused update; 100: scatter
@pytest.mark.parametrize(
    "kind, reference",
    [
        ("sgd", lambda: keras.optimizers.SGD(learning_rate=0.05)),
        ("adagrad", lambda: keras.optimizers.Adagrad(learning_rate=0.05)),
    ],
)
def test_sparse_sgd_and_adagrad_match_the_dense_keras_optimizer_and_leave_unseen_rows_untouched(kind, reference, rows):
    sparse = _train(SparseEmbeddingOptimizer(kind, learning_rate=0.05), dense_gradients=False, rows=rows)
    dense = _train(reference(), dense_gradients=True, rows=rows)
    np.testing.assert_allclose(sparse, dense, rtol=1e-5, atol=1e-6)
    assert not np.allclose(sparse[:7], _initial()[:7])  # trained
    np.testing.assert_array_equal(sparse[7:ROWS], _initial()[7:])  # bit-identical
    if rows > ROWS:
        np.testing.assert_array_equal(sparse[ROWS:], dense[ROWS:])


def test_lazy_adam_matches_dense_adam_when_every_row_is_looked_up_and_leaves_unseen_rows_alone():
    every_row = [[r % ROWS for r in range(s, s + ROWS)] for s in range(3)]

    def train_all(optimizer, dense):
        rng = np.random.default_rng(1)
        table = keras.Variable(_initial(), name="table")
        optimizer.build([table])
        weights = tf.constant(rng.normal(size=(ROWS, DIM)).astype("float32"))
        for ids in every_row:
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(tf.gather(table.value, tf.constant(ids)) * weights - 0.5))
            (gradient,) = tape.gradient(loss, [table])
            optimizer.apply_gradients([(tf.convert_to_tensor(gradient) if dense else gradient, table)])
        return table.numpy()

    np.testing.assert_allclose(
        train_all(SparseEmbeddingOptimizer("lazy_adam", learning_rate=0.01), False),
        train_all(keras.optimizers.Adam(learning_rate=0.01), True),
        rtol=1e-5, atol=1e-6,
    )
    lazy = _train(SparseEmbeddingOptimizer("lazy_adam", learning_rate=0.01), dense_gradients=False)
    np.testing.assert_array_equal(lazy[7:], _initial()[7:])
    assert not np.allclose(lazy[:7], _initial()[:7])


def test_rowwise_adagrad_keeps_one_accumulator_per_row_and_follows_its_update_rule():
    optimizer = SparseEmbeddingOptimizer("rowwise_adagrad", learning_rate=0.1)
    trained = _train(optimizer, dense_gradients=False, batches=BATCHES[:1])
    (table,) = optimizer._trainable_variables
    (accumulator,) = optimizer.slot_variables(table)
    assert tuple(accumulator.shape) == (ROWS, 1)
    assert optimizer.slot_bytes(table) * DIM == ROWS * DIM * 4  # slot memory = 1/dim of the table

    # numpy reference for the one step: duplicate ids summed, a_i += mean(g_i²), E_i -= lr g_i / (√a_i + ε)
    rng = np.random.default_rng(0)
    initial = rng.normal(size=(ROWS, DIM)).astype("float32")
    weights = rng.normal(size=(4, DIM)).astype("float32")
    gradient = np.zeros((ROWS, DIM), "float32")
    for position, row in enumerate(BATCHES[0]):
        gradient[row] += 2 * (initial[row] * weights[position] - 0.5) * weights[position]
    touched = sorted(set(BATCHES[0]))
    expected = initial.copy()
    for row in touched:
        accumulated = 0.1 + np.mean(gradient[row] ** 2)
        expected[row] -= 0.1 * gradient[row] / (np.sqrt(accumulated) + 1e-7)
    np.testing.assert_allclose(trained, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(accumulator.numpy()[[7, 8, 9]], np.full((3, 1), 0.1, "float32"))


def test_gradient_norm_sums_duplicate_ids_like_the_dense_gradient():
    sparse = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0], [1.0, 0.0]]), tf.constant([2, 5, 2]), [8, 2])
    dense = tf.convert_to_tensor(sparse)
    assert float(gradient_norm([sparse, None, tf.ones([3])])) == pytest.approx(
        float(tf.linalg.global_norm([dense, tf.ones([3])]))
    )


def test_unknown_embedding_optimizer_is_a_clear_error():
    with pytest.raises(ValueError, match="training.embedding_optimizer 'ftrl' is not one of"):
        SparseEmbeddingOptimizer("ftrl")


@pytest.mark.parametrize(
    "kind, tpu_class",
    [
        ("sgd", tf.tpu.experimental.embedding.SGD),
        ("adagrad", tf.tpu.experimental.embedding.Adagrad),
        ("rowwise_adagrad", tf.tpu.experimental.embedding.Adagrad),
        ("lazy_adam", tf.tpu.experimental.embedding.Adam),
    ],
)
def test_the_setting_maps_to_the_tpu_embedding_api_optimizer(kind, tpu_class):
    tpu = to_tf_tpu_optimizer(table_config_optimizer(
        TrainingConfig(embedding_optimizer=kind, learning_rate=0.02, learning_rate_scaling="none")))
    assert isinstance(tpu, tpu_class)
    assert tpu.learning_rate == pytest.approx(0.02)
    if kind == "lazy_adam":
        assert tpu.lazy_adam


def test_summing_duplicates_by_hashing_and_by_a_scratch_table_agree():
    ids = tf.constant([7, 2, 7, 0, 2, 7], tf.int64)
    values = tf.reshape(tf.range(12, dtype=tf.float32), [6, 2])
    gradient = tf.IndexedSlices(values, ids, tf.constant([9, 2], tf.int64))
    hashed = sum_duplicate_rows(gradient)  # no row count: tf.unique
    scratch = sum_duplicate_rows(gradient, rows=9)  # 9 rows <= 4 x 6 ids: summed into a [9, 2] scratch tensor
    as_dict = lambda g: {int(i): v.tolist() for i, v in zip(g.indices.numpy(), g.values.numpy())}  # noqa: E731
    assert as_dict(hashed) == as_dict(scratch) == {7: [14.0, 17.0], 2: [10.0, 12.0], 0: [6.0, 7.0]}


@pytest.mark.parametrize("kind", ["rowwise_adagrad", "adagrad", "sgd", "lazy_adam"])
def test_the_dense_fused_update_of_a_busy_table_equals_the_scatter_update(kind):
    busy = _train(SparseEmbeddingOptimizer(kind, learning_rate=0.05), dense_gradients=False, rows=ROWS)
    scattered = _train(SparseEmbeddingOptimizer(kind, learning_rate=0.05), dense_gradients=False, rows=100)
    # lazy Adam's fused XLA loop rounds m / (√v + ε) slightly differently from the scatter path's kernels
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if kind == "lazy_adam" else {"rtol": 1e-6, "atol": 1e-7}
    np.testing.assert_allclose(busy, scattered[:ROWS], **tolerance)
    np.testing.assert_array_equal(busy[7:], _initial()[7:])  # in no batch: bit-identical


def test_lazy_adam_given_a_dense_summed_gradient_updates_only_rows_with_a_gradient():
    """The train step hands a busy table's gradient over pre-summed and dense; lazy Adam must not decay m and v
    (nor move the table) on the rows that gradient is 0 on, and must match the scatter update on the others."""
    ids = [0, 1, 1, 3, 2, 2]
    rng = np.random.default_rng(3)
    values = rng.normal(size=(len(ids), DIM)).astype("float32")
    slices = tf.IndexedSlices(tf.constant(values), tf.constant(ids, tf.int64), tf.constant([ROWS, DIM], tf.int64))
    results = {}
    for name, gradient, rows in [("dense", tf.convert_to_tensor(slices), ROWS), ("scatter", slices, 1000)]:
        initial = np.concatenate([_initial(), np.zeros((rows - ROWS, DIM), "float32")])
        table = keras.Variable(initial, name="table")
        optimizer = SparseEmbeddingOptimizer("lazy_adam", learning_rate=0.05)
        optimizer.build([table])
        for _ in range(3):
            optimizer.apply_gradients([(gradient, table)])
        momentum, velocity = optimizer.slot_variables(table)
        results[name] = [table.numpy()[:ROWS], momentum.numpy()[:ROWS], velocity.numpy()[:ROWS]]
    for dense, scattered in zip(results["dense"], results["scatter"]):
        np.testing.assert_allclose(dense, scattered, rtol=1e-5, atol=1e-6)
    table, momentum, velocity = results["dense"]
    np.testing.assert_array_equal(table[4:], _initial()[4:])  # no gradient: bit-identical
    assert not momentum[4:].any() and not velocity[4:].any()
    assert momentum[:4].all()
