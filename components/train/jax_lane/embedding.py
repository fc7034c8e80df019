"""The JAX lane's embedding tables (the interface and table descriptions: `components.train.embedding_tables`).

`SparseRowTables` (CPU, GPU, TPUs without SparseCore): the tables of one dim stacked into one array per group, as the
TensorFlow lane stacks them (table t's row r is row `offsets[t] + r`; the same group and table names). Under JAX the
gradient of a gather from a table is a dense array of the table's shape, so a plain optimizer would update every row
of every table each step. The trainer therefore never differentiates with respect to a table: it gathers the rows a
batch looks up itself (`lookup_ids`, then a `take` per group), hands them to the model inside `rows_given`, and takes
the gradient with respect to those gathered rows; `components.train.jax_lane.sparse_updates` then applies the summed
row gradients to the touched rows only. The tables are non-trainable variables of the model (the dense optimizer
never sees them); outside `rows_given` (evaluation, prediction) the model gathers from them itself.

`SparseCoreTables` (TPU v5p/v6e/TPU7x with `jax-tpu-embedding`): keras-rs `DistributedEmbedding` with placement
`sparsecore`, whose inputs are formatted on the host (`host_preprocess`, in the reader's thread) and whose tables
keras-rs updates in the backward pass (their variables are written with the "gradient", Keras's
`overwrite_with_gradient`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import jax.numpy as jnp
import keras
import keras_rs
import numpy as np

from components.train.embedding_tables import EmbeddingTables, TableGroup, table_groups


class SparseRowTables(EmbeddingTables):
    """Stacked tables whose rows the JAX trainer gathers and updates itself (see the module docstring)."""

    kind = "sparse_rows"
    warm_startable = True
    sparse_rows = True  # the trainer gathers the rows and updates them (`rows_given`, `sparse_updates`)

    def __init__(self, feature_configs: dict[str, keras_rs.layers.FeatureConfig | dict], **kwargs):
        kwargs.setdefault("autocast", False)  # a mixed policy must not cast whole tables each step
        super().__init__(feature_configs, **kwargs)
        self.groups: list[TableGroup] = table_groups(self.feature_configs)
        self.group_features = [
            [n for n, c in self.feature_configs.items() if c.table.name in {t.name for t in group.tables}]
            for group in self.groups
        ]
        self.group_tables: list[keras.Variable] = [
            self.add_weight(shape=(group.rows, group.embedding_dim), name=group.name, trainable=False,
                            initializer=keras.initializers.get(group.tables[0].initializer))
            for group in self.groups
        ]
        self._given: list | None = None
        self.built = True

    def build(self, input_shape=None):
        self.built = True

    # -- the ids a batch looks up, and its rows ---------------------------------------------------------------
    def _scalars_and_lists(self, group_index: int) -> tuple[list[str], list[str]]:
        names = self.group_features[group_index]
        return ([n for n in names if len(self.feature_configs[n].input_shape) != 2],
                [n for n in names if len(self.feature_configs[n].input_shape) == 2])

    def lookup_ids(self, features: dict[str, Any]) -> list[Any]:
        """Per group, the rows of its stacked table the batch looks up, flat: every scalar feature's id batch-major
        ([batch, features] flattened, each shifted by its table's offset), then each list feature's ids."""
        ids = []
        for group_index, group in enumerate(self.groups):
            scalars, lists = self._scalars_and_lists(group_index)
            parts = []
            if scalars:
                offsets = jnp.asarray([group.offset_of(self.feature_configs[n].table.name) for n in scalars], jnp.int32)
                stacked = jnp.stack([jnp.reshape(features[n], (-1,)).astype(jnp.int32) for n in scalars], axis=1)
                parts.append(jnp.reshape(stacked + offsets, (-1,)))
            for name in lists:
                offset = group.offset_of(self.feature_configs[name].table.name)
                parts.append(jnp.reshape(features[name], (-1,)).astype(jnp.int32) + offset)
            ids.append(parts[0] if len(parts) == 1 else jnp.concatenate(parts))
        return ids

    def gather(self, tables: list[Any], ids: list[Any]) -> list[Any]:
        """Each group's rows at `ids` from the table arrays `tables` (in group order)."""
        return [jnp.take(table, group_ids, axis=0) for table, group_ids in zip(tables, ids)]

    @contextlib.contextmanager
    def rows_given(self, rows: list[Any]) -> Iterator[None]:
        """Inside, the model uses `rows` (per group, the rows `lookup_ids` named, as gathered by the trainer) instead
        of gathering from its tables: the trainer's gradient is then with respect to those rows alone."""
        self._given = rows
        try:
            yield
        finally:
            self._given = None

    # -- the model's view ---------------------------------------------------------------------------------------
    def _group_vectors(self, inputs: dict[str, Any]) -> list[tuple[list[str], Any, dict[str, Any]]]:
        """Per group (scalar features, their vectors [batch, features × dim] or None, {list feature: [batch, dim]})."""
        ids = self.lookup_ids(inputs)
        rows = self._given if self._given is not None else self.gather(
            [table.value for table in self.group_tables], ids)
        result = []
        for group_index, group in enumerate(self.groups):
            scalars, lists = self._scalars_and_lists(group_index)
            gathered, start, block = rows[group_index], 0, None
            batch = None
            if scalars:
                batch = inputs[scalars[0]].shape[0]
                count = batch * len(scalars)
                block = jnp.reshape(gathered[:count], (batch, len(scalars) * group.embedding_dim))
                start = count
            combined = {}
            for name in lists:
                values = inputs[name]
                length = values.shape[1]
                piece = jnp.reshape(gathered[start:start + values.shape[0] * length],
                                    (values.shape[0], length, group.embedding_dim))
                start += values.shape[0] * length
                combined[name] = self._combine(name, values, piece)
            result.append((scalars, block, combined))
        return result

    def _combine(self, name: str, ids: Any, vectors: Any) -> Any:
        """A padded list's vectors [batch, length, dim] combined over its non-padding ids."""
        mask = (ids != 0).astype(vectors.dtype)[..., None]
        summed = jnp.sum(vectors * mask, axis=1)
        if self.feature_configs[name].table.combiner == "mean":
            summed = summed / jnp.maximum(jnp.sum(mask, axis=1), 1.0)
        return summed

    def concatenated(self, inputs: dict[str, Any]) -> Any:
        """Every feature's vector side by side, [batch, Σ dims]: per group its scalar features, then its lists (the
        TensorFlow lane's `FeatureEmbedding` order, so a model's dense weights mean the same in both lanes)."""
        parts = []
        for scalars, block, combined in self._group_vectors(inputs):
            if scalars:
                parts.append(block)
            parts.extend(combined.values())
        return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=-1)

    def call(self, inputs: dict[str, Any]) -> dict[str, Any]:
        outputs: dict[str, Any] = {}
        for group, (scalars, block, combined) in zip(self.groups, self._group_vectors(inputs)):
            if scalars:
                per_feature = jnp.reshape(block, (block.shape[0], len(scalars), group.embedding_dim))
                outputs.update({name: per_feature[:, i] for i, name in enumerate(scalars)})
            outputs.update(combined)
        return {name: outputs[name] for name in self.feature_configs}

    # -- tables as arrays, memory ---------------------------------------------------------------------------------
    def table_values(self) -> dict[str, np.ndarray]:
        values = {}
        for group, variable in zip(self.groups, self.group_tables):
            stacked = np.asarray(variable.value)
            for table, offset in zip(group.tables, group.offsets):
                values[table.name] = stacked[offset:offset + table.vocabulary_size]
        return values

    def assign_tables(self, values: dict[str, np.ndarray]) -> None:
        for group, variable in zip(self.groups, self.group_tables):
            if not any(table.name in values for table in group.tables):
                continue
            stacked = np.array(variable.value)
            for table, offset in zip(group.tables, group.offsets):
                if table.name in values:
                    stacked[offset:offset + table.vocabulary_size] = values[table.name]
            variable.assign(stacked)

    def table_memory(self, embedding_optimizer=None, dense_optimizer=None) -> list[dict[str, Any]]:
        """Per stacked table: rows, dim, parameter bytes and where it lives (the optimizer's slots are the trainer's:
        `components.train.jax_lane.sparse_updates.slot_bytes`, filled in by the trainer)."""
        return [
            {"name": group.name, "tables": [t.name for t in group.tables], "rows": group.rows,
             "embedding_dim": group.embedding_dim, "parameter_bytes": group.parameter_bytes, "optimizer_slot_bytes": 0,
             "shards": 1, "devices": sorted({str(d) for d in getattr(variable.value, "devices", lambda: set())()})}
            for group, variable in zip(self.groups, self.group_tables)
        ]
