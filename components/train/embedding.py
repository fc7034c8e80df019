"""One embedding table per categorical feature, described once as keras-rs `TableConfig`/`FeatureConfig`.

The model calls one interface, `EmbeddingTables`; where the tables live and how they are updated is behind it:
- on CPU/GPU/parameter servers, `FeatureEmbedding`: tables of one dim stacked into one variable (one gather
  and one sparse optimizer update per group, however many features), sparse updates only;
- on TPU, `TPUFeatureEmbedding`: `keras_rs.layers.DistributedEmbedding` (the TPU embedding API, tables sharded
  across cores, updated with the TableConfig optimizer).

Fixed-length list features (pad id 0) are combined with the table's combiner over non-padding ids:
    e = Σ_j m_j E[x_j] / max(1, Σ_j m_j)   (mean)     or   Σ_j m_j E[x_j]   (sum),   m_j = [x_j ≠ 0]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import keras
import keras_rs
import numpy as np
import tensorflow as tf

from components.preprocess.manifest import FeatureInfo, Manifest
from components.train.embedding_optimizers import sum_table_gradients
from components.train.table_kernels import busy_table, xla_allowed, xla_gather
from components.train.table_placement import TablePlacement, host_variables, partitioned_table, table_shards


def categorical_features(manifest: Manifest) -> list[FeatureInfo]:
    return [f for f in manifest.features if f.kind in ("categorical", "categorical_list")]


def numeric_features(manifest: Manifest) -> list[FeatureInfo]:
    return [f for f in manifest.features if f.kind == "numeric"]


def table_initializer(name: str, embedding_dim: int) -> keras.initializers.Initializer:
    """`uniform` is Keras's own `Embedding` default, U(-0.05, 0.05): small vectors, so every feature's
    first-step contribution to x_0 is near zero. `truncated_normal` (stddev 1/sqrt(dim)) starts with unit-norm
    rows, which on real click data trained to a 4-7% worse log-loss than the Keras default."""
    if name == "uniform":
        return keras.initializers.RandomUniform(-0.05, 0.05)
    if name == "truncated_normal":
        return keras.initializers.TruncatedNormal(stddev=embedding_dim**-0.5)
    raise ValueError(f"unknown embedding initializer '{name}'")


def feature_configs(
    manifest: Manifest,
    embedding_dim: int,
    batch_size: int,
    optimizer: Any = "adam",
    initializer: str = "uniform",
    shared_tables: dict[str, list[str]] | None = None,
) -> dict[str, keras_rs.layers.FeatureConfig]:
    """Table and feature configs for every categorical feature, with static per-batch shapes.

    `batch_size` is the per-replica batch: TPU embedding lookups need it fixed. `shared_tables` maps a table
    name to the features looked up in it (rows: the largest of their vocabularies); other features own a table.
    """
    features = categorical_features(manifest)
    table_of = shared_table_names(shared_tables or {}, [f.name for f in features])
    vocabulary: dict[str, int] = {}
    for feature in features:
        if not feature.table_rows:
            raise ValueError(f"categorical feature '{feature.name}' has no table_rows in the manifest")
        name = table_of[feature.name]
        vocabulary[name] = max(vocabulary.get(name, 0), feature.table_rows)
    tables: dict[str, keras_rs.layers.TableConfig] = {}
    configs: dict[str, keras_rs.layers.FeatureConfig] = {}
    for feature in features:
        name = table_of[feature.name]
        if name not in tables:
            tables[name] = keras_rs.layers.TableConfig(
                name=name,
                vocabulary_size=vocabulary[name],
                embedding_dim=embedding_dim,
                initializer=table_initializer(initializer, embedding_dim),
                optimizer=optimizer,
                combiner=feature.combiner or "mean",
            )
        table = tables[name]
        input_shape = (batch_size, feature.length) if feature.kind == "categorical_list" else (batch_size,)
        configs[feature.name] = keras_rs.layers.FeatureConfig(
            name=feature.name, table=table, input_shape=input_shape, output_shape=(batch_size, embedding_dim)
        )
    return configs


def shared_table_names(shared_tables: dict[str, list[str]], categorical: list[str]) -> dict[str, str]:
    """Table name per categorical feature: `<table>_shared_table` when shared, else `<feature>_table`."""
    table_of = {name: f"{name}_table" for name in categorical}
    claimed: dict[str, str] = {}
    for table, members in shared_tables.items():
        for member in members:
            if member not in table_of:
                raise ValueError(
                    f"model.shared_tables['{table}'] names '{member}', which is not a categorical feature "
                    f"of the transform output ({', '.join(categorical)})"
                )
            if member in claimed:
                raise ValueError(f"feature '{member}' is in two shared tables: '{claimed[member]}' and '{table}'")
            claimed[member] = table
            table_of[member] = f"{table}_shared_table"
    return table_of


def check_static_shapes(configs: dict[str, keras_rs.layers.FeatureConfig]) -> None:
    """TPU embedding lookups need every dimension known ahead of time."""
    for name, config in configs.items():
        for shape in (config.input_shape, config.output_shape):
            if any(dim is None or dim <= 0 for dim in shape):
                raise ValueError(f"feature '{name}' has a dynamic shape {shape}; TPU embeddings need static shapes")


@dataclass(frozen=True)
class TableGroup:
    """Tables of one embedding dim (and initializer) stacked into one variable: table t's row r is row
    `offsets[t] + r`. Every feature of the group is looked up with one gather and updated with one sparse apply."""

    name: str
    embedding_dim: int
    tables: tuple[keras_rs.layers.TableConfig, ...]
    offsets: tuple[int, ...]
    rows: int

    @property
    def parameter_bytes(self) -> int:
        return self.rows * self.embedding_dim * 4

    def offset_of(self, table_name: str) -> int:
        return self.offsets[[t.name for t in self.tables].index(table_name)]


def table_groups(configs: dict[str, keras_rs.layers.FeatureConfig]) -> list[TableGroup]:
    """Distinct tables grouped by (embedding dim, initializer), in first-use order."""
    grouped: dict[tuple, list[keras_rs.layers.TableConfig]] = {}
    for config in configs.values():
        table = config.table
        initializer = keras.initializers.get(table.initializer)
        key = (table.embedding_dim, type(initializer).__name__, repr(sorted(initializer.get_config().items())))
        members = grouped.setdefault(key, [])
        if all(t.name != table.name for t in members):
            members.append(table)
    groups: list[TableGroup] = []
    for index, ((dim, _, _), tables) in enumerate(grouped.items()):
        offsets, rows = [], 0
        for table in tables:
            offsets.append(rows)
            rows += table.vocabulary_size
        same_dim_before = sum(1 for g in groups if g.embedding_dim == dim)
        name = f"tables_dim{dim}" + (f"_{same_dim_before}" if same_dim_before else "")
        groups.append(TableGroup(name, dim, tuple(tables), tuple(offsets), rows))
    return groups


class EmbeddingTables(keras.layers.Layer):
    """The embedding interface the ranking model calls: every categorical feature's vector from its table.

    Input: {feature: int ids [batch] or [batch, length] (list features padded with id 0)}; `call` returns
    {feature: [batch, embedding_dim]}, `concatenated` every vector side by side, [batch, Σ dims], in an order of
    the implementation's choosing (the same in training and serving). An implementation also says how its
    tables are updated (`sparse_optimizer_updates`, `summed_table_gradients`), what they cost
    (`table_memory`), and hands its tables over as one [rows, dim] array per table (`table_values`,
    `assign_tables`: the CPU serving copy of a TPU model, warm start). Its config is written once, here.
    """

    kind: ClassVar[str]
    # True: the model's sparse embedding optimizer updates the tables; False: they are updated with the dense
    # weights' optimizer, and on TPU by the embedding API with the TableConfig optimizer.
    sparse_optimizer_updates: ClassVar[bool] = False
    # whether a fresh model's rows can be set from the champion's before training (`components.train.warm_start`)
    warm_startable: ClassVar[bool] = False

    def __init__(self, feature_configs: dict[str, keras_rs.layers.FeatureConfig | dict], **kwargs):
        super().__init__(**kwargs)
        self.feature_configs = {
            name: c if isinstance(c, keras_rs.layers.FeatureConfig) else keras_rs.layers.FeatureConfig.from_config(c)
            for name, c in feature_configs.items()
        }

    def concatenated(self, inputs: dict[str, tf.Tensor]) -> tf.Tensor:
        """Every feature's vector side by side, [batch, Σ dims]."""
        raise NotImplementedError

    def call(self, inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        raise NotImplementedError

    def summed_table_gradients(self, gradients: list, tables: list,
                               embedding_optimizer: keras.optimizers.Optimizer | None) -> list:
        """The tables' gradients (in `tables` order) as the optimizer that updates them takes them."""
        return list(gradients)

    def table_memory(self, embedding_optimizer: keras.optimizers.Optimizer | None,
                     dense_optimizer: keras.optimizers.Optimizer | None) -> list[dict[str, Any]]:
        """Per stored table: rows, dim, parameter and optimizer-slot bytes, devices (empty: not measured)."""
        return []

    def table_values(self) -> dict[str, np.ndarray]:
        """Every table as a [rows, dim] array, by table name."""
        raise NotImplementedError

    def assign_tables(self, values: dict[str, np.ndarray]) -> None:
        """Set the tables named in `values` to those [rows, dim] arrays."""
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        # the tables follow the global dtype policy where they are rebuilt (a serving copy is rebuilt in float32)
        config.pop("dtype", None)
        config["feature_configs"] = {name: c.get_config() for name, c in self.feature_configs.items()}
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> EmbeddingTables:
        return cls(**config)


def serialize_embedding(embedding: EmbeddingTables) -> dict[str, Any]:
    return {"kind": embedding.kind, "config": embedding.get_config()}


def deserialize_embedding(serialized: dict[str, Any]) -> EmbeddingTables:
    """The embedding `serialize_embedding` wrote, of the implementation its `kind` names."""
    implementations = {cls.kind: cls for cls in (FeatureEmbedding, TPUFeatureEmbedding)}
    if serialized.get("kind") not in implementations:
        raise ValueError(f"unknown embedding kind {serialized.get('kind')!r}; known: {sorted(implementations)}")
    return implementations[serialized["kind"]].from_config(serialized["config"])


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
