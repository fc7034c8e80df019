"""The JAX lane's tables on SparseCore (TPU v5p, v6e, TPU7x): keras-rs `DistributedEmbedding`, placement `auto`.

With JAX on Linux x86_64 and `jax-tpu-embedding` installed, keras-rs shards every table over the SparseCores, formats
each batch's ids on the host (`host_preprocess`, run on the block reader's thread) and updates the tables itself in
the backward pass with the TableConfig optimizer (its table variables are written with the "gradient": Keras's
`overwrite_with_gradient`, which the dense optimizer's stateless apply honours). Padded list features are handed over
with weights 1 for real ids and 0 for padding, so the combiner sees only real ids.

keras-rs decides the placement (`auto`: SparseCore where the TPU has it, else `default_device`); `placement_seen`
reports what it chose. Elsewhere keras-rs is its plain Keras fallback (ordinary tables, dense gradients): the JAX lane
uses `SparseRowTables` there instead, so this class trains only where SparseCore is present
(`components.train.jax_lane.runtime.JaxRuntime.has_sparsecore`); it builds on any backend for tests of its wiring.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import keras
import keras_rs
import numpy as np

from components.contracts.run_summary import TablePlacementSeen
from components.train.embedding_tables import EmbeddingTables


class SparseCoreTables(EmbeddingTables):
    kind = "sparsecore"
    sparse_rows = False  # the trainer differentiates the tables like any weight; keras-rs makes it sparse

    def __init__(self, feature_configs: dict[str, keras_rs.layers.FeatureConfig | dict], **kwargs):
        super().__init__(feature_configs, **kwargs)
        # a plain dict: keras-rs matches the inputs' structure against its configs' node type (a Keras layer's
        # attribute is a TrackedDict, which a dict of inputs never matches)
        self.distributed = keras_rs.layers.DistributedEmbedding(dict(self.feature_configs))
        self._given: Any = None

    def host_preprocess(self, features: dict[str, np.ndarray]) -> Any:
        """One batch's ids (numpy, on the host) in the layout the embedding hardware reads (keras-rs `preprocess`)."""
        ids = {name: np.asarray(features[name], np.int32) for name in self.feature_configs}
        weights = {name: (values != 0).astype(np.float32) if values.ndim == 2 else np.ones(values.shape, np.float32)
                   for name, values in ids.items()}
        return self.distributed.preprocess(ids, weights, training=True)

    @contextlib.contextmanager
    def inputs_given(self, preprocessed: Any) -> Iterator[None]:
        """Inside, the model's lookups use `preprocessed` (`host_preprocess` of this batch) instead of its ids."""
        self._given = preprocessed
        try:
            yield
        finally:
            self._given = None

    def call(self, inputs: dict[str, Any]) -> dict[str, Any]:
        if self._given is not None:
            return self.distributed(self._given)
        ids = {name: inputs[name] for name in self.feature_configs}
        weights = {name: keras.ops.cast(keras.ops.not_equal(values, 0), "float32")
                   if len(self.feature_configs[name].input_shape) == 2
                   else keras.ops.ones(keras.ops.shape(values), "float32") for name, values in ids.items()}
        return self.distributed(ids, weights)

    def concatenated(self, inputs: dict[str, Any]) -> Any:
        """The features' vectors in `feature_configs` order."""
        embedded = self(inputs)
        return keras.ops.concatenate([embedded[name] for name in self.feature_configs], axis=-1)

    def placements(self) -> list[str]:
        """The placements keras-rs resolved for this layer's tables (`sparsecore`, `default_device`)."""
        return sorted(getattr(self.distributed, "_placement_to_path_to_feature_config", {}))

    def placement_seen(self) -> TablePlacementSeen:
        chosen = self.placements()
        on_hardware = chosen == ["sparsecore"]
        return TablePlacementSeen(
            implementation="SparseCore (keras-rs DistributedEmbedding)" if on_hardware
            else "keras-rs DistributedEmbedding, ordinary variables", embedding_hardware=on_hardware,
            detail=f"keras-rs placement: {', '.join(chosen) or 'none'}")

    def table_values(self) -> dict[str, np.ndarray]:
        return {name: np.asarray(table) for name, table in self.distributed.get_embedding_tables().items()}

    def assign_tables(self, values: dict[str, np.ndarray]) -> None:
        self.distributed.set_embedding_tables({name: np.asarray(v, np.float32) for name, v in values.items()})
