"""Sparse table updates for the JAX lane: per step only the rows a batch looked up are read and written, so a step
costs the same whatever the table's size (the TensorFlow lane's `embedding_optimizers`, in jnp, inside the jitted step).

The step hands over, per stacked table, the ids it gathered (`ids`, with duplicates) and the gradient with respect to
each gathered row (`row_gradients`). Duplicate ids are summed first, g_i = Σ_{j: id_j = i} ∂L/∂e_j, then for each
unique id i only (lr = the scheduled rate, t = step + 1):

    sgd              E_i ← E_i − lr·g_i
    adagrad          A_i ← A_i + g_i²;                  E_i ← E_i − lr·g_i / (√A_i + ε)
    rowwise_adagrad  a_i ← a_i + mean_d(g_i²);          E_i ← E_i − lr·g_i / (√a_i + ε)
    lazy_adam        m_i ← β1·m_i + (1−β1)·g_i;  v_i ← β2·v_i + (1−β2)·g_i²;
                     E_i ← E_i − lr·√(1−β2^t)/(1−β1^t) · m_i / (√v_i + ε)   (rows not looked up keep m, v)

with the TensorFlow lane's constants (ε 1e-7, β 0.9 / 0.999, accumulators starting at 0.1) and its clipping: the
tables' gradients clipped by their own global norm, over the summed rows.

Unique ids come from one sort of the batch's ids (a static size: the unused slots point past the table, where reads
fill 0 and writes are dropped). Lazy Adam keeps m and v side by side in one [rows, 2 × dim] slot, so a step reads and
writes each touched row's moments with one gather and one scatter (on a CPU each indexed op costs tens of µs whatever
its size). A busy table (rows ≤ 4 × ids: thousands of features over small
tables) is summed into a dense [rows, dim] gradient that is exactly 0 on rows not looked up and updated in one pass
over the table (lazy Adam masked to the rows present), which is cheaper than sorting that many ids. Under `jax.jit`
with the state donated, XLA writes the scattered rows in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from components.train.optimization import EMBEDDING_OPTIMIZERS

EPSILON = 1e-7
BETA_1, BETA_2 = 0.9, 0.999
INITIAL_ACCUMULATOR = 0.1
BUSY_ROWS_PER_ID = 4  # the TensorFlow lane's `table_kernels.DENSE_SUM_MAX_ROWS_PER_ID`


def busy_table(rows: int, ids: int) -> bool:
    """A step's ids cover the table (rows ≤ 4 × ids): summed and updated densely (see the module docstring)."""
    return rows <= BUSY_ROWS_PER_ID * ids


def init_slots(kind: str, table_shape: tuple[int, int]) -> list[np.ndarray]:
    """The optimizer's slots of one stacked table, as float32 arrays."""
    if kind not in EMBEDDING_OPTIMIZERS:
        raise ValueError(f"training.embedding_optimizer '{kind}' is not one of {list(EMBEDDING_OPTIMIZERS)}")
    rows, dim = table_shape
    if kind == "sgd":
        return []
    if kind == "adagrad":
        return [np.full((rows, dim), INITIAL_ACCUMULATOR, np.float32)]
    if kind == "rowwise_adagrad":
        return [np.full((rows, 1), INITIAL_ACCUMULATOR, np.float32)]
    return [np.zeros((rows, 2 * dim), np.float32)]  # lazy Adam: [m ‖ v] per row


def slot_bytes(kind: str, table_shape: tuple[int, int]) -> int:
    """Bytes of one table's slots (lazy Adam 2x the table, row-wise Adagrad 1/dim of it)."""
    rows, dim = table_shape
    return 4 * rows * {"sgd": 0, "adagrad": dim, "rowwise_adagrad": 1, "lazy_adam": 2 * dim}[kind]


@dataclass(frozen=True)
class SummedRows:
    """One table's row gradients with duplicates summed: either `ids` (unique, padded past the table) with `values`
    [len(ids), dim], or (busy table) a dense `values` [rows, dim] with `present` [rows, 1] marking the rows looked up."""

    values: Any
    ids: Any = None
    present: Any = None

    @property
    def dense(self) -> bool:
        return self.ids is None


def sum_rows(ids: Any, row_gradients: Any, rows: int) -> SummedRows:
    """`row_gradients` [n, dim] of the gathered `ids` [n], summed by id (see the module docstring)."""
    count = ids.shape[0]
    if busy_table(rows, count):
        summed = jnp.zeros((rows, row_gradients.shape[1]), row_gradients.dtype).at[ids].add(row_gradients)
        present = jnp.zeros((rows, 1), bool).at[ids].set(True)
        return SummedRows(summed, present=present)
    sorted_ids, order = jax.lax.sort((ids, jax.lax.iota(ids.dtype, count)), num_keys=1, is_stable=False)
    starts = jnp.concatenate([jnp.ones((1,), bool), sorted_ids[1:] != sorted_ids[:-1]])
    segment = jnp.cumsum(starts) - 1  # each sorted position's unique id, in order
    summed = jax.ops.segment_sum(row_gradients[order], segment, num_segments=count, indices_are_sorted=True)
    unique = jnp.full((count,), rows, ids.dtype).at[segment].set(sorted_ids, mode="drop")
    return SummedRows(summed, ids=unique)


def squared_norm(summed: SummedRows) -> Any:
    """Σ g_i² over the summed rows (padding slots and rows not looked up hold 0)."""
    return jnp.sum(jnp.square(summed.values.astype(jnp.float32)))


def clip_scale(summed: list[SummedRows], clip_norm: float | None) -> Any:
    """The factor the tables' gradients are scaled by: min(1, clip / global norm), or 1 without clipping."""
    if clip_norm is None or not summed:
        return jnp.float32(1.0)
    norm = jnp.sqrt(sum(squared_norm(s) for s in summed))
    return jnp.minimum(1.0, clip_norm / jnp.maximum(norm, 1e-12))


def adam_step_size(learning_rate: Any, step: Any) -> Any:
    """lr·√(1−β2^t)/(1−β1^t), t = step + 1: lazy Adam's bias-corrected step size."""
    t = jnp.asarray(step, jnp.float32) + 1.0
    return learning_rate * jnp.sqrt(1.0 - BETA_2 ** t) / (1.0 - BETA_1 ** t)


def apply(kind: str, table: Any, slots: list[Any], summed: SummedRows, learning_rate: Any, step: Any,
          scale: Any = 1.0) -> tuple[Any, list[Any]]:
    """(table, slots) after one `kind` update with `summed` (scaled by `scale`, the clipping factor)."""
    g = summed.values * scale
    if summed.dense:
        return _apply_dense(kind, table, slots, g, summed.present, learning_rate, step)
    ids = summed.ids

    def rows_of(array):
        return array.at[ids].get(mode="fill", fill_value=0)

    if kind == "sgd":
        return table.at[ids].add(-learning_rate * g, mode="drop"), []
    if kind == "adagrad":
        accumulator = rows_of(slots[0]) + jnp.square(g)
        update = learning_rate * g / (jnp.sqrt(accumulator) + EPSILON)
        return table.at[ids].add(-update, mode="drop"), [slots[0].at[ids].set(accumulator, mode="drop")]
    if kind == "rowwise_adagrad":
        accumulator = rows_of(slots[0]) + jnp.mean(jnp.square(g), axis=1, keepdims=True)
        update = learning_rate * g / (jnp.sqrt(accumulator) + EPSILON)
        return table.at[ids].add(-update, mode="drop"), [slots[0].at[ids].set(accumulator, mode="drop")]
    moments = rows_of(slots[0])
    dim = g.shape[1]
    m = BETA_1 * moments[:, :dim] + (1.0 - BETA_1) * g
    v = BETA_2 * moments[:, dim:] + (1.0 - BETA_2) * jnp.square(g)
    update = adam_step_size(learning_rate, step) * m / (jnp.sqrt(v) + EPSILON)
    return table.at[ids].add(-update, mode="drop"), [slots[0].at[ids].set(jnp.concatenate([m, v], axis=1),
                                                                           mode="drop")]


def _apply_dense(kind: str, table: Any, slots: list[Any], g: Any, present: Any, learning_rate: Any,
                 step: Any) -> tuple[Any, list[Any]]:
    """One pass over a busy table with a gradient that is exactly 0 on rows not looked up, which leaves those rows
    (and their accumulators) bit-identical; lazy Adam, whose moments would decay, updates only the `present` rows."""
    if kind == "sgd":
        return table - learning_rate * g, []
    if kind == "adagrad":
        accumulator = slots[0] + jnp.square(g)
        return table - learning_rate * g / (jnp.sqrt(accumulator) + EPSILON), [accumulator]
    if kind == "rowwise_adagrad":
        accumulator = slots[0] + jnp.mean(jnp.square(g), axis=1, keepdims=True)
        return table - learning_rate * g / (jnp.sqrt(accumulator) + EPSILON), [accumulator]
    dim = g.shape[1]
    momentum, velocity = slots[0][:, :dim], slots[0][:, dim:]
    m = jnp.where(present, BETA_1 * momentum + (1.0 - BETA_1) * g, momentum)
    v = jnp.where(present, BETA_2 * velocity + (1.0 - BETA_2) * jnp.square(g), velocity)
    update = jnp.where(present, adam_step_size(learning_rate, step) * m / (jnp.sqrt(v) + EPSILON), 0.0)
    return table - update, [jnp.concatenate([m, v], axis=1)]
