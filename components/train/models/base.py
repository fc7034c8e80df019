"""`RankingModel`: transformed features → x_0 = [embeddings ‖ numeric] → a model body → P(label) per task.

The model takes its features in either form: one tensor per transformed feature (the per-example parse, the
serving signatures) or a packed batch, the two matrices the block reader hands the training step
(`components.train.packed_batch`), which its first step splits into the same per-feature tensors with one gather
and one split per dtype, inside the step's graph (on an accelerator, on the device). The layout of the matrices is
static, from the manifest, and part of the model's config.

Subclasses implement `body(x0) -> {task: logit[batch, 1]}`; each task's logit is offset by a fixed prior
log-odds log(r / (1 - r)) of its train positive rate r (`model.output_bias: label_rate`), so an untrained model
already predicts the base rate instead of 0.5 and training spends no steps pulling the bias there. The tables are
behind one interface (`components.train.embedding_tables.EmbeddingTables`): the model never asks where they live
(stacked variables, the TPU embedding API, SparseCore) or how they are updated.

The model is backend-neutral (Keras 3 and `keras.ops` only): how a step trains it is each lane's — the TensorFlow
lane binds its `GradientTape` step with sparse table updates (`components.train.tf_step`) to the model it trains with
Keras `fit`; the JAX lane runs its own jitted step over the model's stateless call (`components.train.jax_lane`).
"""

from __future__ import annotations

from typing import Any

import keras

from components.train.embedding_tables import EmbeddingTables, deserialize_embedding, serialize_embedding
from components.train.packed_batch import PackedLayout, is_packed


class RankingModel(keras.Model):
    def __init__(
        self,
        embedding: EmbeddingTables | dict,
        numeric_features: list[str],
        tasks: list[str],
        prior_logits: dict[str, float] | None = None,
        packed_layout: PackedLayout | dict | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.prior_logits = {task: float(v) for task, v in (prior_logits or {}).items()}
        # plain data (no variables): which columns of a packed batch are which feature; None without blocks
        self.packed_layout = (packed_layout if packed_layout is None or isinstance(packed_layout, PackedLayout)
                              else PackedLayout.from_config(packed_layout))
        self.embedding = embedding if isinstance(embedding, EmbeddingTables) else deserialize_embedding(embedding)
        self.numeric_features = list(numeric_features)
        self.tasks = list(tasks)
        self.embedding_optimizer: keras.optimizers.Optimizer | None = None

    @property
    def feature_configs(self) -> dict:
        return self.embedding.feature_configs

    # -- forward ---------------------------------------------------------------------------------
    def features(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """One tensor per transformed feature: `inputs` itself, or a packed batch split by the model's layout."""
        if not is_packed(inputs):
            return inputs
        if self.packed_layout is None:
            raise ValueError("a packed batch was given to a model built without a block layout (its manifest has "
                             "no blocks): read the split with InputOptions(packed=False)")
        return self.packed_layout.split(inputs)

    def call(self, inputs: dict[str, Any], training: bool = False) -> dict[str, Any]:
        inputs = self.features(inputs)  # first: on TPU the split runs inside the replica step, before the lookup
        ids = {name: inputs[name] for name in self.feature_configs}
        parts = [self.embedding.concatenated(ids)]  # one [batch, Σ dims] block, however the tables are kept
        if self.numeric_features:
            numeric = keras.ops.stack([keras.ops.cast(inputs[n], self.compute_dtype) for n in self.numeric_features], -1)
            parts.append(numeric)
        x0 = keras.ops.concatenate([keras.ops.cast(p, self.compute_dtype) for p in parts], axis=-1)
        logits = self.body(x0, training=training)
        return {
            task: keras.ops.sigmoid(keras.ops.cast(logits[task], "float32") + self.prior_logits.get(task, 0.0))
            for task in self.tasks
        }

    def body(self, x0, training: bool = False) -> dict[str, Any]:
        raise NotImplementedError

    # -- training (each lane's step reads these) -------------------------------------------------
    def compile(self, embedding_optimizer: keras.optimizers.Optimizer | None = None, **kwargs):
        """Keras `compile`, plus the optimizer of the embedding tables where a lane updates them apart."""
        super().compile(**kwargs)
        self.embedding_optimizer = embedding_optimizer

    # -- memory ----------------------------------------------------------------------------------
    def table_memory(self) -> list[dict[str, Any]]:
        """Per stored table: rows, dim, parameter bytes and its optimizer's slot bytes, and where it lives."""
        return self.embedding.table_memory(self.embedding_optimizer, self.optimizer)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "embedding": serialize_embedding(self.embedding),
            "numeric_features": self.numeric_features,
            "tasks": self.tasks,
            "prior_logits": self.prior_logits,
            "packed_layout": self.packed_layout.to_config() if self.packed_layout is not None else None,
        }
