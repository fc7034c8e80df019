"""Which kernels read and update a stacked table: a table whose rows a step's ids cover ("busy") is read with an
XLA gather and updated densely, under every strategy but parameter servers (see `embedding_optimizers`)."""

from __future__ import annotations

import tensorflow as tf

DENSE_SUM_MAX_ROWS_PER_ID = 4


def busy_table(rows: int, ids: int | None) -> bool:
    """A step's ids (static count) cover the table: rows ≤ 4 × ids, e.g. thousands of features of small tables.
    Such a table is read with an XLA gather and updated densely (see `embedding_optimizers`)."""
    return ids is not None and rows <= DENSE_SUM_MAX_ROWS_PER_ID * ids


def xla_allowed(strategy: tf.distribute.Strategy | None = None) -> bool:
    """Busy tables use XLA-compiled kernels under every strategy but parameter servers (tables on remote ps)."""
    strategy = strategy or tf.distribute.get_strategy()
    return not isinstance(strategy, tf.distribute.experimental.ParameterServerStrategy)


@tf.function(jit_compile=True)
def xla_gather(table: tf.Tensor, ids: tf.Tensor) -> tf.Tensor:
    return tf.gather(table, ids)
