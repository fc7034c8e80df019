"""Sparse table updates against a dense numpy reference: only looked-up rows change, exactly as the rule says."""

import jax.numpy as jnp
import numpy as np
import pytest

from components.train.jax_lane import sparse_updates

ROWS, DIM = 10, 4
# rows 7, 8, 9 are in no batch; ids repeat inside a batch
BATCHES = [[0, 1, 1, 3], [2, 2, 2, 0], [4, 5, 6, 1], [3, 0, 6, 6], [5, 5, 4, 2]]
LR = 0.05


def reference(kind: str, table: np.ndarray, batches, gradients) -> np.ndarray:
    """The module docstring's rules, row by row in numpy."""
    table = table.copy()
    acc = np.full_like(table, sparse_updates.INITIAL_ACCUMULATOR)
    row_acc = np.full((ROWS, 1), sparse_updates.INITIAL_ACCUMULATOR, np.float32)
    m, v = np.zeros_like(table), np.zeros_like(table)
    eps, b1, b2 = sparse_updates.EPSILON, sparse_updates.BETA_1, sparse_updates.BETA_2
    for step, (ids, grad) in enumerate(zip(batches, gradients)):
        summed = {}
        for i, g in zip(ids, grad):
            summed[i] = summed.get(i, 0) + g
        for i, g in summed.items():
            if kind == "sgd":
                table[i] -= LR * g
            elif kind == "adagrad":
                acc[i] += g * g
                table[i] -= LR * g / (np.sqrt(acc[i]) + eps)
            elif kind == "rowwise_adagrad":
                row_acc[i] += np.mean(g * g)
                table[i] -= LR * g / (np.sqrt(row_acc[i]) + eps)
            else:
                t = step + 1
                m[i] = b1 * m[i] + (1 - b1) * g
                v[i] = b2 * v[i] + (1 - b2) * g * g
                table[i] -= LR * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m[i] / (np.sqrt(v[i]) + eps)
    return table


@pytest.mark.parametrize("kind", ["sgd", "adagrad", "rowwise_adagrad", "lazy_adam"])
@pytest.mark.parametrize("busy", [False, True])
def test_each_rule_updates_the_looked_up_rows_as_the_reference_and_no_other(kind, busy):
    rng = np.random.default_rng(0)
    initial = rng.normal(size=(ROWS, DIM)).astype(np.float32)
    gradients = [rng.normal(size=(len(ids), DIM)).astype(np.float32) for ids in BATCHES]
    rows = ROWS if busy else 1000  # busy: rows ≤ 4 × ids, summed and applied densely
    table = jnp.asarray(np.concatenate([initial, np.ones((rows - ROWS, DIM), np.float32)]))
    slots = [jnp.asarray(s) for s in sparse_updates.init_slots(kind, (rows, DIM))]
    assert sparse_updates.busy_table(rows, 4) is busy
    for step, (ids, grad) in enumerate(zip(BATCHES, gradients)):
        summed = sparse_updates.sum_rows(jnp.asarray(ids, jnp.int32), jnp.asarray(grad), rows)
        assert summed.dense is busy
        table, slots = sparse_updates.apply(kind, table, slots, summed, LR, step)
    result = np.asarray(table)
    np.testing.assert_allclose(result[:ROWS], reference(kind, initial, BATCHES, gradients), rtol=2e-5, atol=2e-6)
    assert np.array_equal(result[7:ROWS], initial[7:])  # never looked up: bit-identical
    assert np.array_equal(result[ROWS:], np.ones((rows - ROWS, DIM), np.float32))


def test_clipping_scales_the_tables_by_their_own_global_norm():
    summed = [sparse_updates.sum_rows(jnp.asarray([0, 0, 1], jnp.int32), jnp.ones((3, 2)), 100)]
    norm = float(np.sqrt(4 + 4 + 1 + 1))  # row 0 sums to (2, 2), row 1 is (1, 1)
    assert float(sparse_updates.clip_scale(summed, 1.0)) == pytest.approx(1.0 / norm)
    assert float(sparse_updates.clip_scale(summed, None)) == 1.0
    assert sparse_updates.slot_bytes("lazy_adam", (10, 8)) == 2 * 10 * 8 * 4
    assert sparse_updates.slot_bytes("rowwise_adagrad", (10, 8)) == 10 * 4
    with pytest.raises(ValueError, match="ftrl"):
        sparse_updates.init_slots("ftrl", (2, 2))
