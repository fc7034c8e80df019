"""Sparse embedding optimizers: per step only the table rows looked up in the batch are read and written.

A lookup's gradient is `tf.IndexedSlices` (ids, row gradients); duplicate ids are summed first,
g_i = Σ_{j: id_j = i} ∂L/∂e_j, then for each unique id i only (lr = the scheduled rate, t = step + 1):

    sgd              E_i ← E_i − lr·g_i
    adagrad          A_i ← A_i + g_i²;                  E_i ← E_i − lr·g_i / (√A_i + ε)
    rowwise_adagrad  a_i ← a_i + mean_d(g_i²) (a scalar per row: slot memory = 1/dim of the table);
                     E_i ← E_i − lr·g_i / (√a_i + ε)
    lazy_adam        m_i ← β1·m_i + (1−β1)·g_i;  v_i ← β2·v_i + (1−β2)·g_i²;
                     E_i ← E_i − lr·√(1−β2^t)/(1−β1^t) · m_i / (√v_i + ε)   (rows not looked up keep m, v)

SGD and Adagrad use TF's fused `ResourceScatterSub` / `ResourceSparseApplyAdagradV2` kernels; the others
gather and scatter the touched slot rows.

Busy tables: when a step's ids cover the table (rows ≤ 4 × ids: thousands of features over small tables), the
row gradients are summed by id into a dense [rows, dim] gradient that is exactly 0 on rows not looked up, and
every optimizer applies it as one dense update over the table, which is far cheaper than hashing and scattering
hundreds of thousands of ids. The sum and the lazy-Adam / row-wise-Adagrad updates are XLA-compiled
(`tf.function(jit_compile=True)`: one fused loop; TF's own segment sums are ~7x slower here). Lazy Adam
masks that update to the rows present (the ids when the optimizer is given them, else the rows with a nonzero
summed gradient), so m, v and the table stay bit-identical on every other row. Under a parameter-server
strategy (tables on remote ps tasks) nothing is XLA-compiled: the sums use TF kernels and lazy Adam scatters.
"""

from __future__ import annotations

import contextlib
from typing import Any

import keras
import tensorflow as tf

from components.train.optimization import (
    EMBEDDING_OPTIMIZERS,
    LinearWarmup,
    embedding_learning_rate,
    make_optimizer,
    scaled_learning_rate,
)
from components.train.table_kernels import busy_table, xla_allowed
from components.train.table_placement import host_variables
from configs.training import TrainingConfig


@tf.function(jit_compile=True)
def _xla_row_sums(values: tf.Tensor, ids: tf.Tensor, rows: int) -> tf.Tensor:
    return tf.math.unsorted_segment_sum(values, ids, rows)


@tf.function(jit_compile=True)
def _xla_present_rows(ids: tf.Tensor, rows: int) -> tf.Tensor:
    return tf.math.unsorted_segment_max(tf.ones_like(ids, tf.int32), ids, rows)[:, None] > 0


def dense_row_sums(values: tf.Tensor, ids: tf.Tensor, rows: int, xla: bool = False) -> tf.Tensor:
    """Σ of `values` rows by id into a [rows, dim] tensor (0 on rows not looked up).

    `xla`: one XLA-compiled scatter-add (4 ms for 512k ids of dim 8 on a 2-core CPU vs 29 ms below;
    `benchmarks/embedding_kernels.py`).
    Otherwise one 1-D segment sum per column: TF's row-wise `UnsortedSegmentSum` pays ~100 ns per 8-float row
    on CPU, the 1-D kernel ~7 ns per element, so with small dims (≤ 32) the column loop is 2-3x faster."""
    if xla:
        return _xla_row_sums(values, tf.cast(ids, tf.int64), rows)
    dim = values.shape[-1]
    if dim is None or dim > 32:
        return tf.math.unsorted_segment_sum(values, ids, rows)
    columns = tf.unstack(tf.transpose(tf.reshape(values, [-1, dim])), num=dim, axis=0)
    return tf.stack([tf.math.unsorted_segment_sum(column, ids, rows) for column in columns], axis=1)


def sum_duplicate_rows(gradient, rows: int | None = None) -> tf.IndexedSlices:
    """(unique ids, summed row gradients); a dense gradient becomes every row's slice.

    With many ids per table row (thousands of features over small tables: rows ≤ 4 × ids, both static) the
    rows are summed by id into a [rows, dim] scratch tensor and the ids present read back, which costs O(ids)
    here and is much faster than hashing hundreds of thousands of ids; otherwise `tf.unique` hashes them."""
    if not isinstance(gradient, tf.IndexedSlices):
        gradient = tf.convert_to_tensor(gradient)
        return tf.IndexedSlices(gradient, tf.range(tf.shape(gradient, out_type=tf.int64)[0]), tf.shape(gradient))
    ids = tf.cast(gradient.indices, tf.int64)
    if rows is not None and busy_table(rows, ids.shape[0]):
        summed = dense_row_sums(gradient.values, ids, rows)
        present = tf.math.unsorted_segment_max(tf.ones_like(ids, tf.int32), ids, rows) > 0
        unique_ids = tf.where(present)[:, 0]
        return tf.IndexedSlices(tf.gather(summed, unique_ids), unique_ids, gradient.dense_shape)
    unique_ids, positions = tf.unique(ids)
    values = tf.math.unsorted_segment_sum(gradient.values, positions, tf.shape(unique_ids)[0])
    return tf.IndexedSlices(values, unique_ids, gradient.dense_shape)


def sum_table_gradients(gradients: list, tables: list, dense_when_busy: bool, xla: bool = False) -> list:
    """Each table's gradient with duplicate ids summed once; for a busy table (`busy_table`) and
    `dense_when_busy`, as a dense [rows, dim] tensor that is 0 on rows not looked up (`xla`: summed by
    `dense_row_sums`'s XLA kernel, on the table's device)."""
    summed = []
    for gradient, table in zip(gradients, tables):
        rows = int(table.shape[0])
        if isinstance(gradient, tf.IndexedSlices) and dense_when_busy and busy_table(rows, gradient.indices.shape[0]):
            with tf.device(_device_of(table) if xla else None):
                summed.append(dense_row_sums(gradient.values, gradient.indices, rows, xla=xla))
        elif gradient is None or not isinstance(gradient, tf.IndexedSlices):
            summed.append(gradient)
        else:
            summed.append(sum_duplicate_rows(gradient, rows))
    return summed


def gradient_norm(gradients: list, rows_summed: bool = False) -> tf.Tensor:
    """Global L2 norm of dense and sparse gradients, never densifying a table-sized gradient
    (`rows_summed`: the slices already hold one summed row per id)."""
    parts = []
    for gradient in gradients:
        if gradient is None:
            continue
        if isinstance(gradient, tf.IndexedSlices):
            gradient = gradient.values if rows_summed else sum_duplicate_rows(gradient).values
        parts.append(tf.cast(gradient, tf.float32))
    return tf.linalg.global_norm(parts)


@keras.saving.register_keras_serializable(package="adrank")
class SparseEmbeddingOptimizer(keras.optimizers.Optimizer):
    """One of `EMBEDDING_OPTIMIZERS`, updating only the rows in each batch (see the module docstring)."""

    def __init__(
        self,
        kind: str = "lazy_adam",
        learning_rate: Any = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        initial_accumulator_value: float = 0.1,
        name: str = "sparse_embedding_optimizer",
        **kwargs,
    ):
        if kind not in EMBEDDING_OPTIMIZERS:
            raise ValueError(f"training.embedding_optimizer '{kind}' is not one of {list(EMBEDDING_OPTIMIZERS)}")
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.kind = kind
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.initial_accumulator_value = initial_accumulator_value
        self._slots: list[list] = []
        self._rows_summed = False

    @contextlib.contextmanager
    def rows_summed(self):
        """Gradients applied inside already hold one summed row per id (`sum_table_gradients`): with a single
        replica they are used as they are; across replicas the all-reduce concatenates, so rows are summed again."""
        self._rows_summed = True
        try:
            yield
        finally:
            self._rows_summed = False

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        accumulator = keras.initializers.Constant(self.initial_accumulator_value)
        for variable in var_list:
            shape = tuple(variable.shape)
            if self.kind == "sgd":
                slots = []
            elif self.kind == "adagrad":
                slots = [self._slot(variable, "accumulator", shape, accumulator)]
            elif self.kind == "rowwise_adagrad":  # one accumulator per row
                slots = [self._slot(variable, "row_accumulator", (shape[0], 1), accumulator)]
            else:
                slots = [self._slot(variable, name, shape, keras.initializers.Zeros()) for name in ("momentum", "velocity")]
            self._slots.append(slots)

    def _slot(self, variable, name: str, shape: tuple, initializer):
        """A slot variable on the table's device (a host table's slots stay on the host, unreplicated)."""
        table = variable.value if isinstance(variable, keras.Variable) else variable
        path = getattr(variable, "path", None) or variable.name.split(":")[0]  # a table shard is a tf.Variable
        slot_name = f"{path.replace('/', '_')}_{name}"
        if self._outside_strategy(table):
            placement = host_variables(table.device)
        else:
            placement = self._distribution_strategy.extended.colocate_vars_with(table)
        with placement:
            return self.add_variable(shape, initializer=initializer, dtype=variable.dtype, name=slot_name)

    def _outside_strategy(self, table) -> bool:
        """A table kept out of a mirrored strategy's replication (`host_variables`): one copy on the host."""
        table = table.value if isinstance(table, keras.Variable) else table
        return isinstance(self._distribution_strategy, tf.distribute.MirroredStrategy) and not isinstance(
            table, tf.distribute.DistributedValues
        )

    def _distributed_tf_update_step(self, distribution, grads_and_vars, learning_rate):
        """Mirrored tables update each copy; a host table is updated once with the replica-summed gradient."""
        grads_and_vars = list(grads_and_vars)
        mirrored = [(g, v) for g, v in grads_and_vars if not self._outside_strategy(v)]
        if mirrored:
            super()._distributed_tf_update_step(distribution, mirrored, learning_rate)
        replica = tf.distribute.get_replica_context()
        for gradient, table in grads_and_vars:
            if not self._outside_strategy(table):
                continue
            gradient = _one_copy(distribution, gradient)
            rate = _one_copy(distribution, learning_rate)
            if replica is None or replica.num_replicas_in_sync == 1:
                self.update_step(gradient, table, rate)
            else:  # called in every replica (no merge call): the first one applies the summed gradient
                def apply(gradient=gradient, table=table, rate=rate):
                    self.update_step(gradient, table, rate)
                    return tf.constant(True)

                tf.cond(tf.equal(replica.replica_id_in_sync_group, 0), apply, lambda: tf.constant(False))

    @property
    def fused_dense_updates(self) -> bool:
        """Busy tables take the XLA-compiled dense path (every strategy but parameter servers, whose tables
        live on remote ps tasks)."""
        return xla_allowed(self._distribution_strategy)

    def dense_when_busy(self) -> bool:
        """Whether a busy table's gradient is handed over as a dense [rows, dim] sum (see the module docstring):
        always for SGD and the Adagrads; for lazy Adam only with `fused_dense_updates` (its masked update)."""
        return self.kind != "lazy_adam" or self.fused_dense_updates

    def slot_variables(self, variable) -> list:
        return self._slots[self._get_variable_index(variable)]

    def _clip_gradients(self, grads):
        """Clip by global norm using only the looked-up rows (Keras's clipping would densify the slices)."""
        if not self.global_clipnorm:
            return super()._clip_gradients(grads)
        norm = gradient_norm(grads)
        scale = tf.minimum(1.0, self.global_clipnorm / tf.maximum(norm, 1e-12))
        clipped = []
        for g in grads:
            if isinstance(g, tf.IndexedSlices):
                clipped.append(tf.IndexedSlices(g.values * tf.cast(scale, g.values.dtype), g.indices, g.dense_shape))
            else:
                clipped.append(None if g is None else g * tf.cast(scale, g.dtype))
        return clipped

    def update_step(self, gradient, variable, learning_rate):
        table = variable.value if isinstance(variable, keras.Variable) else variable
        lr = tf.cast(learning_rate, table.dtype)
        slots = [s.value if isinstance(s, keras.Variable) else s for s in self.slot_variables(variable)]
        if self.dense_when_busy():
            fused = self.fused_dense_updates
            table_rows = int(table.shape[0])
            if not isinstance(gradient, tf.IndexedSlices):
                return self._apply_dense(tf.cast(gradient, table.dtype), table, slots, lr)
            if busy_table(table_rows, gradient.indices.shape[0]):
                with tf.device(_device_of(table) if fused else None):
                    summed = dense_row_sums(gradient.values, gradient.indices, table_rows, xla=fused)
                    present = None  # only lazy Adam masks its update; it takes this path only when fused
                    if self.kind == "lazy_adam":
                        present = _xla_present_rows(tf.cast(gradient.indices, tf.int64), table_rows)
                return self._apply_dense(tf.cast(summed, table.dtype), table, slots, lr, present)
        if self._rows_summed and self._distribution_strategy.num_replicas_in_sync == 1:
            rows = gradient if isinstance(gradient, tf.IndexedSlices) else sum_duplicate_rows(gradient)
        else:
            rows = sum_duplicate_rows(gradient, int(table.shape[0]))
        ids, values = rows.indices, tf.cast(rows.values, table.dtype)
        if self.kind == "sgd":
            table.scatter_sub(tf.IndexedSlices(lr * values, ids))
        elif self.kind == "adagrad":
            tf.raw_ops.ResourceSparseApplyAdagradV2(
                var=table.handle, accum=slots[0].handle, lr=lr, epsilon=tf.cast(self.epsilon, table.dtype),
                grad=values, indices=ids, update_slots=True,
            )
        elif self.kind == "rowwise_adagrad":
            accumulator = slots[0]
            accumulator.scatter_add(tf.IndexedSlices(tf.reduce_mean(tf.square(values), axis=1, keepdims=True), ids))
            scale = tf.sqrt(tf.gather(accumulator, ids)) + self.epsilon
            table.scatter_sub(tf.IndexedSlices(lr * values / scale, ids))
        else:
            momentum, velocity = slots
            alpha = self._adam_step_size(lr, table.dtype)
            m = self.beta_1 * tf.gather(momentum, ids) + (1.0 - self.beta_1) * values
            v = self.beta_2 * tf.gather(velocity, ids) + (1.0 - self.beta_2) * tf.square(values)
            momentum.scatter_update(tf.IndexedSlices(m, ids))
            velocity.scatter_update(tf.IndexedSlices(v, ids))
            table.scatter_sub(tf.IndexedSlices(alpha * m / (tf.sqrt(v) + self.epsilon), ids))

    def _adam_step_size(self, lr, dtype):
        """lr·√(1−β2^t)/(1−β1^t), t = step + 1: lazy Adam's bias-corrected step size."""
        step = tf.cast(self.iterations + 1, dtype)
        return lr * tf.sqrt(1.0 - tf.pow(tf.cast(self.beta_2, dtype), step)) / (
            1.0 - tf.pow(tf.cast(self.beta_1, dtype), step)
        )

    def _apply_dense(self, gradient, table, slots, lr, present=None):
        """One fused update over the whole table with a gradient that is exactly 0 on rows not looked up,
        which leaves those rows (and their accumulators) bit-identical: x + 0 = x, x − lr·0/(…) = x. Lazy Adam
        (whose m and v would decay) updates only the `present` rows ([rows, 1] bool; default: the rows with a
        nonzero gradient)."""
        fused = self.fused_dense_updates
        if self.kind == "lazy_adam":
            momentum, velocity = slots
            if present is None:
                present = tf.reduce_any(tf.not_equal(gradient, 0.0), axis=1, keepdims=True)
            alpha = self._adam_step_size(lr, table.dtype)
            constants = [tf.cast(c, table.dtype) for c in (self.beta_1, self.beta_2, self.epsilon)]
            with tf.device(_device_of(table)):
                _masked_lazy_adam(table, momentum, velocity, gradient, present, alpha, *constants)
            return
        if self.kind == "rowwise_adagrad" and fused:
            with tf.device(_device_of(table)):
                _rowwise_adagrad(table, slots[0], gradient, lr, tf.cast(self.epsilon, table.dtype))
            return
        if self.kind == "sgd":
            table.assign_sub(lr * gradient)
        elif self.kind == "adagrad":
            tf.raw_ops.ResourceApplyAdagradV2(
                var=table.handle, accum=slots[0].handle, lr=lr, epsilon=tf.cast(self.epsilon, table.dtype),
                grad=gradient, update_slots=True,
            )
        else:
            accumulator = slots[0]
            accumulator.assign_add(tf.reduce_mean(tf.square(gradient), axis=1, keepdims=True))
            table.assign_sub(lr * gradient / (tf.sqrt(accumulator.read_value()) + self.epsilon))

    def slot_bytes(self, variable) -> int:
        """Bytes of this table's optimizer slots."""
        return sum(_elements(s.shape) * tf.as_dtype(s.dtype).size for s in self.slot_variables(variable))

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            kind=self.kind, beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon,
            initial_accumulator_value=self.initial_accumulator_value,
        )
        return config


@tf.function(jit_compile=True)
def _masked_lazy_adam(table, momentum, velocity, gradient, present, alpha, beta_1, beta_2, epsilon):
    """Lazy Adam as one fused XLA loop over the table: rows outside `present` keep table, m and v bit-identical."""
    m = tf.where(present, beta_1 * momentum + (1.0 - beta_1) * gradient, momentum)
    v = tf.where(present, beta_2 * velocity + (1.0 - beta_2) * tf.square(gradient), velocity)
    momentum.assign(m)
    velocity.assign(v)
    table.assign_sub(tf.where(present, alpha * m / (tf.sqrt(v) + epsilon), tf.zeros_like(m)))


@tf.function(jit_compile=True)
def _rowwise_adagrad(table, accumulator, gradient, lr, epsilon):
    accumulator.assign_add(tf.reduce_mean(tf.square(gradient), axis=1, keepdims=True))
    table.assign_sub(lr * gradient / (tf.sqrt(accumulator) + epsilon))


def _device_of(variable) -> str | None:
    """The device string a variable lives on (None when it has none yet, e.g. while tracing a replica)."""
    variable = variable.value if isinstance(variable, keras.Variable) else variable
    return getattr(variable, "device", None) or None


def _one_copy(distribution, value):
    if isinstance(value, tf.distribute.DistributedValues):
        return distribution.experimental_local_results(value)[0]
    return value


def _elements(shape) -> int:
    count = 1
    for dim in shape:
        count *= int(dim)
    return count


def make_embedding_optimizer(training: TrainingConfig) -> SparseEmbeddingOptimizer:
    """`training.embedding_optimizer` at the tables' warmed-up rate (`optimization.embedding_learning_rate`)."""
    kwargs: dict[str, Any] = {"learning_rate": LinearWarmup(embedding_learning_rate(training), training.warmup_steps)}
    if training.gradient_clip_norm is not None:
        kwargs["global_clipnorm"] = training.gradient_clip_norm
    return SparseEmbeddingOptimizer(training.embedding_optimizer, **kwargs)


def make_optimizers(training: TrainingConfig) -> tuple[keras.optimizers.Optimizer, SparseEmbeddingOptimizer]:
    """(dense optimizer, sparse embedding-table optimizer `training.embedding_optimizer`)."""
    return make_optimizer(training, scaled_learning_rate(training)), make_embedding_optimizer(training)
