"""`RankingModel`: transformed features → x_0 = [embeddings ‖ numeric] → a model body → P(label) per task.

The model takes its features in either form: one tensor per transformed feature (the per-example parse, the
serving signatures) or a packed batch, the two matrices the block reader hands the training step
(`components.train.packed_batch`), which its first step splits into the same per-feature tensors with one gather
and one split per dtype, inside the step's graph (on an accelerator, on the device). The layout of the matrices is
static, from the manifest, and part of the model's config.

Subclasses implement `body(x0) -> {task: logit[batch, 1]}`; each task's logit is offset by a fixed prior
log-odds log(r / (1 - r)) of its train positive rate r (`model.output_bias: label_rate`), so an untrained model
already predicts the base rate instead of 0.5 and training spends no steps pulling the bias there. Training applies two optimizers: a sparse one
for the embedding tables (only looked-up rows change; see `embedding_optimizers`) and one for every dense
weight. The tables are behind one interface (`components.train.embedding.EmbeddingTables`): the model never asks
where they live (stacked variables on CPU/GPU/parameter servers, the TPU embedding API) or how they are updated.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from components.train.embedding import EmbeddingTables, deserialize_embedding, serialize_embedding
from components.train.embedding_optimizers import gradient_norm
from components.train.packed_batch import PackedLayout, is_packed
from components.train.table_placement import table_shards


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
    def features(self, inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        """One tensor per transformed feature: `inputs` itself, or a packed batch split by the model's layout."""
        if not is_packed(inputs):
            return inputs
        if self.packed_layout is None:
            raise ValueError("a packed batch was given to a model built without a block layout (its manifest has "
                             "no blocks): read the split with InputOptions(packed=False)")
        return self.packed_layout.split(inputs)

    def call(self, inputs: dict[str, tf.Tensor], training: bool = False) -> dict[str, tf.Tensor]:
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

    def body(self, x0, training: bool = False) -> dict[str, tf.Tensor]:
        raise NotImplementedError

    # -- training --------------------------------------------------------------------------------
    def compile(self, embedding_optimizer: keras.optimizers.Optimizer | None = None, **kwargs):
        super().compile(**kwargs)
        self.embedding_optimizer = embedding_optimizer

    def variable_groups(self) -> tuple[list, list]:
        """(embedding-table variables, each table's shards where the strategy split it; every other trainable
        variable)."""
        table_ids = {id(v) for v in self.embedding.trainable_variables}
        tables = [shard for v in self.trainable_variables if id(v) in table_ids for shard in table_shards(v)]
        dense = [v for v in self.trainable_variables if id(v) not in table_ids]
        return tables, dense

    def _sparse_table_optimizer(self) -> keras.optimizers.Optimizer | None:
        """The sparse embedding optimizer when it updates the tables apart from the dense weights, else None."""
        return self.embedding_optimizer if self.embedding.sparse_optimizer_updates else None

    def build_optimizers(self) -> None:
        """Create optimizer slots now (under the strategy scope), each for its own variable group."""
        tables, dense = self.variable_groups()
        sparse = self._sparse_table_optimizer()
        if sparse is None:
            self.optimizer.build(tables + dense)
        else:
            self.optimizer.build(dense)
            sparse.build(tables)

    def table_gradients_summed(self, gradients: list, tables: list) -> list:
        """Gradients ordered as `tables + dense`, the tables' as the optimizer updating them takes them (for the
        norm and the update alike)."""
        summed = self.embedding.summed_table_gradients(gradients[: len(tables)], tables, self.embedding_optimizer)
        return summed + list(gradients[len(tables) :])

    def apply_split_gradients(self, gradients: list, tables: list, dense: list) -> None:
        """Apply gradients ordered as `tables + dense`: embedding tables with the embedding optimizer when it
        updates them, everything else with the dense optimizer."""
        sparse = self._sparse_table_optimizer()
        if sparse is None:
            self.optimizer.apply_gradients(zip(gradients, tables + dense))
        else:
            with sparse.rows_summed():
                sparse.apply_gradients(zip(gradients[: len(tables)], tables))
            self.optimizer.apply_gradients(zip(gradients[len(tables) :], dense))

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self._compute_loss(x=x, y=y, y_pred=y_pred, training=True)
            self._loss_tracker.update_state(
                unscaled_for_distribution(loss), sample_weight=tf.shape(y_pred[self.tasks[0]])[0]
            )
        tables, dense = self.variable_groups()
        gradients = self.table_gradients_summed(tape.gradient(loss, tables + dense), tables)
        self.apply_split_gradients(gradients, tables, dense)
        logs = self.compute_metrics(x, y, y_pred)
        # The clipped log-loss can stay finite while gradients are NaN: report their norm too.
        logs["gradient_norm"] = gradient_norm(gradients, rows_summed=True)  # from the summed rows
        return logs

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


def unscaled_for_distribution(loss: tf.Tensor) -> tf.Tensor:
    """The step's loss as the mean over the global batch: under a strategy with several replicas in sync Keras
    scales each replica's loss by 1 / replicas (so that summed gradients average), which the loss tracker undoes."""
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    return loss * tf.cast(replicas, loss.dtype) if replicas > 1 else loss
