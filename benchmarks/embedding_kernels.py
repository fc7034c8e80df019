"""Milliseconds per step of each embedding kernel at the 1,000-feature point of `benchmarks/embeddings.py`
(1,000 tables of 1,000 rows stacked into one [10^6, 8] table, batch 512: 512k ids a step), side by side.

Shows where adrank's embedding time goes and what each busy-table choice saves: XLA vs TF kernels for the
gradient sum, the fused masked lazy-Adam update vs gathering and scattering the unique rows, and the
memory-bound floor of an update that reads and writes table, m and v once.

    .venv/bin/python benchmarks/embedding_kernels.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FEATURES, BATCH, ROWS_PER_TABLE, DIM = 1000, 512, 1000, 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed calls per kernel (best of 3 rounds)")
    args = parser.parse_args()

    import numpy as np
    import tensorflow as tf

    from components.train.embedding_optimizers import _masked_lazy_adam, dense_row_sums, sum_duplicate_rows
    from components.train.table_kernels import xla_gather as _xla_gather

    rows = FEATURES * ROWS_PER_TABLE
    rng = np.random.default_rng(0)
    ids = tf.constant((rng.integers(0, ROWS_PER_TABLE, size=(BATCH, FEATURES)) + np.arange(FEATURES) * ROWS_PER_TABLE)
                      .reshape(-1))
    table = tf.Variable(tf.random.uniform([rows, DIM], -0.05, 0.05))
    momentum, velocity = tf.Variable(tf.zeros([rows, DIM])), tf.Variable(tf.zeros([rows, DIM]))
    upstream = tf.random.normal([BATCH, FEATURES * DIM])
    values = tf.random.normal([BATCH * FEATURES, DIM])
    summed = dense_row_sums(values, ids, rows, xla=True)
    present = tf.reduce_any(tf.not_equal(summed, 0.0), axis=1, keepdims=True)
    unique = sum_duplicate_rows(tf.IndexedSlices(values, ids, tf.constant([rows, DIM], tf.int64)), rows)
    constants = [tf.constant(c) for c in (1e-3, 0.9, 0.999, 1e-7)]

    def lookup(xla: bool):
        @tf.function
        def step():
            with tf.GradientTape() as tape:
                read = tf.convert_to_tensor(table)
                vectors = _xla_gather(read, ids) if xla else tf.gather(table, ids)
                loss = tf.reduce_sum(tf.reshape(vectors, [BATCH, -1]) * upstream)
            return tape.gradient(loss, table).values
        return step

    @tf.function
    def sum_tf():
        return dense_row_sums(values, ids, rows, xla=False)

    @tf.function
    def sum_xla():
        return dense_row_sums(values, ids, rows, xla=True)

    @tf.function
    def lazy_adam_masked():
        _masked_lazy_adam(table, momentum, velocity, summed, present, *constants)
        return table[0, 0]

    @tf.function
    def lazy_adam_scatter():  # the scatter path: gather m, v of the unique rows, scatter m, v and the step
        lr, beta_1, beta_2, epsilon = constants
        m = beta_1 * tf.gather(momentum, unique.indices) + (1 - beta_1) * unique.values
        v = beta_2 * tf.gather(velocity, unique.indices) + (1 - beta_2) * tf.square(unique.values)
        momentum.scatter_update(tf.IndexedSlices(m, unique.indices))
        velocity.scatter_update(tf.IndexedSlices(v, unique.indices))
        table.scatter_sub(tf.IndexedSlices(lr * m / (tf.sqrt(v) + epsilon), unique.indices))
        return table[0, 0]

    @tf.function
    def read_write_three():  # floor: table, m and v each read and written once, no arithmetic to speak of
        momentum.assign_add(summed)
        velocity.assign_add(summed)
        table.assign_sub(summed)
        return table[0, 0]

    kernels = [
        ("lookup fwd+bwd, TF gather", lookup(False)),
        ("lookup fwd+bwd, XLA gather (adrank)", lookup(True)),
        ("gradient sum, TF column segment sums", sum_tf),
        ("gradient sum, XLA scatter-add (adrank)", sum_xla),
        ("lazy Adam, scatter unique rows", lazy_adam_scatter),
        ("lazy Adam, fused masked XLA (adrank)", lazy_adam_masked),
        ("floor: read+write table, m, v once", read_write_three),
    ]
    best = {name: float("inf") for name, _ in kernels}
    for _ in range(3):  # interleaved rounds: noise from other load hits every kernel alike
        for name, kernel in kernels:
            kernel()  # trace and compile
            start = time.perf_counter()
            for _ in range(args.repeats):
                result = kernel()
            np.asarray(result)
            best[name] = min(best[name], (time.perf_counter() - start) / args.repeats * 1000)
    print(f"{FEATURES} features x {ROWS_PER_TABLE} rows, dim {DIM}, batch {BATCH} ({BATCH * FEATURES:,} ids, "
          f"{int(tf.size(unique.indices)):,} unique), CPU ({os.cpu_count()} cores), best of 3 x {args.repeats}")
    for name, _ in kernels:
        print(f"  {name:<42} {best[name]:7.2f} ms")
    print(f"  XLA vs TF gradient sum: {best['gradient sum, TF column segment sums'] / best['gradient sum, XLA scatter-add (adrank)']:.1f}x;"
          f" masked vs scatter lazy Adam: "
          f"{best['lazy Adam, scatter unique rows'] / best['lazy Adam, fused masked XLA (adrank)']:.1f}x")


if __name__ == "__main__":
    main()
