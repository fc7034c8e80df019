"""The embedding interface the ranking model calls, `EmbeddingTables`, and the table descriptions every implementation
shares: one keras-rs `TableConfig`/`FeatureConfig` per categorical feature, and tables of one dim stacked into groups.

The model never asks where its tables live or how they are updated; each training lane brings its implementations:
- the TensorFlow lane (`components.train.embedding`): stacked variables with sparse optimizer updates on
  CPU/GPU/parameter servers, `keras_rs.layers.DistributedEmbedding` (the TPU embedding API) on TPU;
- the JAX lane (`components.train.jax_lane.embedding`): stacked tables whose rows the trainer updates sparsely,
  keras-rs `DistributedEmbedding` on SparseCore (TPU v5p/v6e).

This module imports Keras and keras-rs only (no TensorFlow, no JAX): it loads under either backend.

Fixed-length list features (pad id 0) are combined with the table's combiner over non-padding ids:
    e = Σ_j m_j E[x_j] / max(1, Σ_j m_j)   (mean)     or   Σ_j m_j E[x_j]   (sum),   m_j = [x_j ≠ 0]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import keras
import keras_rs
import numpy as np

from components.contracts.manifest import FeatureInfo, Manifest

# kind → implementation, filled as each implementation's class is defined (by the lane that imports it)
EMBEDDING_KINDS: dict[str, type[EmbeddingTables]] = {}


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
    for (dim, _, _), tables in grouped.items():
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

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:
            EMBEDDING_KINDS[cls.kind] = cls

    def __init__(self, feature_configs: dict[str, keras_rs.layers.FeatureConfig | dict], **kwargs):
        super().__init__(**kwargs)
        self.feature_configs = {
            name: c if isinstance(c, keras_rs.layers.FeatureConfig) else keras_rs.layers.FeatureConfig.from_config(c)
            for name, c in feature_configs.items()
        }

    def concatenated(self, inputs: dict[str, Any]) -> Any:
        """Every feature's vector side by side, [batch, Σ dims]."""
        raise NotImplementedError

    def call(self, inputs: dict[str, Any]) -> dict[str, Any]:
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
    """The embedding `serialize_embedding` wrote, of the implementation its `kind` names (among the
    implementations this process has imported: a training lane imports its own)."""
    kind = serialized.get("kind")
    if kind not in EMBEDDING_KINDS:
        raise ValueError(f"unknown embedding kind {kind!r}; known in this process: {sorted(EMBEDDING_KINDS)}")
    return EMBEDDING_KINDS[kind].from_config(serialized["config"])
