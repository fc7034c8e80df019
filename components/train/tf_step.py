"""The TensorFlow lane's training step: one `GradientTape` step, the embedding tables updated by the model's sparse
embedding optimizer (only looked-up rows change; `components.train.embedding_optimizers`), every other weight by the
dense optimizer.

The ranking model itself is backend-neutral (`components.train.models.base`); `bind_train_step` gives a model this
lane's step, which Keras `fit` calls, and the parameter-server loop calls the same pieces (`variable_groups`,
`table_gradients_summed`, `apply_split_gradients`) inside its own replica function.
"""

from __future__ import annotations

import types

import keras
import tensorflow as tf

from components.train.embedding_optimizers import gradient_norm
from components.train.models.base import RankingModel
from components.train.table_placement import table_shards


def variable_groups(model: RankingModel) -> tuple[list, list]:
    """(embedding-table variables, each table's shards where the strategy split it; every other trainable
    variable)."""
    table_ids = {id(v) for v in model.embedding.trainable_variables}
    tables = [shard for v in model.trainable_variables if id(v) in table_ids for shard in table_shards(v)]
    dense = [v for v in model.trainable_variables if id(v) not in table_ids]
    return tables, dense


def sparse_table_optimizer(model: RankingModel) -> keras.optimizers.Optimizer | None:
    """The sparse embedding optimizer when it updates the tables apart from the dense weights, else None."""
    return model.embedding_optimizer if model.embedding.sparse_optimizer_updates else None


def build_optimizers(model: RankingModel) -> None:
    """Create optimizer slots now (under the strategy scope), each for its own variable group."""
    tables, dense = variable_groups(model)
    sparse = sparse_table_optimizer(model)
    if sparse is None:
        model.optimizer.build(tables + dense)
    else:
        model.optimizer.build(dense)
        sparse.build(tables)


def table_gradients_summed(model: RankingModel, gradients: list, tables: list) -> list:
    """Gradients ordered as `tables + dense`, the tables' as the optimizer updating them takes them (for the norm and
    the update alike)."""
    summed = model.embedding.summed_table_gradients(gradients[: len(tables)], tables, model.embedding_optimizer)
    return summed + list(gradients[len(tables):])


def apply_split_gradients(model: RankingModel, gradients: list, tables: list, dense: list) -> None:
    """Apply gradients ordered as `tables + dense`: embedding tables with the embedding optimizer when it updates
    them, everything else with the dense optimizer."""
    sparse = sparse_table_optimizer(model)
    if sparse is None:
        model.optimizer.apply_gradients(zip(gradients, tables + dense))
    else:
        with sparse.rows_summed():
            sparse.apply_gradients(zip(gradients[: len(tables)], tables))
        model.optimizer.apply_gradients(zip(gradients[len(tables):], dense))


def train_step(model: RankingModel, data):
    """One step of Keras `fit` (bound to the model by `bind_train_step`)."""
    x, y = data
    with tf.GradientTape() as tape:
        y_pred = model(x, training=True)
        loss = model._compute_loss(x=x, y=y, y_pred=y_pred, training=True)
        model._loss_tracker.update_state(
            unscaled_for_distribution(loss), sample_weight=tf.shape(y_pred[model.tasks[0]])[0]
        )
    tables, dense = variable_groups(model)
    gradients = table_gradients_summed(model, tape.gradient(loss, tables + dense), tables)
    apply_split_gradients(model, gradients, tables, dense)
    logs = model.compute_metrics(x, y, y_pred)
    # The clipped log-loss can stay finite while gradients are NaN: report their norm too.
    logs["gradient_norm"] = gradient_norm(gradients, rows_summed=True)  # from the summed rows
    return logs


def bind_train_step(model: RankingModel) -> RankingModel:
    """`model` with this lane's step as the `train_step` Keras `fit` calls."""
    model.train_step = types.MethodType(train_step, model)
    return model


def unscaled_for_distribution(loss: tf.Tensor) -> tf.Tensor:
    """The step's loss as the mean over the global batch: under a strategy with several replicas in sync Keras
    scales each replica's loss by 1 / replicas (so that summed gradients average), which the loss tracker undoes."""
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    return loss * tf.cast(replicas, loss.dtype) if replicas > 1 else loss
