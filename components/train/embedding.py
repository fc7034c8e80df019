"""The TensorFlow lane's embedding tables (the interface and the table descriptions: `components.train.embedding_tables`):
- on CPU/GPU/parameter servers, `FeatureEmbedding`: tables of one dim stacked into one variable (one gather
  and one sparse optimizer update per group, however many features), sparse updates only;
- on TPU, `TPUFeatureEmbedding`: `keras_rs.layers.DistributedEmbedding` (the TPU embedding API, tables sharded
  across cores, updated with the TableConfig optimizer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import keras_rs
import numpy as np
import tensorflow as tf

from components.train.embedding_optimizers import sum_table_gradients
from components.train.embedding_tables import EmbeddingTables, TableGroup, check_static_shapes, table_groups
from components.train.table_kernels import busy_table, xla_allowed, xla_gather
from components.train.table_placement import TablePlacement, host_variables, partitioned_table, table_shards


class FeatureEmbedding(EmbeddingTables):
    """Looks up every categorical feature in its table group's stacked variable (for CPU, GPU and parameter servers).

    Reads are sparse (`ResourceGather`), so gradients are `tf.IndexedSlices` of the looked-up rows only, and
    the model's sparse embedding optimizer updates only those rows.
    """

    kind = "stacked"
    sparse_optimizer_updates = True
    warm_startable = True

    def __init__(
        self,
        feature_configs: dict[str, keras_rs.layers.FeatureConfig | dict],
        placement: TablePlacement | dict | None = None,
        **kwargs,
    ):
        kwargs.setdefault("autocast", False)  # a mixed policy must not cast whole tables each step
        super().__init__(feature_configs, **kwargs)
        feature_configs = self.feature_configs
        self.placement = placement if isinstance(placement, TablePlacement) else TablePlacement(**(placement or {}))
        self.groups = table_groups(feature_configs)
        self.group_features = [
            [n for n, c in feature_configs.items() if c.table.name in {t.name for t in group.tables}]
            for group in self.groups
        ]
        self.group_tables: list[keras.Variable] = []
        for group in self.groups:
            initializer = keras.initializers.get(group.tables[0].initializer)
            # on parameter servers, a table over `placement.shard_bytes` becomes TensorFlow's row-range shards
            with host_variables(self.placement.device_for(group.parameter_bytes)), \
                    partitioned_table(self.placement, group.parameter_bytes):
                self.group_tables.append(
                    self.add_weight(shape=(group.rows, group.embedding_dim), initializer=initializer, name=group.name)
                )
        self.built = True  # every table exists now; `concatenated` is called without going through __call__

    def build(self, input_shape=None):
        self.built = True

    def _lookup(self, group_index: int, ids: tf.Tensor) -> tf.Tensor:
        table = self.group_tables[group_index]
        group = self.groups[group_index]
        with tf.device(self.placement.device_for(group.parameter_bytes)):
            if len(table_shards(table)) > 1:  # row ranges on several ps: TensorFlow routes each id to its shard
                return tf.nn.embedding_lookup(table.value, ids)
            if busy_table(group.rows, ids.shape[0]) and xla_allowed():
                # ~20% faster than TF's kernel for 512k ids; read as a tensor first so the tape (and a
                # mirrored strategy's replica) sees an ordinary variable read: the gradient is the same slices
                return xla_gather(tf.convert_to_tensor(table.value), ids)
            return tf.gather(table.value, ids)

    def _group_lookup(self, group_index: int, inputs: dict[str, tf.Tensor]) -> tuple[list[str], tf.Tensor, dict]:
        """(scalar features, their vectors [batch, features × dim], {list feature: [batch, dim]}) of one group:
        the scalar ids are stacked into one [batch, features] tensor and shifted by each table's offset, so the
        whole group is one gather whatever the number of features."""
        group = self.groups[group_index]
        names = self.group_features[group_index]
        scalars = [n for n in names if len(self.feature_configs[n].input_shape) != 2]
        lists = [n for n in names if len(self.feature_configs[n].input_shape) == 2]
        flat_ids, sizes = [], []
        if scalars:
            # batch-major [batch, features]: the gathered rows are already the [batch, features × dim] block
            # (no transpose forward or backward); busy tables sum their gradient with one XLA scatter-add,
            # which costs the same in either order
            offsets = tf.constant([group.offset_of(self.feature_configs[n].table.name) for n in scalars], tf.int64)
            stacked = tf.stack([tf.reshape(tf.cast(inputs[n], tf.int64), [-1]) for n in scalars], 1)
            flat_ids.append(tf.reshape(stacked + offsets, [-1]))
        for name in lists:
            flat_ids.append(tf.reshape(tf.cast(inputs[name], tf.int64), [-1])
                            + group.offset_of(self.feature_configs[name].table.name))
        if len(flat_ids) > 1:
            sizes = [tf.size(ids) for ids in flat_ids]
            vectors = tf.split(self._lookup(group_index, tf.concat(flat_ids, 0)), tf.stack(sizes), num=len(flat_ids))
        else:
            vectors = [self._lookup(group_index, flat_ids[0])]
        scalar_block = None
        if scalars:
            scalar_block = tf.reshape(vectors.pop(0), [-1, len(scalars) * group.embedding_dim])
        combined = {name: self._combine(name, inputs[name], piece) for name, piece in zip(lists, vectors)}
        return scalars, scalar_block, combined

    def concatenated(self, inputs: dict[str, tf.Tensor]) -> tf.Tensor:
        """Every feature's vector side by side, [batch, Σ dims]: per group its scalar features, then its lists."""
        parts = []
        for group_index in range(len(self.groups)):
            scalars, block, combined = self._group_lookup(group_index, inputs)
            if scalars:
                parts.append(block)
            parts.extend(combined.values())
        return tf.concat(parts, axis=-1) if len(parts) > 1 else parts[0]

    def call(self, inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        outputs: dict[str, tf.Tensor] = {}
        for group_index, group in enumerate(self.groups):
            scalars, block, combined = self._group_lookup(group_index, inputs)
            if scalars:
                per_feature = tf.unstack(tf.reshape(block, [-1, len(scalars), group.embedding_dim]), axis=1)
                outputs.update(zip(scalars, per_feature))
            outputs.update(combined)
        return {name: outputs[name] for name in self.feature_configs}

    def _combine(self, name: str, ids: tf.Tensor, vectors: tf.Tensor) -> tf.Tensor:
        config = self.feature_configs[name]
        dim = config.table.embedding_dim
        if len(config.input_shape) != 2:
            return tf.reshape(vectors, [-1, dim])
        # a padded list: combine over non-padding ids
        vectors = tf.reshape(vectors, [-1, ids.shape[1] if ids.shape[1] is not None else tf.shape(ids)[1], dim])
        mask = tf.expand_dims(tf.cast(tf.not_equal(ids, 0), vectors.dtype), -1)
        combined = tf.reduce_sum(vectors * mask, axis=1)
        if config.table.combiner == "mean":
            combined = combined / tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)
        return combined

    def table_variables(self) -> list[tuple[TableGroup, list]]:
        """(group, the variables holding its stacked table: the table, or its row-range shards)."""
        return [(group, table_shards(table)) for group, table in zip(self.groups, self.group_tables)]

    def summed_table_gradients(self, gradients: list, tables: list,
                               embedding_optimizer: keras.optimizers.Optimizer | None) -> list:
        """Each table's duplicate ids summed once (for the gradient norm and the sparse optimizer alike); a busy
        table's as a dense sum when the optimizer takes it so (`embedding_optimizers`)."""
        dense_when_busy = embedding_optimizer is not None and embedding_optimizer.dense_when_busy()
        xla = embedding_optimizer is not None and embedding_optimizer.fused_dense_updates
        return sum_table_gradients(list(gradients), tables, dense_when_busy, xla)

    def table_memory(self, embedding_optimizer: keras.optimizers.Optimizer | None,
                     dense_optimizer: keras.optimizers.Optimizer | None) -> list[dict[str, Any]]:
        """Per stacked table: rows, dim, parameter bytes and its optimizer's slot bytes, and where it lives."""
        result = []
        for group, parts in self.table_variables():
            slots = 0
            for part in parts:
                if embedding_optimizer is not None and hasattr(embedding_optimizer, "slot_bytes"):
                    slots += embedding_optimizer.slot_bytes(part)
                elif dense_optimizer is not None and dense_optimizer.built:  # Keras Adam: m and v, dense
                    slots += 2 * group.parameter_bytes // len(parts)
            result.append(
                {
                    "name": group.name,
                    "tables": [t.name for t in group.tables],
                    "rows": group.rows,
                    "embedding_dim": group.embedding_dim,
                    "parameter_bytes": group.parameter_bytes,
                    "optimizer_slot_bytes": slots,
                    "shards": len(parts),
                    "devices": sorted({str(p.value.device if isinstance(p, keras.Variable) else p.device)
                                       for p in parts}),
                }
            )
        return result

    def table_values(self) -> dict[str, np.ndarray]:
        values = {}
        for group, parts in self.table_variables():
            stacked = np.concatenate([part.numpy() for part in parts], axis=0)
            for table, offset in zip(group.tables, group.offsets):
                values[table.name] = stacked[offset:offset + table.vocabulary_size]
        return values

    def assign_tables(self, values: dict[str, np.ndarray]) -> None:
        for group, parts in self.table_variables():
            if not any(table.name in values for table in group.tables):
                continue
            stacked = np.concatenate([part.numpy() for part in parts], axis=0)
            for table, offset in zip(group.tables, group.offsets):
                if table.name in values:
                    stacked[offset:offset + table.vocabulary_size] = values[table.name]
            start = 0
            for part in parts:
                rows = int(part.shape[0])
                part.assign(stacked[start:start + rows])
                start += rows

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "placement": self.placement.get_config()}


class TPUFeatureEmbedding(EmbeddingTables):
    """The same tables through `keras_rs.layers.DistributedEmbedding` (TPU embedding API).

    Padded lists become sparse ids (padding dropped) so the table combiner sees only real ids. Outside a TPU
    strategy (a serving copy, tests on CPU) keras-rs keeps each table as an ordinary variable.
    """

    kind = "tpu"

    def __init__(self, feature_configs: dict[str, keras_rs.layers.FeatureConfig | dict], **kwargs):
        super().__init__(feature_configs, **kwargs)
        check_static_shapes(self.feature_configs)
        # A plain dict: keras-rs matches the inputs' structure against its configs' node type, and a Keras
        # layer's attribute (the model's `feature_configs`) is a TrackedDict, which a dict of inputs never matches.
        self.distributed = keras_rs.layers.DistributedEmbedding(dict(self.feature_configs))

    def call(self, inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        ids = {}
        for name, config in self.feature_configs.items():
            values = inputs[name]
            if len(config.input_shape) == 2:
                values = tf.sparse.from_dense(values)  # zeros (padding) are not stored
            ids[name] = values
        return self.distributed(ids)

    def concatenated(self, inputs: dict[str, tf.Tensor]) -> tf.Tensor:
        """The features' vectors in `feature_configs` order."""
        embedded = self(inputs)
        return keras.ops.concatenate([embedded[name] for name in self.feature_configs], axis=-1)

    def table_values(self) -> dict[str, np.ndarray]:
        """Call under the training strategy's scope: on a TPU this gathers every SparseCore shard."""
        return {name: np.asarray(table) for name, table in self.distributed.get_embedding_tables().items()}

    def assign_tables(self, values: dict[str, np.ndarray]) -> None:
        """Only where the tables are ordinary variables (outside a TPU strategy)."""
        for variable in self.weights:
            table_name = variable.path.split("/")[-2]  # .../<table name>/embeddings
            if table_name in values:
                variable.assign(np.asarray(values[table_name], dtype=np.float32))


def table_factory(tpu_embedding: bool = False, placement: TablePlacement | None = None,
                  ) -> Callable[[dict[str, keras_rs.layers.FeatureConfig]], EmbeddingTables]:
    """How the TensorFlow lane makes a model's tables (`components.train.models.build_model`): the TPU embedding API
    (`tpu_embedding`), or stacked variables updated by the model's sparse embedding optimizer, which `placement`
    puts on the host or splits over parameter servers."""

    def make(configs: dict[str, keras_rs.layers.FeatureConfig]) -> EmbeddingTables:
        if tpu_embedding:
            return TPUFeatureEmbedding(configs, name="embedding")
        return FeatureEmbedding(configs, placement=placement, name="embedding")

    return make
