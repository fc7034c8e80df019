"""`RankingModel`: transformed features → x_0 = [embeddings ‖ numeric] → a model body → P(label) per task.

Subclasses implement `body(x0) -> {task: logit[batch, 1]}`; each task's logit is offset by a fixed prior
log-odds log(r / (1 - r)) of its train positive rate r (`model.output_bias: label_rate`), so an untrained model
already predicts the base rate instead of 0.5 and training spends no steps pulling the bias there. Training applies two optimizers: a sparse one
for the embedding tables (only looked-up rows change; see `embedding_optimizers`) and one for every dense
weight. On TPU the embedding API updates the tables with the TableConfig optimizer.
"""

from __future__ import annotations

from typing import Any

import keras
import keras_rs
import tensorflow as tf
from keras.src.losses import loss as loss_module

from components.train.embedding import FeatureEmbedding, TablePlacement, TPUFeatureEmbedding
from components.train.embedding_optimizers import gradient_norm, sum_table_gradients


class RankingModel(keras.Model):
    def __init__(
        self,
        feature_configs: dict[str, keras_rs.layers.FeatureConfig | dict],
        numeric_features: list[str],
        tasks: list[str],
        tpu_embedding: bool = False,
        placement: TablePlacement | dict | None = None,
        prior_logits: dict[str, float] | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.prior_logits = {task: float(v) for task, v in (prior_logits or {}).items()}
        self.feature_configs = {
            name: c if isinstance(c, keras_rs.layers.FeatureConfig) else keras_rs.layers.FeatureConfig.from_config(c)
            for name, c in feature_configs.items()
        }
        self.numeric_features = list(numeric_features)
        self.tasks = list(tasks)
        self.tpu_embedding = tpu_embedding
        if tpu_embedding:
            self.embedding = TPUFeatureEmbedding(self.feature_configs, name="embedding")
        else:
            self.embedding = FeatureEmbedding(self.feature_configs, placement=placement, name="embedding")
        self.embedding_optimizer: keras.optimizers.Optimizer | None = None

    # -- forward ---------------------------------------------------------------------------------
    def call(self, inputs: dict[str, tf.Tensor], training: bool = False) -> dict[str, tf.Tensor]:
        ids = {name: inputs[name] for name in self.feature_configs}
        if self.tpu_embedding:
            embedded = self.embedding(ids)
            parts = [embedded[name] for name in self.feature_configs]
        else:  # one [batch, Σ dims] block: no per-feature slicing and re-concatenation
            parts = [self.embedding.concatenated(ids)]
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
        """(embedding-table variables, every other trainable variable)."""
        table_ids = {id(v) for v in self.embedding.trainable_variables}
        tables = [v for v in self.trainable_variables if id(v) in table_ids]
        dense = [v for v in self.trainable_variables if id(v) not in table_ids]
        return tables, dense

    def build_optimizers(self) -> None:
        """Create optimizer slots now (under the strategy scope), each for its own variable group."""
        tables, dense = self.variable_groups()
        if self.embedding_optimizer is None or self.tpu_embedding:
            self.optimizer.build(tables + dense)
        else:
            self.optimizer.build(dense)
            self.embedding_optimizer.build(tables)

    def table_gradients_summed(self, gradients: list, tables: list) -> list:
        """Gradients ordered as `tables + dense`, each table's duplicate ids summed once (for the norm and the
        sparse optimizer alike)."""
        if self.tpu_embedding:
            return gradients
        optimizer = self.embedding_optimizer
        dense_when_busy = optimizer is not None and optimizer.dense_when_busy()
        xla = optimizer is not None and optimizer.fused_dense_updates
        return sum_table_gradients(gradients[: len(tables)], tables, dense_when_busy, xla) + list(gradients[len(tables) :])

    def apply_split_gradients(self, gradients: list, tables: list, dense: list) -> None:
        """Apply gradients ordered as `tables + dense`: embedding tables with the embedding optimizer when
        there is one, everything else with the dense optimizer."""
        if self.embedding_optimizer is None or self.tpu_embedding:
            self.optimizer.apply_gradients(zip(gradients, tables + dense))
        else:
            with self.embedding_optimizer.rows_summed():
                self.embedding_optimizer.apply_gradients(zip(gradients[: len(tables)], tables))
            self.optimizer.apply_gradients(zip(gradients[len(tables) :], dense))

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self._compute_loss(x=x, y=y, y_pred=y_pred, training=True)
            self._loss_tracker.update_state(
                loss_module.unscale_loss_for_distribution(loss), sample_weight=tf.shape(y_pred[self.tasks[0]])[0]
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
        """Per stacked table: rows, dim, parameter bytes and its optimizer's slot bytes, and where it lives."""
        if self.tpu_embedding:
            return []
        result = []
        for group, parts in self.embedding.table_variables():
            slots = 0
            for part in parts:
                if self.embedding_optimizer is not None and hasattr(self.embedding_optimizer, "slot_bytes"):
                    slots += self.embedding_optimizer.slot_bytes(part)
                elif self.optimizer is not None and self.optimizer.built:  # Keras Adam: m and v, dense
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
                    "devices": sorted({str(p.value.device) for p in parts}),
                }
            )
        return result

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "feature_configs": {name: c.get_config() for name, c in self.feature_configs.items()},
            "numeric_features": self.numeric_features,
            "tasks": self.tasks,
            "tpu_embedding": self.tpu_embedding,
            "prior_logits": self.prior_logits,
            "placement": None if self.tpu_embedding else self.embedding.placement.get_config(),
        }
